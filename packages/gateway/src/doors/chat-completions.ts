import type {
  ChatCompletion,
  ChatCompletionMessage,
  ChatCompletionMessageToolCall as ChatToolCall,
} from 'openai/resources/chat/completions'
import type { CompletionUsage } from 'openai/resources/completions'

import { gatewayErrorBody, SSE_COMMENT, sseEvent } from '@roster/protocol'
import type { GatewayError } from '../errors.js'

import {
  isProviderItem,
  PROVIDER_ITEM,
  stopReasonOf,
  type ReasoningItem,
  type Annotation,
  type ItemEvent,
  type LogProb,
  type OutputItem,
  type ResponseObject,
  type StopReason,
} from '../wire.js'
import type { DoorStream, PassThroughStream, StreamStart } from './door.js'
import { ChatPassThrough, chatWhole, type ChatDoorParts } from './chat-pass-through.js'
import { leftOut } from './provider-items.js'
import { reasoningDetails, reasoningStateDetail, type ReasoningDetail } from './reasoning-details.js'
import type { ChatCompletionRequest } from './chat-completions-request.js'

// POST /chat/completions, the way out: the engine's Response and events as a chat completion and its
// chunk stream (chat-completions-request.ts: the way in).

export * from './chat-completions-request.js'

/** The end of a chat completions stream. */
const DONE = sseEvent('[DONE]')

/** How a reply reports itself: what the request asked for that changes the reply, not the model call. */
export interface ChatReplyOptions {
  /** reasoning.exclude: the model reasons, the client is not shown it. */
  hideReasoning: boolean
}
export const chatReplyOptions = (req: ChatCompletionRequest): ChatReplyOptions => ({
  hideReasoning: req.reasoning?.exclude === true,
})

const FINISH: Record<StopReason, ChatCompletion.Choice['finish_reason']> = {
  stop: 'stop',
  tool_calls: 'tool_calls',
  length: 'length',
  content_filter: 'content_filter',
}

/** Roster's backend, as `system_fingerprint` reports it. */
const SYSTEM_FINGERPRINT = 'fp_roster'

export const chatId = (responseId: string) => `chatcmpl-${responseId.replace(/^resp_/, '')}`

/** Usage as the official client reads it: the openai client's, with the cost beside it. */
type ChatUsage = CompletionUsage & {
  cost: number
  is_byok: boolean
  cost_details: {
    upstream_inference_cost: number
    upstream_inference_prompt_cost: number
    upstream_inference_completions_cost: number
  }
  prompt_tokens_details: { cached_tokens: number; cache_write_tokens?: number }
  tokens_counted_by?: 'roster'
}
/** A `chat.completion`: the openai client's, with the reasoning and metadata the official client reads. */
export type ChatCompletionReply = Omit<ChatCompletion, 'choices' | 'usage'> & {
  choices: (Omit<ChatCompletion.Choice, 'message'> & {
    message: ChatCompletionMessage & { reasoning?: string; reasoning_details?: ReasoningDetail[] }
  })[]
  usage?: ChatUsage
  openrouter_metadata?: Record<string, unknown>
}

/** Tiers as Chat Completions names them: the official client's fast tiers are priority capacity. */
const CHAT_TIER: Record<string, ChatCompletion['service_tier']> = {
  auto: 'auto',
  default: 'default',
  flex: 'flex',
  scale: 'scale',
  priority: 'priority',
  fast: 'priority',
  ultrafast: 'priority',
}

function chatUsage(response: ResponseObject): ChatUsage | undefined {
  const u = response.usage
  if (!u) return undefined
  return {
    prompt_tokens: u.input_tokens,
    completion_tokens: u.output_tokens,
    total_tokens: u.total_tokens,
    cost: u.cost,
    is_byok: u.is_byok,
    // In the Chat Completions names the official client reads.
    cost_details: {
      upstream_inference_cost: u.cost_details.upstream_inference_cost,
      upstream_inference_prompt_cost: u.cost_details.upstream_inference_input_cost,
      upstream_inference_completions_cost: u.cost_details.upstream_inference_output_cost,
    },
    prompt_tokens_details: {
      cached_tokens: u.input_tokens_details.cached_tokens,
      ...(u.input_tokens_details.cache_write_tokens
        ? { cache_write_tokens: u.input_tokens_details.cache_write_tokens }
        : {}),
    },
    completion_tokens_details: { reasoning_tokens: u.output_tokens_details.reasoning_tokens },
    ...(u.tokens_counted_by ? { tokens_counted_by: u.tokens_counted_by } : {}),
  }
}

/** A choice's `logprobs`: the content's tokens (the same shape in both formats); a refusal's are not reported. */
const chatLogprobs = (content: LogProb[]) => ({ content, refusal: null })

const metadataOf = (response: ResponseObject) =>
  response.openrouter_metadata ? { openrouter_metadata: response.openrouter_metadata } : {}

const DOOR = '/chat/completions'

/** A citation as OpenAI and OpenRouter give it on a Chat Completions message. */
type ChatAnnotation = ChatCompletionMessage.Annotation

/**
 * A url_citation as Chat Completions names it, its indices counted in the message's whole text
 * (`offset`: where its text part begins there). Other kinds of annotation have no Chat Completions
 * form, and are left out.
 */
function chatAnnotation(a: Annotation, offset: number): ChatAnnotation | undefined {
  if (a.type !== 'url_citation' || typeof a.url !== 'string') return undefined
  const at = (v: unknown) => (typeof v === 'number' ? v + offset : offset)
  return {
    type: 'url_citation',
    url_citation: {
      url: a.url,
      title: typeof a.title === 'string' ? a.title : '',
      start_index: at(a.start_index),
      end_index: at(a.end_index),
    },
  }
}

/** The finished Response as a `chat.completion`. */
export function toChatCompletion(response: ResponseObject, options: ChatReplyOptions): ChatCompletionReply {
  let text = ''
  let refusal = ''
  let reasoning = ''
  const details: ReasoningDetail[] = []
  let reasonings = 0
  const toolCalls: ChatToolCall[] = []
  const logprobs: LogProb[] = []
  const annotations: ChatAnnotation[] = []
  for (const item of response.output) {
    if (isProviderItem(item)) {
      const call = item[PROVIDER_ITEM].chatToolCall
      if (call) toolCalls.push(call as unknown as ChatToolCall)
      else leftOut(item, DOOR)
    } else if (item.type === 'message') {
      for (const p of item.content) {
        if (p.type === 'refusal') refusal += p.refusal
        else {
          for (const a of p.annotations) {
            const c = chatAnnotation(a, text.length)
            if (c) annotations.push(c)
          }
          text += p.text
          for (const l of p.logprobs) logprobs.push(l)
        }
      }
    } else if (item.type === 'reasoning') {
      reasoning += item.summary.map((s) => s.text).join('')
      details.push(...reasoningDetails(item, reasonings++))
    } else if (item.type === 'function_call')
      toolCalls.push({ id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments } })
  }
  const message: ChatCompletionReply['choices'][number]['message'] = {
    role: 'assistant',
    content: text || (toolCalls.length || refusal ? null : ''),
    refusal: refusal || null,
  }
  if (reasoning && !options.hideReasoning) message.reasoning = reasoning
  if (details.length && !options.hideReasoning) message.reasoning_details = details
  if (toolCalls.length) message.tool_calls = toolCalls
  if (annotations.length) message.annotations = annotations
  return {
    id: chatId(response.id),
    object: 'chat.completion',
    created: response.created_at,
    model: response.model,
    choices: [
      {
        index: 0,
        message,
        finish_reason: FINISH[stopReasonOf(response)],
        logprobs: logprobs.length ? chatLogprobs(logprobs) : null,
      },
    ],
    usage: chatUsage(response),
    // A string: the openai client's type has no null here, and the official client's requires the key.
    system_fingerprint: SYSTEM_FINGERPRINT,
    ...(response.service_tier ? { service_tier: CHAT_TIER[response.service_tier] ?? 'default' } : {}),
    ...metadataOf(response),
  }
}

/** A whole completion of an `openai-chat` endpoint's, answered as it came (chat-pass-through.ts). */
export const chatPassThrough = chatWhole({ usage: (r) => chatUsage(r), idOf: chatId, fingerprint: SYSTEM_FINGERPRINT })

/** The engine's events as `chat.completion.chunk`s, ending with `data: [DONE]`. */
export class ChatCompletionStream implements DoorStream, ChatDoorParts {
  private head = ''
  private readonly toolIndex = new Map<string, number>()
  /** Each reasoning item's place among the reply's reasoning items (reasoning_details' `index`). */
  private readonly reasonings = new Map<string, number>()
  /** The length of the text sent so far, and where each text part began in it (for annotations' indices). */
  private sent = 0
  private readonly partStart = new Map<string, number>()

  constructor(private readonly options: ChatReplyOptions) {}

  open(started: StreamStart): string {
    this.begin(started)
    return this.delta('{"role":"assistant","content":""}')
  }

  begin(started: StreamStart) {
    this.head = `{"id":${JSON.stringify(chatId(started.id))},"object":"chat.completion.chunk","created":${started.createdAt},"model":${JSON.stringify(started.model)},"choices":`
  }

  passThrough(protocol: string): PassThroughStream | undefined {
    return protocol === 'openai-chat' ? new ChatPassThrough(this) : undefined
  }

  readonly idOf = chatId
  readonly fingerprint = SYSTEM_FINGERPRINT
  usage(response: ResponseObject) {
    return chatUsage(response)
  }

  event(e: ItemEvent): string {
    switch (e.type) {
      case 'response.content_part.added':
        this.partStart.set(`${e.item_id}:${e.content_index}`, this.sent)
        return ''
      case 'response.output_text.delta':
        this.sent += e.delta.length
        return this.delta(`{"content":${JSON.stringify(e.delta)}}`, e.logprobs)
      case 'response.output_text.annotation.added': {
        const a = chatAnnotation(e.annotation, this.partStart.get(`${e.item_id}:${e.content_index}`) ?? 0)
        return a ? this.delta(JSON.stringify({ annotations: [a] })) : ''
      }
      case 'response.refusal.delta':
        return this.delta(`{"refusal":${JSON.stringify(e.delta)}}`)
      case 'response.reasoning_summary_text.delta': {
        if (this.options.hideReasoning) return ''
        const text = JSON.stringify(e.delta)
        return this.delta(
          `{"reasoning":${text},"reasoning_details":[{"type":"reasoning.text","text":${text},"index":${this.reasoningIndex(e.item_id)}}]}`,
        )
      }
      case 'response.output_item.added': {
        const item = e.item
        // A call of another kind is written whole once it is done.
        if (isProviderItem(item)) return item[PROVIDER_ITEM].chatToolCall ? '' : leftOut(item, DOOR) && ''
        if (item.type !== 'function_call') return ''
        const index = this.toolIndex.size
        this.toolIndex.set(item.id, index)
        return this.delta(
          JSON.stringify({
            tool_calls: [{ index, id: item.call_id, type: 'function', function: { name: item.name, arguments: '' } }],
          }),
        )
      }
      case 'response.output_item.done': {
        // A reasoning item's state (a signature, redacted or encrypted data) comes when it is done.
        const item = e.item
        const call = isProviderItem(item) ? item[PROVIDER_ITEM].chatToolCall : undefined
        if (call) {
          const index = this.toolIndex.size
          this.toolIndex.set(item.id ?? `other:${index}`, index)
          return this.delta(JSON.stringify({ tool_calls: [{ index, ...call }] }))
        }
        if (item.type !== 'reasoning' || this.options.hideReasoning || isProviderItem(item)) return ''
        const detail = reasoningStateDetail(item as ReasoningItem, this.reasoningIndex(item.id))
        return detail ? this.delta(JSON.stringify({ reasoning_details: [detail] })) : ''
      }
      case 'response.function_call_arguments.delta': {
        const index = this.toolIndex.get(e.item_id)
        return index === undefined
          ? ''
          : this.delta(JSON.stringify({ tool_calls: [{ index, function: { arguments: e.delta } }] }))
      }
      default:
        return ''
    }
  }

  /**
   * Taking over from the provider's chunks (chat-pass-through.ts): the calls' indices, the reasoning
   * items' places and the text's length (for annotations) as the output so far has them.
   */
  resume(output: readonly unknown[]) {
    for (const item of output as OutputItem[]) {
      if (isProviderItem(item)) {
        if (item[PROVIDER_ITEM].chatToolCall)
          this.toolIndex.set(item.id ?? `other:${this.toolIndex.size}`, this.toolIndex.size)
      } else if (item.type === 'function_call') this.toolIndex.set(item.id, this.toolIndex.size)
      else if (item.type === 'reasoning') this.reasoningIndex(item.id)
      else if (item.type === 'message')
        item.content.forEach((part, i) => {
          if (part.type !== 'output_text') return
          this.partStart.set(`${item.id}:${i}`, this.sent)
          this.sent += part.text.length
        })
    }
  }

  private reasoningIndex(itemId: string): number {
    let index = this.reasonings.get(itemId)
    if (index === undefined) this.reasonings.set(itemId, (index = this.reasonings.size))
    return index
  }

  end(response: ResponseObject): string {
    // The usage, always, in the last chunk before [DONE] (`choices: []`), as OpenRouter sends it:
    // `stream_options.include_usage` and `usage.include` are accepted and change nothing, and clients
    // made for OpenRouter (@openrouter/ai-sdk-provider) send neither and read the usage there.
    return `${this.finishChunk(response)}${this.usageChunk(response)}${DONE}`
  }

  finishChunk(response: ResponseObject): string {
    return sseEvent(
      `${this.head}[{"index":0,"delta":{},"finish_reason":${JSON.stringify(FINISH[stopReasonOf(response)])}}]}`,
    )
  }

  usageChunk(response: ResponseObject): string {
    return sseEvent(`${this.head}[],"usage":${JSON.stringify(chatUsage(response))}}`)
  }

  fail(err: GatewayError): string {
    // As the official client reads a failure mid-stream: a chunk with `error`, its choice finished with `error`.
    const { error } = gatewayErrorBody(err.errorType, err.message, err.status, err.metadata)
    return `${sseEvent(`${this.head}[{"index":0,"delta":{},"finish_reason":"error"}],"error":${JSON.stringify(error)}}`)}${DONE}`
  }

  keepalive(): string {
    return SSE_COMMENT
  }

  /** A chunk of one delta, with the log probabilities of its tokens where the endpoint gave them. */
  private delta(delta: string, logprobs?: LogProb[]): string {
    const lp = logprobs?.length ? `,"logprobs":${JSON.stringify(chatLogprobs(logprobs))}` : ''
    return sseEvent(`${this.head}[{"index":0,"delta":${delta}${lp},"finish_reason":null}]}`)
  }
}
