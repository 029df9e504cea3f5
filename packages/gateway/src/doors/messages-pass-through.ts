import type { StreamEvent } from '../adapters/adapter.js'
import type { ResponseObject } from '../wire.js'
import type { PassThroughStream, PassThroughWhole, StreamStart } from './door.js'
import { edited, isObject, memberSpans, replaceValue, sseFrame, usageEdits, type Json } from './json-members.js'

// /messages answered with the provider's own Messages (pass-through): its events, or its whole
// Message, forwarded as it sent them, with what Roster answers for put in (the id its generation is
// found by, the model as the catalogue names it, the cost in the usage). Only a reply the Anthropic
// client's types describe is forwarded: one whose Message lacks what they require (an older API's,
// another vendor's) or holds blocks the door writes its own way is translated. A stream is judged by
// its message_start: the door's own stream keeps nothing it would need to take over mid-way, so one
// forwarded at all is forwarded to its end (new event kinds too, as its clients skip what they do
// not know), or to an `error`, which the door words as Roster words failures.

/** What of the door's own stream the pass-through shares. */
export interface MessagesDoorParts {
  /** The usage as the door reports it (Anthropic's counters, and the cost). */
  usage(response: ResponseObject): unknown
  /** The Message's id as the door answers it. */
  idOf(responseId: string): string
}

/**
 * The keys the Anthropic client's types require of a Message (its messages.d.ts): a provider's reply
 * that lacks one (an older API's, another vendor's) is the door's to complete, and blocks of other
 * kinds (a server tool's) are the door's to write.
 */
const REQUIRED = {
  message: [
    'id',
    'container',
    'content',
    'diagnostics',
    'model',
    'role',
    'stop_details',
    'stop_reason',
    'stop_sequence',
    'type',
    'usage',
  ],
  usage: [
    'cache_creation',
    'cache_creation_input_tokens',
    'cache_read_input_tokens',
    'inference_geo',
    'input_tokens',
    'output_tokens',
    'output_tokens_details',
    'server_tool_use',
    'service_tier',
    'speed',
  ],
} as const
const BLOCKS: Record<string, readonly string[]> = {
  // A text block's citations are sent only when there are some (the API's word against the type's).
  text: ['text'],
  thinking: ['thinking', 'signature'],
  redacted_thinking: ['data'],
  tool_use: ['id', 'caller', 'input', 'name'],
}

const has = (v: unknown, keys: readonly string[]): v is Json => isObject(v) && keys.every((k) => k in v)
const blockForwardable = (b: unknown) => isObject(b) && typeof b.type === 'string' && has(b, BLOCKS[b.type] ?? ['\0'])

/** A Message whose ids Roster can put in, whose usage it can read, as the client's types describe it. */
const messageForwardable = (m: unknown): m is Json =>
  has(m, REQUIRED.message) &&
  m.type === 'message' &&
  m.role === 'assistant' &&
  typeof m.id === 'string' &&
  typeof m.model === 'string' &&
  Array.isArray(m.content) &&
  m.content.every(blockForwardable) &&
  has(m.usage, REQUIRED.usage) &&
  Number.isInteger(m.usage.input_tokens) &&
  Number.isInteger(m.usage.output_tokens)

/** The edits that give a Message (the object at `at`) Roster's id and model. */
function idEdits(text: string, at: number, id: string, model: string) {
  const spans = memberSpans(text, ['id', 'model'], at)
  return [...replaceValue(spans.get('id'), id), ...replaceValue(spans.get('model'), model)]
}

/** One call's events forwarded (see the file's head). */
export class MessagesPassThrough implements PassThroughStream {
  private started = false
  /** From message_delta (how it finished, and the usage) on: sent once the reply is accounted. */
  private readonly held: { name: string; text: string }[] = []
  private usageAt = -1
  private holding = false

  constructor(private readonly door: MessagesDoorParts) {}

  forward(e: StreamEvent, json: unknown, starting: () => StreamStart): string | undefined {
    if (!isObject(json) || typeof json.type !== 'string') return this.stop()
    const name = e.event ?? json.type
    let text = e.data
    if (!this.started) {
      if (json.type !== 'message_start' || !messageForwardable(json.message)) return this.stop()
      this.started = true
      const at = memberSpans(text, ['message']).get('message')![0]
      const started = starting()
      text = edited(text, idEdits(text, at, JSON.stringify(this.door.idOf(started.id)), JSON.stringify(started.model)))
    } else if (json.type === 'error') return this.stop()
    if (json.type === 'message_delta' && this.usageAt < 0) this.usageAt = this.held.length
    if (json.type === 'message_delta' || json.type === 'message_stop') this.holding = true
    if (this.holding) {
      this.held.push({ name, text })
      return ''
    }
    return sseFrame(text, name)
  }

  end(response: ResponseObject): string {
    let out = ''
    this.held.forEach(({ name, text }, i) => {
      out += sseFrame(
        i === this.usageAt ? edited(text, usageEdits(text, this.door.usage(response), response, ['cost'])) : text,
        name,
      )
    })
    return out
  }

  /** The door translates from here on. */
  private stop(): undefined {
    this.held.length = 0
    return undefined
  }
}

/** A whole Message forwarded (see the file's head). */
export const messagesWhole = (door: Pick<MessagesDoorParts, 'usage' | 'idOf'>): PassThroughWhole => ({
  protocol: 'anthropic-messages',
  whole(text, json, response) {
    if (!messageForwardable(json)) return undefined
    return edited(text, [
      ...idEdits(text, 0, JSON.stringify(door.idOf(response.id)), JSON.stringify(response.model)),
      ...usageEdits(text, door.usage(response), response, ['cost']),
    ])
  },
})
