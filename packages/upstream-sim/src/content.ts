import { createHash } from 'node:crypto'

// Deterministic content: the same request always gets the same reply, so tests can assert on it.

const WORDS = (
  'the a intern simulator replies with words chosen by a seeded generator so every run of the ' +
  'same request reads alike and tests can depend on it while latency tokens and faults stay under ' +
  'the control of the settings'
).split(' ')

/** A small, fast PRNG (mulberry32) seeded from the request text. */
export function seeded(text: string): () => number {
  let a = createHash('sha256').update(text).digest().readUInt32LE(0)
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** `count` tokens of reply text, each a word with its leading space (the first without). */
export function replyTokens(seedText: string, count: number): string[] {
  const next = seeded(seedText)
  return Array.from({ length: count }, (_, i) => (i === 0 ? '' : ' ') + WORDS[Math.floor(next() * WORDS.length)])
}

/** A token's log probability as OpenAI's protocols report it (Chat Completions and Responses alike). */
export interface TokenLogprob {
  token: string
  logprob: number
  bytes: number[]
  top_logprobs: { token: string; logprob: number; bytes: number[] }[]
}

const bytesOf = (token: string) => [...Buffer.from(token, 'utf8')]

/**
 * Log probabilities for the reply's tokens, as an endpoint that reports them would give them: the
 * chosen token most likely, then `top - 1` other words less likely (the chosen one is the first
 * of `top`). Seeded like the reply, so the same request reads the same figures.
 */
export function tokenLogprobs(tokens: string[], top: number, seedText: string): TokenLogprob[] {
  const next = seeded(`logprobs:${seedText}`)
  return tokens.map((token) => {
    const logprob = -Number((next() * 0.5).toFixed(4))
    const others = WORDS.filter((w) => w !== token.trim()).slice(0, Math.max(0, top - 1))
    const alternatives = others.map((w, i) => ({
      token: w,
      logprob: Number((logprob - 1 - i - next()).toFixed(4)),
      bytes: bytesOf(w),
    }))
    return {
      token,
      logprob,
      bytes: bytesOf(token),
      top_logprobs: top > 0 ? [{ token, logprob, bytes: bytesOf(token) }, ...alternatives] : [],
    }
  })
}

/** A rough token count, close enough for usage figures: words and punctuation. */
export function countTokens(text: string): number {
  return (text.match(/[\p{L}\p{N}]+|[^\s\p{L}\p{N}]/gu) ?? []).length
}

type Schema = {
  type?: string | string[]
  properties?: Record<string, Schema>
  required?: string[]
  items?: Schema
  enum?: unknown[]
  const?: unknown
  minimum?: number
  minLength?: number
  format?: string
  anyOf?: Schema[]
  oneOf?: Schema[]
  default?: unknown
}

/** A JSON schema is an object (a tool's parameters are whatever the request said). */
const isSchema = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v)

/**
 * A value valid for a (reasonable) JSON schema: what a model's tool call would plausibly pass.
 * A string of format uri gets `url`: by default the simulator's own loopback, which reaches no one.
 */
export function sampleFor(schema: unknown, depth = 0, url = 'http://127.0.0.1/'): unknown {
  if (!isSchema(schema) || depth > 6) return {}
  if (schema.const !== undefined) return schema.const
  if (schema.enum?.length) return schema.enum[0]
  if (schema.default !== undefined) return schema.default
  const alt = schema.anyOf ?? schema.oneOf
  if (alt?.length) return sampleFor(alt[0], depth + 1, url)
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type
  switch (type) {
    case 'string':
      if (schema.format === 'uri' || schema.format === 'url') return url
      return 'sample'.padEnd(schema.minLength ?? 0, 'x')
    case 'integer':
    case 'number':
      return Math.max(1, schema.minimum ?? 1)
    case 'boolean':
      return true
    case 'null':
      return null
    case 'array':
      return [sampleFor(schema.items, depth + 1, url)]
    default: {
      const out: Record<string, unknown> = {}
      for (const [key, prop] of Object.entries(schema.properties ?? {})) out[key] = sampleFor(prop, depth + 1, url)
      return out
    }
  }
}
