/**
 * Milliseconds from sending a streamed request to the first chunk in which `isText` sees text (what
 * came so far, decoded); the rest of the stream is read to its end.
 */
export async function firstText(url, init, isText) {
  const t0 = performance.now()
  const res = await fetch(url, { method: 'POST', ...init })
  const reader = res.body.getReader()
  const decoder = new TextDecoder()
  let seen = ''
  let at
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    seen += decoder.decode(value, { stream: true })
    if (at === undefined && isText(seen)) at = performance.now() - t0
  }
  if (at === undefined) throw new Error(`no text in ${seen.slice(0, 300)}`)
  return at
}
