// What Postgres takes as JSON text, for the writes of what users and models sent.

/**
 * `value` as JSON Postgres takes: a NUL character or a lone surrogate in a string or a key (a prompt
 * kept by private logging, a model's output) is not text to Postgres, which would refuse the whole
 * record, and with it the generation and what it cost; such characters are written as U+FFFD (the
 * replacement character). JSON.stringify writes both as escapes (`\u0000`, `\ud800`–`\udfff`), so a
 * value without them pays one scan of its JSON.
 */
export function storableJson(value: unknown): string {
  const json = JSON.stringify(value)
  return UNSTORABLE_ESCAPE.test(json) ? JSON.stringify(storable(value)) : json
}
const UNSTORABLE_ESCAPE = /\\u(0000|d[89a-f])/i

function storable(value: unknown): unknown {
  if (typeof value === 'string') return storableText(value)
  if (Array.isArray(value)) return value.map(storable)
  if (typeof value !== 'object' || value === null) return value
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(value)) out[storableText(k)] = storable(v)
  return out
}
// String.prototype.toWellFormed is in Node 20 (ES2024); the project's lib is ES2023.
const storableText = (s: string) => (s.replaceAll('\0', '\uFFFD') as string & { toWellFormed(): string }).toWellFormed()
