import { StringDecoder } from 'node:string_decoder'
import { createParser } from 'eventsource-parser'
import type { StreamEvent } from '@roster/protocol'

// Server-Sent Events as Roster reads them: one reader for every stream it reads (a provider's reply
// in the gateway, a host's run events in the API, the gateway's events in an intern's turn). Their
// writer and shapes are @roster/protocol's (sse.ts).

/**
 * The one reader of Server-Sent Events, fed bytes as they arrive (push): answers the events each
 * chunk completes. Bytes split anywhere, even inside a character, are put back together; a
 * byte-order mark before the first event is dropped (as a TextDecoder would); comments are skipped.
 * StringDecoder, not TextDecoder: Node's TextDecoder decodes a stream (`stream: true`) through an
 * ICU converter made per decoder, ~3 times the cost of StringDecoder's native path per stream.
 * The array answered is reused by the next call: read it before feeding more.
 */
export class EventStreamDecoder {
  private readonly decoder = new StringDecoder('utf8')
  private readonly events: StreamEvent[] = []
  private readonly parser = createParser({ onEvent: (e) => void this.events.push(e) })
  private started = false

  push(chunk: Uint8Array | string): StreamEvent[] {
    this.events.length = 0
    let text =
      typeof chunk === 'string' ? chunk : this.decoder.write(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk))
    if (!this.started && text) {
      this.started = true
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
    }
    this.parser.feed(text)
    return this.events
  }

  /** What the last bytes complete, at the end of the stream. */
  end(): StreamEvent[] {
    return this.push(this.decoder.end())
  }
}

/**
 * The events of a stream of Server-Sent Events, each `data` turned into a value by `parse`, as they
 * arrive (pull: the same reader as EventStreamDecoder). A `data` that `parse` throws on ends the
 * stream with that error.
 */
export async function* readEventStream<T>(
  body: AsyncIterable<Uint8Array | Buffer | string>,
  parse: (data: string, event?: string) => T,
): AsyncGenerator<T> {
  const decoder = new EventStreamDecoder()
  for await (const chunk of body) {
    for (const e of decoder.push(chunk)) yield parse(e.data, e.event)
  }
  for (const e of decoder.end()) yield parse(e.data, e.event)
}
