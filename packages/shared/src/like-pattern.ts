// Searches by a piece of text (a name holding it) in SQL: the text is matched literally.

/** `text` matched literally by (I)LIKE: its `%`, `_` and the escape character itself escaped. */
export function likeLiteral(text: string) {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`)
}
