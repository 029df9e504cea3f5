import type { Usage } from '../deltas.js'
import type { GatewayError } from '../errors.js'
import type { ItemEvent, ResponseObject } from '../wire.js'

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
}
