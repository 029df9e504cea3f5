// Applying a V4A diff (OpenAI's apply_patch format) to a file's text, for `openrouter:apply_patch`
// with Roster's `sandbox` engine. A new file's text is its added lines. An update's hunks each name
// the lines they replace (context and removed lines, in order) and what replaces them (context and
// added lines); a hunk's `@@ <line>` header, when given, says the block comes after that line. Each
// hunk must match exactly one place (after the previous hunk's), or the patch is refused whole.

/** The text a patch makes, or why it cannot be applied. */
export type Applied = { text: string } | { problem: string }

const splitLines = (diff: string) => {
  const lines = diff.split('\n').map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l))
  if (lines.at(-1) === '') lines.pop()
  return lines
}

/** A new file's text: its diff's added lines. */
export function createdText(diff: string): string {
  const lines = splitLines(diff).filter((l) => !l.startsWith('@@') && l !== '*** End of File')
  return lines.map((l) => l.slice(1)).join('\n') + (lines.length ? '\n' : '')
}

interface Hunk {
  anchor?: string
  old: string[]
  new: string[]
}

function hunksOf(diff: string): Hunk[] {
  const hunks: Hunk[] = []
  let current: Hunk | undefined
  for (const line of splitLines(diff)) {
    if (line.startsWith('@@')) {
      const anchor = line.slice(2).trim()
      hunks.push((current = { ...(anchor ? { anchor } : {}), old: [], new: [] }))
      continue
    }
    if (line === '*** End of File') continue
    if (!current) hunks.push((current = { old: [], new: [] }))
    const body = line.slice(1)
    if (line.startsWith('-')) current.old.push(body)
    else if (line.startsWith('+')) current.new.push(body)
    else {
      // Context (an empty line is an empty context line: models drop its space).
      const text = line === '' ? '' : body
      current.old.push(text)
      current.new.push(text)
    }
  }
  return hunks
}

/** Where `block` occurs in `lines` at or after `from`, once (undefined: nowhere; -1: more than once). */
function findOnce(lines: string[], block: string[], from: number): number | undefined {
  let found: number | undefined
  for (let i = from; i + block.length <= lines.length; i++) {
    if (block.every((b, j) => lines[i + j] === b)) {
      if (found !== undefined) return -1
      found = i
    }
  }
  return found
}

/** A file's text with an update's hunks applied, in order. */
export function updatedText(text: string, diff: string): Applied {
  const endsWithNewline = text.endsWith('\n')
  const lines = text.split('\n')
  if (endsWithNewline) lines.pop()
  let from = 0
  for (const [n, hunk] of hunksOf(diff).entries()) {
    let start = from
    if (hunk.anchor !== undefined) {
      const at = lines.findIndex((l, i) => i >= from && l.trim() === hunk.anchor!.trim())
      if (at < 0) return { problem: `hunk ${n + 1}: no line "${hunk.anchor.slice(0, 80)}" to come after` }
      start = at + 1
    }
    if (!hunk.old.length) {
      // Only added lines: they go where the anchor says, else at the end.
      const at = hunk.anchor !== undefined ? start : lines.length
      lines.splice(at, 0, ...hunk.new)
      from = at + hunk.new.length
      continue
    }
    const at = findOnce(lines, hunk.old, start)
    if (at === undefined) return { problem: `hunk ${n + 1}: its lines are not in the file (as given)` }
    if (at < 0) return { problem: `hunk ${n + 1}: its lines occur more than once; give more context` }
    lines.splice(at, hunk.old.length, ...hunk.new)
    from = at + hunk.new.length
  }
  return { text: lines.join('\n') + (endsWithNewline || !text ? '\n' : '') }
}
