import type { Usage } from '../deltas.js'
import type { GatewayError } from '../errors.js'
import type { ItemEvent, ResponseObject } from '../wire.js'
import type { StreamEvent } from '../adapters/adapter.js'

/** What is known when a stream opens. */
export interface StreamStart {
  id: string
  model: string
  createdAt: number
  /**
   * The usage known so far: the input as the provider counted it where it reports that first
   * (Anthropic's message_start), else Roster's estimate of it (token-estimate.ts). Made when asked.
   */
  usage(): Usage
}

/**
 * A door: one wire format of the gateway (Open Responses, OpenAI Chat Completions, Anthropic
 * Messages). Each translates its request into the engine's neutral request (the Responses request)
 * before the engine runs, and the engine's output back: the finished Response into its own reply,
 * and, streaming, the engine's events into its own. The engine is the same for every door.
 */
export interface DoorStream {
  /** The first bytes of the stream, written when the first event is made. */
  open(started: StreamStart): string
  /** One of the engine's events (Open Responses event types and fields) as this door's, or ''. */
  event(event: ItemEvent): string
  /** The end of a stream that did not fail: the finished Response. */
  end(response: ResponseObject): string
  /** The end of a stream that failed after it opened. */
  fail(err: GatewayError, response: ResponseObject): string
  /** What keeps an idle stream open while a server tool runs (an SSE comment, or a ping event). */
  keepalive(): string
  /**
   * For one upstream call to an endpoint of `protocol`: its events forwarded as the provider sent
   * them (pass-through.ts), where the door speaks that protocol; absent, or undefined: translated.
   */
  passThrough?(protocol: string): PassThroughStream | undefined
  /**
   * The door takes over a stream its provider's events were forwarded on (pass-through stopped
   * mid-way): what it must know of the output so far (the calls' places, the text's length), from
   * the items the engine read of it. Its own events follow from the next one on.
   */
  resume?(output: readonly unknown[]): void
}

/**
 * A door forwarding its provider's own events, one upstream call's. While it forwards, the engine
 * makes no events for the door (it still reads every reply); once an event is not one the door's
 * clients may be given as it came, the door resumes from the output so far and translates from that
 * event on.
 */
export interface PassThroughStream {
  /**
   * One of the provider's events (`json`: its data parsed; undefined for `[DONE]`): what the client
   * is sent now ('' for nothing yet: the end is held until the reply is accounted), or undefined
   * where the door must translate it (and all that follows). `started`: the ids the door answers with
   * (made when asked: a pass reads them once, on its first event).
   */
  forward(e: StreamEvent, json: unknown, started: () => StreamStart): string | undefined
  /** The end of a stream that did not fail: what was held, with Roster's usage and cost in it. */
  end(response: ResponseObject): string
  /** What it holds that the client must still get when the door takes over (a chunk kept to go with the next). */
  flush?(): string
}

/** A door's answer to a whole reply its provider gave in the door's protocol: the provider's text, Roster's ids and cost put in; undefined: translate it. */
export interface PassThroughWhole {
  protocol: string
  whole(text: string, json: unknown, response: ResponseObject): string | undefined
}
