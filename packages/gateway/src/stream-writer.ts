import { openResponsesError, responseObjectError } from '@roster/protocol'
import { sseEvent } from '@roster/protocol'
import type { GatewayError } from './errors.js'
import type { Usage } from './deltas.js'
import { responseObject } from './response-object.js'
import { estimateInputTokens } from './token-estimate.js'
import type { Live, Run, StreamSink } from './run.js'
import type { ItemEvent, StreamEvent } from './wire.js'
import type { StreamEvent as ProviderEvent } from './adapters/adapter.js'
import type { StreamStart } from './doors/door.js'

// A run's stream: its events written to the client's sink as Server-Sent Events (Open Responses
// events, or another door's through its DoorStream), with the buffering that sends what one read
// from the provider brought in one write, and the backpressure that stops reading the provider
// while the client does not keep up.

export type { Live, StreamSink } from './run.js'

/** Corks the sink until the current tick's work is done, once per tick. */
export function holdForTick(live: Live) {
  if (live.held) return
  live.held = true
  live.sink.cork()
  process.nextTick(() => {
    live.held = false
    live.sink.uncork()
  })
}

/** One of the output's events, as the run's wire format has it: its door's translation, or Open Responses'. */
export function writeEvent(run: Run, event: ItemEvent) {
  const door = run.opts.doorStream
  if (!door) return writeOpenResponses(run, event)
  openStream(run)
  const text = door.event(event)
  if (text) write(run.live!, text)
}

/**
 * An event of a server tool's item in progress, on an Open Responses stream only (the other doors'
 * protocols have no such events; their clients read the item whole, if at all). Named as the
 * official client's types name it (`response.fusion_call.panel.delta`) for the clients typed for
 * those names, and by Open Responses' extension rule, under Roster's slug, for any other
 * (`openrouter:fusion_call.panel.delta`), as the provider's own items are (providerItemNames).
 */
export function writeItemProgress(
  run: Run,
  type: string,
  at: { item_id: string; output_index: number },
  fields: Record<string, unknown> = {},
) {
  if (!run.live || run.opts.doorStream || run.tap) return
  openStream(run)
  const named = run.opts.providerItemNames === 'slugged' ? type.replace(/^response\./, 'openrouter:') : type
  send(run.live, named, JSON.stringify({ type: named, ...at, ...fields }))
}

/** An Open Responses event: `event:` equal to its type, `sequence_number` from 0. Opens the stream on first use. */
function writeOpenResponses(run: Run, event: StreamEvent) {
  const live = run.live!
  openStream(run)
  if (live.pendingDebug) {
    const body = live.pendingDebug
    live.pendingDebug = undefined
    send(live, 'response.debug', JSON.stringify({ type: 'response.debug', debug: { echo_upstream_body: body } }))
  }
  write(live, openResponsesEvent(event, live.seq++))
}

/**
 * An Open Responses event as Server-Sent Events text, `sequence_number` `seq`. A text delta, most of
 * a stream's events, is written from a template: the same bytes as the event's JSON spliced
 * (stream-writer.test.ts holds them equal for any text), without the object's serialization, the
 * splice's copies and its check (~1.5 µs an event, measured, against ~0.5).
 */
export function openResponsesEvent(event: StreamEvent, seq: number): string {
  if (event.type === 'response.output_text.delta' && event.logprobs.length === 0)
    return `event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":${seq},"item_id":${JSON.stringify(event.item_id)},"output_index":${event.output_index},"content_index":${event.content_index},"delta":${JSON.stringify(event.delta)},"logprobs":[]}\n\n`
  return splicedEvent(event.type, JSON.stringify(event), seq)
}

/**
 * One of the provider's events forwarded as it came, while the call passes through (run.pass): its
 * data parsed once (for the translation that reads it next), the stream opened by the first. While
 * it forwards, the run's output makes no events (nothing would write them); an event the door must
 * translate ends the forwarding, and the door resumes from the output so far and writes from that
 * event on.
 */
export function forwardEvent(run: Run, e: ProviderEvent) {
  const live = run.live!
  const pass = run.pass!
  // The door opened the stream (a reply whose first words came in a chunk the pass held): it is the door's.
  if (live.opened && !run.passedThrough) {
    run.pass = undefined
    return
  }
  const json = e.data === '[DONE]' ? undefined : (e.json = JSON.parse(e.data) as unknown)
  const text = pass.forward(e, json, () => started(run))
  if (text === undefined) {
    run.pass = undefined
    if (run.passedThrough) {
      const held = pass.flush?.()
      if (held) write(live, held)
      run.passedThrough = false
      run.opts.doorStream?.resume?.(run.assembler.output)
      run.assembler.emit = (event) => writeEvent(run, event)
    }
    return
  }
  // Held (an opening chunk, or the end): the stream is the pass's only once it has written, so a
  // call that fails before (and the endpoint tried next) or a reply that never says anything is the door's.
  if (!text) return
  if (!live.opened) {
    live.opened = true
    run.passedThrough = true
    run.assembler.emit = undefined
    if (run.opts.replyPath) run.opts.replyPath.passedThrough = true
    live.sink.open()
    write(live, text)
    // The first event leaves the moment it is made (holdForTick holds the rest of the read).
    live.sink.uncork()
    live.sink.cork()
    return
  }
  write(live, text)
}

/** What the door answers a stream with: the run's id, the model as the catalogue names it. */
const started = (run: Run): StreamStart => ({
  id: run.id,
  model: run.route.candidates[run.chosen]!.model.id,
  createdAt: run.createdAt,
  usage: () => openingUsage(run),
})

/** The stream's first bytes (once): Open Responses' created and in_progress, or the door's opening. */
function openStream(run: Run) {
  const live = run.live!
  if (live.opened) return
  live.opened = true
  live.sink.open()
  const door = run.opts.doorStream
  if (door) return write(live, door.open(started(run)))
  // The first byte waits on this: the starting Response is serialized once for both events.
  const response = JSON.stringify(responseObject(run, 'in_progress'))
  send(live, 'response.created', `{"type":"response.created","response":${response}}`)
  send(live, 'response.in_progress', `{"type":"response.in_progress","response":${response}}`)
}

/** The usage known as the stream opens: the provider's so far, its input estimated by Roster where it has not counted it yet. */
function openingUsage(run: Run): Usage {
  const usage = run.assembler.usageSoFar
  if (!usage.input) usage.input = estimateInputTokens(run.req)
  return usage
}

/** Writes an event given as JSON that starts with its `type` (splicedEvent). */
function send(live: Live, type: string, json: string) {
  write(live, splicedEvent(type, json, live.seq++))
}

/**
 * An event given as JSON that starts with its `type`, as Server-Sent Events text with
 * `sequence_number` spliced in after the type (spliced, not parsed and serialized again).
 */
export function splicedEvent(type: string, json: string, seq: number): string {
  const head = `{"type":${JSON.stringify(type)}`
  if (!json.startsWith(head)) throw new Error(`an event's JSON must begin with its type (${type})`)
  return sseEvent(`${head},"sequence_number":${seq}${json.slice(head.length)}`, type)
}

/** Writes a piece of the stream, counting it against the attempt and noting when the client falls behind. */
function write(live: Live, text: string) {
  live.sinceAttempt++
  if (!live.sink.write(text)) live.backlog = true
}

/** `[DONE]` and the end, leaving with whatever was corked before them. */
export function finishStream(sink: StreamSink) {
  sink.write(sseEvent('[DONE]'))
  sink.uncork()
  sink.end()
}

/** The end of a stream that did not fail: the finished Response, then `[DONE]` (or the door's ending). */
export function endStream(run: Run, status: 'completed' | 'incomplete') {
  const { sink } = run.live!
  const door = run.opts.doorStream
  sink.cork()
  if (door) {
    // A reply that made no event at all (an empty answer) still opens before it ends.
    openStream(run)
    const pass = run.passedThrough ? run.pass : undefined
    sink.write((pass ?? door).end(responseObject(run, status)))
    sink.uncork()
    return sink.end()
  }
  writeOpenResponses(run, { type: `response.${status}`, response: responseObject(run, status) })
  finishStream(sink)
}

/** The end of a stream that failed after it opened: `error` and `response.failed` (or the door's failure). */
export function failStream(run: Run, err: GatewayError) {
  const { sink } = run.live!
  const failed = responseObject(run, 'failed')
  failed.error = responseObjectError(err.errorType, err.message)
  sink.cork()
  const door = run.opts.doorStream
  if (door) {
    sink.write(door.fail(err, failed))
    sink.uncork()
    return sink.end()
  }
  // The official client reads code, message and param at the top; the schema's ErrorStreamingEvent
  // wants them in `error` with the Open Responses type. Both are sent.
  const payload = openResponsesError(err.errorType, err.status, err.message)
  writeOpenResponses(run, { type: 'error', code: err.errorType, message: err.message, param: null, error: payload })
  writeOpenResponses(run, { type: 'response.failed', response: failed })
  finishStream(sink)
}
