import type {
  ContentBlock as ClientContentBlock,
  Message,
  MessageDeltaUsage,
  RawContentBlockDeltaEvent,
  TextBlock,
  TextCitation,
  Usage,
} from '@anthropic-ai/sdk/resources/messages'

import { anthropicErrorBody, sseEvent } from '@roster/protocol'
import type { GatewayError } from '../errors.js'

import {
  ANTHROPIC_CITATION,
  isProviderItem,
  PROVIDER_ITEM,
  REDACTED_THINKING,
  stopReasonOf,
  type Annotation,
  type ItemEvent,
  type ReasoningItem,
  type ResponseObject,
  type StopReason,
} from '../wire.js'
import type { Usage as NeutralUsage } from '../deltas.js'

import type { DoorStream, PassThroughStream, StreamStart } from './door.js'
import { MessagesPassThrough, messagesWhole, type MessagesDoorParts } from './messages-pass-through.js'
import { leftOut } from './provider-items.js'
import type { Fields } from './messages-request.js'

// POST /messages, the way out: the engine's Response and events as the Anthropic Messages reply
// and its event stream (messages-request.ts: the way in).

export * from './messages-request.js'

/**
 * A content block as the Anthropic API sends it: a text block without `citations` unless there are
 * some. The client's type has `citations: null` where the API sends nothing, and a reply that sends
 * the null is refused whole by clients that read the API, not that type (@ai-sdk/anthropic 3).
 */
type ContentBlock = Exclude<ClientContentBlock, TextBlock> | Omit<TextBlock, 'citations'>

const STOP: Record<StopReason, NonNullable<Message['stop_reason']>> = {
  stop: 'end_turn',
  tool_calls: 'tool_use',
  length: 'max_tokens',
  content_filter: 'refusal',
}

export const messageId = (responseId: string) => `msg_${responseId.replace(/^resp_/, '')}`

/** A whole Message of an `anthropic-messages` endpoint's, answered as it came (messages-pass-through.ts). */
export const messagesPassThrough = messagesWhole({ usage: (r) => counters(r), idOf: messageId })

/** Beyond Anthropic's fields, as the official client reads it on every door: the cost in USD. */
/** Roster's own fields beside Anthropic's: the cost, and who counted the tokens where Roster did (undefined is left out of the JSON). */
type Cost = { cost?: number; tokens_counted_by?: 'roster' }

// The usage and the Message are written out field by field, not spread from parts: an object
// literal that starts with a spread and then adds fields takes V8's slow path (a Message made and
// serialized cost 8.3 µs that way, 1.6 written out; measured in-process).

/** The usage counters (Anthropic counts input tokens apart from those read from or written to the cache). */
function counters(response: ResponseObject | undefined): MessageDeltaUsage & { input_tokens: number } & Cost {
  const u = response?.usage
  if (!u)
    return {
      input_tokens: 0,
      output_tokens: 0,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      output_tokens_details: null,
      server_tool_use: null,
    }
  const read = u.input_tokens_details.cached_tokens
  const written = u.input_tokens_details.cache_write_tokens ?? 0
  const thinking = u.output_tokens_details.reasoning_tokens
  return {
    input_tokens: Math.max(0, u.input_tokens - read - written),
    output_tokens: u.output_tokens,
    cache_creation_input_tokens: written,
    cache_read_input_tokens: read,
    output_tokens_details: thinking ? { thinking_tokens: thinking } : null,
    server_tool_use: null,
    cost: u.cost,
    tokens_counted_by: u.tokens_counted_by,
  }
}

/** A Message's `usage`: every field the Anthropic client's Usage has. */
function messagesUsage(response?: ResponseObject): Usage & Cost {
  const c = counters(response)
  return {
    input_tokens: c.input_tokens,
    output_tokens: c.output_tokens,
    cache_creation_input_tokens: c.cache_creation_input_tokens,
    cache_read_input_tokens: c.cache_read_input_tokens,
    output_tokens_details: c.output_tokens_details,
    server_tool_use: null,
    cost: c.cost,
    tokens_counted_by: c.tokens_counted_by,
    cache_creation: null,
    inference_geo: null,
    service_tier: 'standard',
    speed: null,
  }
}

/** message_start's usage, from what is known as the stream opens (Anthropic counts cache reads and writes apart from input). */
function startUsage(u: NeutralUsage): Usage & Cost {
  return {
    input_tokens: Math.max(0, u.input - u.cached - u.cacheWrite),
    output_tokens: u.output,
    cache_creation_input_tokens: u.cacheWrite,
    cache_read_input_tokens: u.cached,
    output_tokens_details: u.reasoning ? { thinking_tokens: u.reasoning } : null,
    server_tool_use: null,
    cache_creation: null,
    inference_geo: null,
    service_tier: 'standard',
    speed: null,
  }
}

/** A Message with every field the Anthropic client's has (those Roster has nothing for are null). */
function message(
  id: string,
  model: string,
  content: ContentBlock[],
  stopReason: Message['stop_reason'],
  usage: Usage & Cost,
): MessageReply {
  return {
    id,
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: stopReason,
    stop_sequence: null,
    container: null,
    diagnostics: null,
    stop_details: null,
    usage,
  }
}

function toolInput(args: string): Fields {
  try {
    const v = JSON.parse(args || '{}')
    return v && typeof v === 'object' && !Array.isArray(v) ? v : { value: v }
  } catch {
    return {}
  }
}

/** A `message`: the Anthropic client's, with the cost and routing metadata the official client reads. */
export type MessageReply = Omit<Message, 'usage' | 'content'> & {
  content: ContentBlock[]
  usage: Usage & Cost
  openrouter_metadata?: Record<string, unknown>
}

/** The finished Response as a `message`. */
export function toMessage(response: ResponseObject): MessageReply {
  const content: ContentBlock[] = []
  for (const item of response.output) {
    if (isProviderItem(item)) {
      const blocks = item[PROVIDER_ITEM].anthropicBlocks
      if (blocks) content.push(...(blocks as unknown as ContentBlock[]))
      else leftOut(item, DOOR)
    } else if (item.type === 'reasoning') {
      const block = reasoningBlock(item)
      if (block) content.push(block)
    } else if (item.type === 'message')
      for (const p of item.content) {
        if (p.type === 'refusal') content.push({ type: 'text', text: p.refusal })
        else {
          const citations = p.annotations.flatMap((a) => citationOf(a, p.text) ?? [])
          content.push(
            citations.length
              ? ({ type: 'text', text: p.text, citations } as ContentBlock)
              : { type: 'text', text: p.text },
          )
        }
      }
    else if (item.type === 'function_call')
      content.push({
        type: 'tool_use',
        id: item.call_id,
        name: item.name,
        input: toolInput(item.arguments),
        caller: DIRECT,
      })
  }
  const reply = message(
    messageId(response.id),
    response.model,
    content,
    STOP[stopReasonOf(response)],
    messagesUsage(response),
  )
  if (response.openrouter_metadata) reply.openrouter_metadata = response.openrouter_metadata
  return reply
}

const DOOR = '/messages'

/**
 * A reasoning item as Anthropic's block: redacted thinking as it came, thinking with its signature
 * (another provider's encrypted content rides there too). An item with neither text nor state is
 * not a block (OpenAI sends empty reasoning items).
 */
function reasoningBlock(item: ReasoningItem): ContentBlock | undefined {
  if (item[REDACTED_THINKING]) return { type: 'redacted_thinking', data: item.encrypted_content ?? '' }
  const thinking = item.summary.map((s) => s.text).join('')
  if (!thinking && !item.encrypted_content) return undefined
  return { type: 'thinking', thinking, signature: item.encrypted_content ?? '' }
}

/**
 * An annotation as Anthropic's citation: the one Anthropic sent, as it came; a url_citation as a
 * web search result's location, citing the text it spans (Anthropic's sealed index is not known,
 * and is empty). Other kinds have no Anthropic form.
 */
function citationOf(a: Annotation, text: string): TextCitation | undefined {
  const raw = a[ANTHROPIC_CITATION]
  if (raw) return raw as unknown as TextCitation
  if (a.type !== 'url_citation' || typeof a.url !== 'string') return undefined
  const start = typeof a.start_index === 'number' ? a.start_index : 0
  const end = typeof a.end_index === 'number' ? a.end_index : start
  return {
    type: 'web_search_result_location',
    url: a.url,
    title: typeof a.title === 'string' ? a.title : null,
    cited_text: text.slice(start, end),
    encrypted_index: '',
  }
}

/** Who called a tool: the model itself (Anthropic's `caller`). */
const DIRECT = Object.freeze({ type: 'direct' as const })

/** An event: `type` first, then the event's own fields (spliced into the JSON, not spread). */
function sse(type: string, data: object): string {
  const fields = JSON.stringify(data)
  return sseEvent(`{"type":${JSON.stringify(type)}${fields === '{}' ? '' : `,${fields.slice(1, -1)}`}}`, type)
}

/**
 * A text delta, most of a stream's events, from a template: the same bytes as `sse` makes of it
 * (messages.test.ts holds them equal for any text), without an object serialized, sliced and spliced.
 */
const textDeltaEvent = (index: number, text: string) =>
  `event: content_block_delta\ndata: {"type":"content_block_delta","index":${index},"delta":{"type":"text_delta","text":${JSON.stringify(text)}}}\n\n`

/** The engine's events as the Messages event stream: message_start, content blocks, message_delta, message_stop. */
export class MessagesStream implements DoorStream, MessagesDoorParts {
  private blocks = 0
  /** Open blocks by what opened them (a reasoning item, a message's content part, a call). */
  private readonly open_ = new Map<string, number>()
  /** Each text part's text so far. */
  private readonly texts = new Map<string, string>()

  open(started: StreamStart): string {
    // As Anthropic does, the input is counted here (clients and cost trackers read it from
    // message_start): the provider's count where it came first, else Roster's estimate; the output
    // so far (none, or what the provider reported). message_delta carries the final usage whole.
    const usage = startUsage(started.usage())
    return sse('message_start', { message: message(messageId(started.id), started.model, [], null, usage) })
  }

  passThrough(protocol: string): PassThroughStream | undefined {
    return protocol === 'anthropic-messages' ? new MessagesPassThrough(this) : undefined
  }

  readonly idOf = messageId
  usage(response: ResponseObject) {
    return counters(response)
  }

  event(e: ItemEvent): string {
    switch (e.type) {
      case 'response.reasoning_summary_text.delta':
        // A thinking block opens with its first text, so that an empty reasoning item makes none.
        return (
          (this.open_.has(`r:${e.item_id}`)
            ? ''
            : this.start(`r:${e.item_id}`, { type: 'thinking', thinking: '', signature: '' })) +
          this.delta(`r:${e.item_id}`, { type: 'thinking_delta', thinking: e.delta })
        )
      case 'response.output_text.annotation.added': {
        const citation = citationOf(e.annotation, this.texts.get(`t:${e.item_id}:${e.content_index}`) ?? '')
        return citation ? this.delta(`t:${e.item_id}:${e.content_index}`, { type: 'citations_delta', citation }) : ''
      }
      case 'response.content_part.added':
        return this.start(`t:${e.item_id}:${e.content_index}`, { type: 'text', text: '' })
      case 'response.output_text.delta':
      case 'response.refusal.delta': {
        const key = `t:${e.item_id}:${e.content_index}`
        // The text so far of each part, for the span a citation on it cites.
        if (e.type === 'response.output_text.delta') this.texts.set(key, (this.texts.get(key) ?? '') + e.delta)
        return this.delta(key, { type: 'text_delta', text: e.delta })
      }
      case 'response.content_part.done':
        return this.stop(`t:${e.item_id}:${e.content_index}`)
      case 'response.output_item.added': {
        const item = e.item
        if (isProviderItem(item)) return item[PROVIDER_ITEM].anthropicBlocks ? '' : leftOut(item, DOOR) && ''
        if (item.type === 'reasoning' && item[REDACTED_THINKING])
          return this.start(`r:${item.id}`, { type: 'redacted_thinking', data: item.encrypted_content ?? '' })
        return item.type === 'function_call'
          ? this.start(`f:${item.id}`, {
              type: 'tool_use',
              id: item.call_id,
              name: item.name,
              input: {},
              caller: DIRECT,
            })
          : ''
      }
      case 'response.function_call_arguments.delta':
        return this.delta(`f:${e.item_id}`, { type: 'input_json_delta', partial_json: e.delta })
      case 'response.output_item.done': {
        const item = e.item
        if (isProviderItem(item)) return this.blocks_(item[PROVIDER_ITEM].anthropicBlocks ?? [])
        if (item.type === 'function_call') return this.stop(`f:${item.id}`)
        if (item.type !== 'reasoning' || item[REDACTED_THINKING]) return this.stop(`r:${item.id}`)
        // A thinking block's signature comes last, before it stops (opened for it if no text came).
        const key = `r:${item.id}`
        if (!item.encrypted_content) return this.stop(key)
        const opening = this.open_.has(key) ? '' : this.start(key, { type: 'thinking', thinking: '', signature: '' })
        return (
          opening + this.delta(key, { type: 'signature_delta', signature: item.encrypted_content }) + this.stop(key)
        )
      }
      default:
        return ''
    }
  }

  /** Blocks given whole (a provider-run tool's call and result): each started and stopped at once. */
  private blocks_(blocks: Record<string, unknown>[]): string {
    let out = ''
    for (const block of blocks) {
      const index = this.blocks++
      out += sse('content_block_start', { index, content_block: block }) + sse('content_block_stop', { index })
    }
    return out
  }

  end(response: ResponseObject): string {
    let out = ''
    for (const key of [...this.open_.keys()]) out += this.stop(key)
    out += sse('message_delta', {
      delta: { stop_reason: STOP[stopReasonOf(response)], stop_sequence: null, stop_details: null, container: null },
      usage: counters(response),
    })
    return out + sse('message_stop', {})
  }

  fail(err: GatewayError): string {
    return sse('error', { error: anthropicErrorBody(err.status, err.message, err.errorType).error })
  }

  keepalive(): string {
    return sse('ping', {})
  }

  private start(key: string, block: ContentBlock): string {
    const index = this.blocks++
    this.open_.set(key, index)
    return sse('content_block_start', { index, content_block: block })
  }

  private delta(key: string, delta: RawContentBlockDeltaEvent['delta']): string {
    const index = this.open_.get(key)
    if (index === undefined) return ''
    return delta.type === 'text_delta'
      ? textDeltaEvent(index, delta.text)
      : sse('content_block_delta', { index, delta })
  }

  private stop(key: string): string {
    const index = this.open_.get(key)
    if (index === undefined) return ''
    this.open_.delete(key)
    return sse('content_block_stop', { index })
  }
}
