// What a provider says, whatever its protocol, in the order it says it. Every adapter translates
// its replies (streamed or whole) into these, and one assembler turns them into Open Responses
// output and events, so the two modes and the three protocols cannot drift apart.

export interface Usage {
  /** All input tokens, cached ones included. */
  input: number
  cached: number
  cacheWrite: number
  /** All output tokens, reasoning ones included. */
  output: number
  reasoning: number
  /** Web searches the provider ran (its tool's calls, counted as they finish): priced per search. */
  searches: number
}

export const emptyUsage = (): Usage => ({ input: 0, cached: 0, cacheWrite: 0, output: 0, reasoning: 0, searches: 0 })

import type { Annotation, LogProb, ProviderItem, TopLogProb } from './wire.js'

export type Finish = 'stop' | 'length' | 'tool_calls' | 'content_filter'

export type Delta =
  /** A piece of text, with its tokens' log probabilities where the endpoint gives them. */
  | { type: 'text'; delta: string; logprobs?: LogProb[] }
  | { type: 'refusal'; delta: string }
  /**
   * A piece of reasoning. `item` names the provider's reasoning item or block (a different one
   * starts a new reasoning item, even with no text: an empty one is an item too); `part`, the
   * summary part within it. Absent, the piece continues what is open.
   */
  | { type: 'reasoning'; delta: string; item?: string; part?: number }
  /** The provider's opaque state for the open reasoning item (a thinking signature, encrypted content), appended. */
  | { type: 'reasoning_state'; state: string }
  /** Anthropic's redacted thinking: a reasoning item of its own, whose text only the provider can read. */
  | { type: 'reasoning_redacted'; data: string; item?: string }
  /**
   * An annotation on the text: given with its own indices (Responses), or `covers` the last so many
   * characters of the text so far (Anthropic's citations, which name no indices).
   */
  | { type: 'annotation'; annotation: Annotation; covers?: number }
  /**
   * An item the provider made that is none of Roster's kinds (see ProviderItem): `key` tells items
   * apart within the turn; a later delta with the same key replaces it, and `done` closes it.
   */
  | { type: 'provider_item'; key: string; item: ProviderItem; done: boolean }
  /** A function call's start (id and name) or a piece of its arguments; `index` tells calls apart. */
  | { type: 'tool_call'; index: number; id?: string; name?: string; arguments: string }
  /** Usage as reported so far; later reports replace the fields they carry. */
  | { type: 'usage'; usage: Partial<Usage> }
  | { type: 'finish'; reason: Finish }

/** A function call's start, from the provider's call object as it came (its id under `idField`). */
export function callStart(
  index: number,
  call: Record<string, unknown>,
  idField: 'id' | 'call_id',
  args: string,
): Delta {
  const id = call[idField]
  return {
    type: 'tool_call',
    index,
    id: typeof id === 'string' ? id : undefined,
    name: typeof call.name === 'string' ? call.name : undefined,
    arguments: args,
  }
}

const utf8 = new TextEncoder()

function topLogprob(raw: unknown): TopLogProb | undefined {
  if (!raw || typeof raw !== 'object') return undefined
  const r = raw as { token?: unknown; logprob?: unknown; bytes?: unknown }
  if (typeof r.token !== 'string' || typeof r.logprob !== 'number' || !Number.isFinite(r.logprob)) return undefined
  // Chat Completions allows null bytes; Open Responses requires them: they are the token's UTF-8.
  const given = Array.isArray(r.bytes) && r.bytes.every((b) => Number.isInteger(b) && b >= 0 && b <= 255)
  return { token: r.token, logprob: r.logprob, bytes: given ? (r.bytes as number[]) : [...utf8.encode(r.token)] }
}

/**
 * Token log probabilities as a provider reported them (OpenAI Chat Completions' `logprobs.content`,
 * OpenAI Responses' `logprobs`), in the one shape every door gives: entries that are not a token
 * with a finite log probability are dropped rather than passed on to break a client's parser.
 */
export function logprobsOf(raw: unknown): LogProb[] | undefined {
  if (!Array.isArray(raw) || raw.length === 0) return undefined
  const out: LogProb[] = []
  for (const entry of raw) {
    const top = topLogprob(entry)
    if (!top) continue
    const alternatives = (entry as { top_logprobs?: unknown }).top_logprobs
    // Field by field: a literal that starts with a spread and adds fields is V8's slow path (per token here).
    const tops = Array.isArray(alternatives)
      ? alternatives.map(topLogprob).filter((t): t is TopLogProb => t !== undefined)
      : []
    out.push({ token: top.token, logprob: top.logprob, bytes: top.bytes, top_logprobs: tops })
  }
  return out.length ? out : undefined
}
