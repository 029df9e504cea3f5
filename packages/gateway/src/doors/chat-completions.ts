import type {
  ChatCompletion,
  ChatCompletionMessage,
  ChatCompletionMessageFunctionToolCall,
} from 'openai/resources/chat/completions'
import type { CompletionUsage } from 'openai/resources/completions'
import { z } from 'zod'
import { gatewayErrorBody } from '@roster/protocol'
import { SSE_COMMENT, sseEvent } from '@roster/protocol'
import { invalid, type GatewayError } from '../errors.js'
import {
  Metadata,
  ServiceTier,
  sparseParser,
  StopCondition,
  type InputItem,
  type ResponsesRequest,
} from '../request.js'
import {
  isProviderItem,
  stopReasonOf,
  type ReasoningItem,
  type Annotation,
  type ItemEvent,
  type LogProb,
  type ResponseObject,
  type StopReason,
} from '../wire.js'
import type { DoorStream, StreamStart } from './door.js'
import { leftOut } from './provider-items.js'
import {
  reasoningDetails,
  reasoningFromDetails,
  reasoningStateDetail,
  type ReasoningDetail,
} from './reasoning-details.js'

/** The end of a chat completions stream. */
const DONE = sseEvent('[DONE]')

// POST /chat/completions: the OpenAI Chat Completions request and reply, with the extensions the
// official client (`client.chat.send`) sends. Translated to the engine's neutral request on the way
// in, and from the engine's Response and events on the way out.

/** A JSON object built up field by field before it is handed on as its type. */
type Fields = Record<string, unknown>

const CacheControl = z.looseObject({ type: z.literal('ephemeral'), ttl: z.enum(['5m', '1h']).optional() })
const Part = z.looseObject({ type: z.string().min(1) })
const Content = z.union([z.string(), z.array(Part)])
const ToolCall = z.looseObject({
  id: z.string().min(1).max(256),
  type: z.literal('function').optional(),
  function: z.looseObject({ name: z.string().min(1).max(64), arguments: z.string() }),
})
const Message = z.discriminatedUnion('role', [
  z.looseObject({ role: z.literal('system'), content: Content }),
  z.looseObject({ role: z.literal('developer'), content: Content }),
  z.looseObject({ role: z.literal('user'), content: Content }),
  z.looseObject({
    role: z.literal('assistant'),
    content: Content.nullable().optional(),
    tool_calls: z.array(ToolCall).optional(),
    refusal: z.string().nullable().optional(),
    /** OpenRouter's: the reasoning items given back (reasoning-details.ts checks them). */
    reasoning_details: z.array(z.unknown()).nullable().optional(),
  }),
  z.looseObject({ role: z.literal('tool'), tool_call_id: z.string().min(1).max(256), content: Content }),
])
const FunctionTool = z.looseObject({
  type: z.literal('function'),
  function: z.looseObject({
    name: z.string().min(1).max(64),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
    strict: z.boolean().nullable().optional(),
  }),
})
/** Function tools are checked; server tools (`openrouter:<name>`) go to the engine, which serves or refuses them by kind. */
const Tool = z.union([
  FunctionTool,
  z
    .looseObject({ type: z.string().min(1) })
    .refine((t) => t.type !== 'function', 'a function tool needs function.name'),
])
const ToolChoice = z.union([
  z.enum(['auto', 'none', 'required']),
  z.looseObject({ type: z.literal('function'), function: z.looseObject({ name: z.string().min(1) }) }),
])
const ResponseFormat = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('text') }),
  z.looseObject({ type: z.literal('json_object') }),
  z.looseObject({
    type: z.literal('json_schema'),
    json_schema: z.looseObject({
      name: z.string().min(1).max(64),
      description: z.string().optional(),
      schema: z.record(z.string(), z.unknown()).optional(),
      strict: z.boolean().nullable().optional(),
    }),
  }),
  z.looseObject({ type: z.literal('grammar') }).refine(() => false, 'grammar formats are not served by this Roster'),
  z.looseObject({ type: z.literal('python') }).refine(() => false, 'python formats are not served by this Roster'),
])
const Effort = z.enum(['max', 'xhigh', 'high', 'medium', 'low', 'minimal', 'none'])

export const ChatCompletionFields = z.looseObject({
  model: z.string().min(1).max(200).optional(),
  models: z.array(z.string().min(1).max(200)).max(16).optional(),
  messages: z.array(Message).min(1, 'give at least one message'),
  stream: z.boolean().nullable().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullable().optional() }).nullable().optional(),
  max_tokens: z.int().min(1).nullable().optional(),
  max_completion_tokens: z.int().min(1).nullable().optional(),
  temperature: z.number().min(0).max(2).nullable().optional(),
  top_p: z.number().min(0).max(1).nullable().optional(),
  top_k: z.int().min(0).nullable().optional(),
  frequency_penalty: z.number().min(-2).max(2).nullable().optional(),
  presence_penalty: z.number().min(-2).max(2).nullable().optional(),
  seed: z.int().nullable().optional(),
  stop: z
    .union([z.string(), z.array(z.string()).max(4, 'at most 4 stop sequences')])
    .nullable()
    .optional(),
  n: z
    .int()
    .min(1)
    .nullable()
    .refine((n) => n == null || n === 1, 'n > 1 is not served by this Roster: send the request n times')
    .optional(),
  logprobs: z.boolean().nullable().optional(),
  top_logprobs: z.int().min(0).max(20).nullable().optional(),
  tools: z.array(Tool).max(128).optional(),
  tool_choice: ToolChoice.optional(),
  parallel_tool_calls: z.boolean().nullable().optional(),
  response_format: ResponseFormat.optional(),
  reasoning: z
    .looseObject({
      effort: Effort.nullable().optional(),
      max_tokens: z.int().min(0).nullable().optional(),
      enabled: z.boolean().nullable().optional(),
      exclude: z.boolean().nullable().optional(),
      summary: z.enum(['auto', 'concise', 'detailed']).nullable().optional(),
    })
    .optional(),
  reasoning_effort: Effort.nullable().optional(),
  user: z.string().max(256).optional(),
  session_id: z.string().max(256).optional(),
  metadata: Metadata.optional(),
  service_tier: ServiceTier.nullable().optional(),
  provider: z.looseObject({}).nullable().optional(),
  route: z.enum(['fallback', 'sort']).nullable().optional(),
  plugins: z.array(z.looseObject({ id: z.string().min(1) })).optional(),
  usage: z.looseObject({ include: z.boolean().optional() }).optional(),
  prompt_cache_key: z.string().max(256).nullable().optional(),
  cache_control: CacheControl.optional(),
  stop_server_tools_when: z.array(StopCondition).min(1).optional(),
  modalities: z.array(z.enum(['text', 'image', 'audio'])).optional(),
  trace: z.record(z.string(), z.unknown()).optional(),
  debug: z.looseObject({ echo_upstream_body: z.boolean().optional() }).optional(),
})
function needsModel(r: { model?: string; models?: string[] }, ctx: z.RefinementCtx) {
  if (r.model === undefined && !r.models?.length)
    ctx.addIssue({ code: 'custom', path: ['model'], message: 'give model or models' })
}
export const ChatCompletionRequest = ChatCompletionFields.superRefine(needsModel)
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequest>
/** `ChatCompletionRequest.safeParse`, checking only the fields the request carries. */
export const parseChatCompletionRequest = sparseParser<ChatCompletionRequest>(ChatCompletionFields.shape, needsModel)

/** Fields that mean the same in both requests. */
const SAME = [
  'model',
  'models',
  'temperature',
  'top_p',
  'top_k',
  'frequency_penalty',
  'presence_penalty',
  'stop',
  'parallel_tool_calls',
  'user',
  'session_id',
  'metadata',
  'service_tier',
  'provider',
  'route',
  'plugins',
  'prompt_cache_key',
  'cache_control',
  'stop_server_tools_when',
  'trace',
  'debug',
] as const

type ContentPart = z.infer<typeof Part>
type ContentPartNeutral = { type: string } & Fields

/** A user or system part in the neutral form. */
function inputPart(p: ContentPart, where: string): ContentPartNeutral {
  switch (p.type) {
    case 'text':
      return {
        type: 'input_text',
        text: String(p.text ?? ''),
        ...(p.cache_control ? { cache_control: p.cache_control } : {}),
      }
    case 'image_url': {
      const image = p.image_url as string | { url?: unknown; detail?: unknown } | undefined
      const url = typeof image === 'string' ? image : image?.url
      if (typeof url !== 'string' || !url) throw invalid(`${where}/image_url needs a url (https: or data:)`)
      const detail = typeof image === 'object' ? image.detail : undefined
      return { type: 'input_image', image_url: url, ...(detail ? { detail } : {}) }
    }
    default:
      throw invalid(`${where} content parts of type ${p.type} are not served by this Roster (served: text, image_url)`)
  }
}
const inputContent = (content: string | ContentPart[], where: string) =>
  typeof content === 'string' ? content : content.map((p, i) => inputPart(p, `${where}/content/${i}`))
const textOf = (content: string | ContentPart[] | null | undefined) =>
  typeof content === 'string'
    ? content
    : (content ?? []).map((p) => (p.type === 'text' ? String(p.text ?? '') : '')).join('')

type FunctionToolIn = z.infer<typeof FunctionTool>
const isFunctionTool = (t: NonNullable<ChatCompletionRequest['tools']>[number]): t is FunctionToolIn =>
  t.type === 'function'

/** The Chat Completions request as the engine's neutral request. */
export function chatToNeutral(req: ChatCompletionRequest): ResponsesRequest {
  const out: Fields = { stream: req.stream === true }
  for (const k of SAME) if (req[k] != null) out[k] = req[k]
  const maxTokens = req.max_completion_tokens ?? req.max_tokens
  if (maxTokens != null) out.max_output_tokens = maxTokens
  // Asked as Open Responses asks: include the output text's log probabilities, with this many alternatives.
  if (req.logprobs) {
    out.include = ['message.output_text.logprobs']
    out.top_logprobs = req.top_logprobs ?? 0
  }
  if (req.modalities?.includes('audio')) throw invalid('/modalities audio output is not served by this Roster')
  if (req.modalities) out.modalities = req.modalities

  const input: InputItem[] = []
  req.messages.forEach((m, i) => {
    const where = `/messages/${i}`
    switch (m.role) {
      case 'system':
      case 'developer':
      case 'user':
        input.push({ role: m.role, content: inputContent(m.content, where) })
        return
      case 'assistant': {
        // Its reasoning first, as it came before the text and calls.
        input.push(...reasoningFromDetails(m.reasoning_details, where))
        const text = textOf(m.content)
        if (text) input.push({ role: 'assistant', content: [{ type: 'output_text', text }] })
        for (const call of m.tool_calls ?? [])
          input.push({
            type: 'function_call',
            call_id: call.id,
            name: call.function.name,
            arguments: call.function.arguments,
          })
        return
      }
      case 'tool':
        input.push({ type: 'function_call_output', call_id: m.tool_call_id, output: textOf(m.content) })
    }
  })
  out.input = input

  if (req.tools?.length) {
    out.tools = req.tools.map((t) =>
      isFunctionTool(t)
        ? {
            type: 'function',
            name: t.function.name,
            description: t.function.description,
            parameters: t.function.parameters,
            strict: t.function.strict,
          }
        : t,
    )
  }
  if (req.tool_choice !== undefined)
    out.tool_choice =
      typeof req.tool_choice === 'string' ? req.tool_choice : { type: 'function', name: req.tool_choice.function.name }
  const format = req.response_format
  if (format && format.type !== 'text') {
    out.text = {
      format:
        format.type === 'json_schema' && 'json_schema' in format
          ? {
              type: 'json_schema',
              name: format.json_schema.name,
              description: format.json_schema.description,
              schema: format.json_schema.schema ?? {},
              strict: format.json_schema.strict ?? false,
            }
          : { type: 'json_object' },
    }
  }
  const effort = req.reasoning?.effort ?? req.reasoning_effort
  if (req.reasoning || effort) {
    const r: Fields = {}
    if (effort) r.effort = effort
    if (req.reasoning?.max_tokens != null) r.max_tokens = req.reasoning.max_tokens
    if (req.reasoning?.enabled != null) r.enabled = req.reasoning.enabled
    if (req.reasoning?.summary) r.summary = req.reasoning.summary
    out.reasoning = r
  }
  return out as ResponsesRequest
}

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
  const toolCalls: ChatCompletionMessageFunctionToolCall[] = []
  const logprobs: LogProb[] = []
  const annotations: ChatAnnotation[] = []
  for (const item of response.output) {
    if (isProviderItem(item)) leftOut(item, DOOR)
    else if (item.type === 'message') {
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

/** The engine's events as `chat.completion.chunk`s, ending with `data: [DONE]`. */
export class ChatCompletionStream implements DoorStream {
  private head = ''
  private readonly toolIndex = new Map<string, number>()
  /** Each reasoning item's place among the reply's reasoning items (reasoning_details' `index`). */
  private readonly reasonings = new Map<string, number>()
  /** The length of the text sent so far, and where each text part began in it (for annotations' indices). */
  private sent = 0
  private readonly partStart = new Map<string, number>()

  constructor(private readonly options: ChatReplyOptions) {}

  open(started: StreamStart): string {
    this.head = `{"id":${JSON.stringify(chatId(started.id))},"object":"chat.completion.chunk","created":${started.createdAt},"model":${JSON.stringify(started.model)},"choices":`
    return this.delta('{"role":"assistant","content":""}')
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
        if (isProviderItem(item)) return leftOut(item, DOOR) && ''
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

  private reasoningIndex(itemId: string): number {
    let index = this.reasonings.get(itemId)
    if (index === undefined) this.reasonings.set(itemId, (index = this.reasonings.size))
    return index
  }

  end(response: ResponseObject): string {
    const out = sseEvent(
      `${this.head}[{"index":0,"delta":{},"finish_reason":${JSON.stringify(FINISH[stopReasonOf(response)])}}]}`,
    )
    // The usage, always, in the last chunk before [DONE] (`choices: []`), as OpenRouter sends it:
    // `stream_options.include_usage` and `usage.include` are accepted and change nothing, and clients
    // made for OpenRouter (@openrouter/ai-sdk-provider) send neither and read the usage there.
    return `${out}${sseEvent(`${this.head}[],"usage":${JSON.stringify(chatUsage(response))}}`)}${DONE}`
  }

  fail(err: GatewayError): string {
    // As the official client reads a failure mid-stream: a chunk with `error`, its choice finished with `error`.
    const { error } = gatewayErrorBody(err.errorType, err.message, err.status)
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
