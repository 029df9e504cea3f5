// Where an object's members sit in its JSON text, so that a provider's reply can be forwarded as it
// came with a few of its values replaced (pass-through.ts): a scan that reads the object's own keys
// and steps over every value, never building one. The text is JSON already parsed once (the caller
// read the same bytes with JSON.parse), so the scan trusts its grammar.

/** A JSON object as parsed. */
export type Json = Record<string, unknown>
export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v)

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d
const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d
const COMMA = 0x2c
const COLON = 0x3a

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09

/** A value's place in the text: [start, end). */
export type Span = readonly [number, number]

function skipSpace(text: string, i: number): number {
  while (i < text.length && isSpace(text.charCodeAt(i))) i++
  return i
}

/** The index just past the string that opens at `i` (a quote). */
function skipString(text: string, i: number): number {
  let j = i + 1
  for (;;) {
    const q = text.indexOf('"', j)
    if (q < 0) return text.length
    // A quote after an odd number of backslashes is escaped.
    let b = q - 1
    while (text.charCodeAt(b) === BACKSLASH) b--
    if ((q - 1 - b) % 2 === 0) return q + 1
    j = q + 1
  }
}

/** The index just past the value that begins at `i`. */
function skipValue(text: string, i: number): number {
  const c = text.charCodeAt(i)
  if (c === QUOTE) return skipString(text, i)
  if (c === OPEN_BRACE || c === OPEN_BRACKET) {
    let depth = 0
    for (let j = i; j < text.length; j++) {
      const d = text.charCodeAt(j)
      if (d === QUOTE) j = skipString(text, j) - 1
      else if (d === OPEN_BRACE || d === OPEN_BRACKET) depth++
      else if (d === CLOSE_BRACE || d === CLOSE_BRACKET) {
        if (--depth === 0) return j + 1
      }
    }
    return text.length
  }
  let j = i
  while (j < text.length) {
    const d = text.charCodeAt(j)
    if (d === COMMA || d === CLOSE_BRACE || d === CLOSE_BRACKET || isSpace(d)) break
    j++
  }
  return j
}

/**
 * The spans of the values of `keys` among the members of the object that begins at `from` (its own
 * members, not nested ones'); a key the object has twice answers its last, as JSON.parse reads it.
 * Also the span of the object itself (`''`), whose last character is its closing brace. With
 * `firstOnly`, the scan stops once each key is found (its first: the object's span is not given):
 * a chunk's id and model, its first members, cost a few characters' scan, not the chunk's.
 */
export function memberSpans(text: string, keys: readonly string[], from = 0, firstOnly = false): Map<string, Span> {
  const spans = new Map<string, Span>()
  let i = skipSpace(text, from)
  const start = i
  if (text.charCodeAt(i) !== OPEN_BRACE) return spans
  i = skipSpace(text, i + 1)
  while (i < text.length && text.charCodeAt(i) !== CLOSE_BRACE) {
    const keyEnd = skipString(text, i)
    const raw = text.slice(i + 1, keyEnd - 1)
    const key = raw.includes('\\') ? (JSON.parse(text.slice(i, keyEnd)) as string) : raw
    i = skipSpace(text, keyEnd)
    if (text.charCodeAt(i) === COLON) i = skipSpace(text, i + 1)
    const end = skipValue(text, i)
    if (keys.includes(key)) {
      spans.set(key, [i, end])
      if (firstOnly && spans.size === keys.length) return spans
    }
    i = skipSpace(text, end)
    if (text.charCodeAt(i) === COMMA) i = skipSpace(text, i + 1)
  }
  spans.set('', [start, Math.min(i + 1, text.length)])
  return spans
}

/** One change to a text: [start, end) replaced by `text`. */
export interface Edit {
  start: number
  end: number
  text: string
}

/** `text` with `edits` made (they do not overlap; in any order). */
export function edited(text: string, edits: Edit[]): string {
  if (edits.length === 0) return text
  edits.sort((a, b) => a.start - b.start)
  let out = ''
  let at = 0
  for (const e of edits) {
    out += text.slice(at, e.start) + e.text
    at = e.end
  }
  return out + text.slice(at)
}

/** The edit that replaces the value at `span` (absent: nothing to replace). */
export const replaceValue = (span: Span | undefined, json: string): Edit[] =>
  span ? [{ start: span[0], end: span[1], text: json }] : []

/**
 * The edit that adds members (`"k":v,…`, given without braces) at the end of the object at `span`
 * (the object's own span: its last character is its closing brace).
 */
export function addMembers(text: string, span: Span, members: string): Edit {
  const close = span[1] - 1
  // An empty object takes the members without a comma.
  const empty = text.charCodeAt(skipSpace(text, span[0] + 1)) === CLOSE_BRACE
  return { start: close, end: close, text: empty ? members : `,${members}` }
}

/**
 * The edits that give the object beginning at `from` each of `values` (JSON texts by key): the
 * member replaced where the object has it, added at its end where it has not.
 */
export function setMembers(text: string, from: number, values: Record<string, string>): Edit[] {
  const keys = Object.keys(values)
  const spans = memberSpans(text, keys, from)
  const whole = spans.get('')
  if (!whole) return []
  const edits: Edit[] = []
  let added = ''
  for (const k of keys) {
    const span = spans.get(k)
    if (span) edits.push({ start: span[0], end: span[1], text: values[k]! })
    else added += `${added ? ',' : ''}${JSON.stringify(k)}:${values[k]}`
  }
  if (added) edits.push(addMembers(text, whole, added))
  return edits
}

/**
 * A provider's event data as Server-Sent Events, each of its lines on a `data:` line of its own: an
 * event a provider sent over several `data:` lines (JSON may break anywhere between its tokens) is
 * read back whole by the client's parser, which joins them with line feeds, as Roster's did.
 */
export function sseFrame(data: string, name?: string): string {
  const head = name ? `event: ${name}\n` : ''
  return data.includes('\n') ? `${head}data: ${data.split('\n').join('\ndata: ')}\n\n` : `${head}data: ${data}\n\n`
}

/**
 * The edits that give a provider's reply (or event) Roster's usage: where Roster counted the tokens
 * (the Response says so), the door's whole usage in place of the provider's; else the provider's with
 * the door's `keys` (its cost) set in it. Nothing where the text has no usage.
 */
export function usageEdits(
  text: string,
  doorUsage: unknown,
  response: { usage?: { tokens_counted_by?: string } | null },
  keys: readonly string[],
): Edit[] {
  const span = memberSpans(text, ['usage']).get('usage')
  if (!span) return []
  if (response.usage?.tokens_counted_by === 'roster') return replaceValue(span, JSON.stringify(doorUsage))
  const usage = (doorUsage ?? {}) as Json
  return setMembers(text, span[0], Object.fromEntries(keys.map((k) => [k, JSON.stringify(usage[k] ?? null)])))
}
