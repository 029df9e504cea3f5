// Text Postgres cannot hold: a NUL character (refused, error 22021) or a lone surrogate (not
// Unicode; stored as U+FFFD, silently changed). Valid JSON, and text to a model, so it reaches us.
// Where a user names a thing to store, it is refused (the API's input guards); where it is what a
// user or a model said and we keep (the generations ledger), it is kept as U+FFFD.

// String.prototype.isWellFormed and toWellFormed are in Node 20 (ES2024); the project's lib is ES2023.
type Es2024String = string & { isWellFormed(): boolean; toWellFormed(): string }

/** Whether Postgres stores `s` as it is. */
export const isStorableText = (s: string) => !s.includes('\0') && (s as Es2024String).isWellFormed()

/** `s` with each NUL and lone surrogate as U+FFFD (the replacement character). */
export const storableText = (s: string) => (s.replaceAll('\0', '\uFFFD') as Es2024String).toWellFormed()

/**
 * `value` as JSON Postgres takes: a string or a key that Postgres cannot hold (a prompt kept by
 * private logging, a model's output) would make it refuse the whole record, and with it the
 * generation and what it cost, so such characters are written as U+FFFD. JSON.stringify writes
 * both as escapes (`\u0000`, `\ud800`–`\udfff`), so a value without them pays one scan of its JSON.
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
