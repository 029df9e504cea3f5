import { StringDecoder } from 'node:string_decoder'
import { createParser } from 'eventsource-parser'

// Server-Sent Events as Roster reads and writes them: one reader and one writer for every stream
// that crosses between its processes (a host's run events to the API, the API's chat chunks).

/** One event's `data:` line (and its `event:` name, when it has one). */
export const sseEvent = (data: unknown, name?: string) =>
  `${name ? `event: ${name}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`

/** A comment line: clients skip it; it keeps idle connections from being cut on the way. */
export const SSE_COMMENT = ': keepalive\n\n'

/**
 * The events of a stream of Server-Sent Events, each `data` turned into a value by `parse`, as they
 * arrive (comments and keepalives skipped). Bytes split anywhere, even inside a character, are put
 * back together; a `data` that `parse` throws on ends the stream with that error.
 */
export async function* readEventStream<T>(
  body: AsyncIterable<Uint8Array | Buffer | string>,
  parse: (data: string, event?: string) => T,
): AsyncGenerator<T> {
  const ready: T[] = []
  let failed: unknown
  const parser = createParser({
    onEvent(e) {
      if (failed !== undefined) return
      try {
        ready.push(parse(e.data, e.event))
      } catch (err) {
        failed = err
      }
    },
  })
  const decoder = new StringDecoder('utf8')
  for await (const chunk of body) {
    parser.feed(typeof chunk === 'string' ? chunk : decoder.write(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk)))
    while (ready.length) yield ready.shift()!
    if (failed !== undefined) throw failed
  }
  parser.feed(decoder.end())
  while (ready.length) yield ready.shift()!
  if (failed !== undefined) throw failed
}
