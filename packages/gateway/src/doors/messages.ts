import type {
  ContentBlock as ClientContentBlock,
  Message,
  MessageDeltaUsage,
  RawContentBlockDeltaEvent,
  TextBlock,
  TextCitation,
  Usage,
} from '@anthropic-ai/sdk/resources/messages'
import { z } from 'zod'
import { anthropicErrorBody } from '@roster/protocol'
import { sseEvent } from '@roster/protocol'
import { invalid, type GatewayError } from '../errors.js'
import { ServiceTier, sparseParser, type InputItem, type ResponsesRequest } from '../request.js'
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
import { estimateInputTokens } from '../token-estimate.js'
import type { DoorStream, StreamStart } from './door.js'
import { leftOut } from './provider-items.js'

// POST /messages: the Anthropic Messages request and reply (and its event stream), translated to
// the engine's neutral request on the way in and from the engine's Response and events on the way
// out, so a Messages request may be served by a model of any protocol.

/** A JSON object as sent (a content block), or built up field by field before it is handed on as its type. */
type Fields = Record<string, unknown>
/**
 * A content block as the Anthropic API sends it: a text block without `citations` unless there are
 * some. The client's type has `citations: null` where the API sends nothing, and a reply that sends
 * the null is refused whole by clients that read the API, not that type (@ai-sdk/anthropic 3).
 */
type ContentBlock = Exclude<ClientContentBlock, TextBlock> | Omit<TextBlock, 'citations'>
type BlockIn = z.infer<typeof Block>

const CacheControl = z.looseObject({ type: z.literal('ephemeral'), ttl: z.enum(['5m', '1h']).optional() })
const Block = z.looseObject({ type: z.string().min(1) })
const Content = z.union([z.string(), z.array(Block)])
const SystemBlock = z.looseObject({
  type: z.literal('text'),
  text: z.string(),
  cache_control: CacheControl.nullable().optional(),
})
const ClientTool = z.looseObject({
  type: z.literal('custom').optional(),
  name: z.string().min(1).max(64),
  description: z.string().optional(),
  input_schema: z.record(z.string(), z.unknown()),
  cache_control: CacheControl.nullable().optional(),
})
/**
 * Client tools are checked; a typed tool is a server tool, which goes to the engine: `openrouter:<name>`
 * ones are Roster's; a provider's own (web_search_20250305…) it leaves out, with a warning.
 */
const Tool = z.union([ClientTool, z.looseObject({ type: z.string().min(1) })])
const ToolChoice = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('auto'), disable_parallel_tool_use: z.boolean().optional() }),
  z.looseObject({ type: z.literal('any'), disable_parallel_tool_use: z.boolean().optional() }),
  z.looseObject({
    type: z.literal('tool'),
    name: z.string().min(1),
    disable_parallel_tool_use: z.boolean().optional(),
  }),
  z.looseObject({ type: z.literal('none') }),
])
const Thinking = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('enabled'), budget_tokens: z.int().min(1) }),
  z.looseObject({ type: z.literal('disabled') }),
  z.looseObject({ type: z.literal('adaptive') }),
])

export const MessagesRequest = z.looseObject({
  model: z.string().min(1).max(200),
  models: z.array(z.string().min(1).max(200)).max(16).optional(),
  max_tokens: z.int().min(1),
  // `system` inside the conversation: Anthropic's mid-conversation system messages (the SDK's
  // BetaSystemMessageParam), which Claude Code sends.
  messages: z
    .array(z.looseObject({ role: z.enum(['user', 'assistant', 'system']), content: Content }))
    .min(1, 'give at least one message'),
  system: z.union([z.string(), z.array(SystemBlock)]).optional(),
  stop_sequences: z.array(z.string()).max(4, 'at most 4 stop sequences').optional(),
  stream: z.boolean().optional(),
  temperature: z.number().min(0).max(1).optional(),
  top_p: z.number().min(0).max(1).optional(),
  top_k: z.int().min(0).optional(),
  tools: z.array(Tool).max(128).optional(),
  tool_choice: ToolChoice.optional(),
  thinking: Thinking.optional(),
  metadata: z.looseObject({ user_id: z.string().max(256).nullable().optional() }).optional(),
  service_tier: z.union([z.enum(['auto', 'standard_only']), ServiceTier]).optional(),
  // The official client's extensions, as on the other doors.
  provider: z.looseObject({}).nullable().optional(),
  session_id: z.string().max(256).optional(),
  plugins: z.array(z.looseObject({ id: z.string().min(1) })).optional(),
  route: z.enum(['fallback', 'sort']).nullable().optional(),
  trace: z.record(z.string(), z.unknown()).optional(),
  cache_control: CacheControl.optional(),
})
export type MessagesRequest = z.infer<typeof MessagesRequest>
/** `MessagesRequest.safeParse`, checking only the fields the request carries. */
export const parseMessagesRequest = sparseParser<MessagesRequest>(MessagesRequest.shape)

/** POST /messages/count_tokens: a Messages request with neither max_tokens nor stream. */
export const CountTokensRequest = MessagesRequest.omit({ max_tokens: true, stream: true })
export type CountTokensRequest = z.infer<typeof CountTokensRequest>
export const parseCountTokensRequest = sparseParser<CountTokensRequest>(CountTokensRequest.shape)

/**
 * A Messages request's input tokens, as Anthropic's count_tokens answers: Roster's estimate
 * (token-estimate.ts), the same as a stream's message_start gives before a provider has counted;
 * no provider is asked, and what is billed is always the provider's count.
 */
export const countTokens = (req: CountTokensRequest) => ({
  input_tokens: estimateInputTokens(messagesToNeutral({ ...req, max_tokens: 1 })),
})

const SAME = [
  'model',
  'models',
  'temperature',
  'top_p',
  'top_k',
  'provider',
  'session_id',
  'plugins',
  'route',
  'trace',
  'cache_control',
] as const

const cache = (b: Fields) => (b.cache_control ? { cache_control: b.cache_control } : {})

function imageUrl(b: BlockIn, where: string): string {
  const s = b.source as Fields | undefined
  if (s?.type === 'base64' && typeof s.media_type === 'string' && typeof s.data === 'string')
    return `data:${s.media_type};base64,${s.data}`
  if (s?.type === 'url' && typeof s.url === 'string') return s.url
  throw invalid(`${where}/source an image needs a base64 source (media_type, data) or a url source`)
}

/**
 * A tool result's content as the function call's output: its text, or with images (a screenshot a
 * tool read) its parts in order, which routing sends only to an endpoint that takes them.
 */
function resultOutput(content: unknown, isError: boolean, where: string): string | Fields[] {
  const prefix = isError ? 'Error: ' : ''
  if (content === undefined || content === null) return prefix
  if (typeof content === 'string') return prefix + content
  if (!Array.isArray(content)) throw invalid(`${where}/content must be a string or content blocks`)
  const parts = content.map((b: BlockIn, i): Fields => {
    if (b.type === 'text') return { type: 'input_text', text: String(b.text ?? '') }
    if (b.type === 'image') return { type: 'input_image', image_url: imageUrl(b, `${where}/content/${i}`) }
    throw invalid(
      `${where}/content/${i} tool results of type ${String(b.type)} are not served by this Roster (served: text, image)`,
    )
  })
  if (!parts.some((p) => p.type === 'input_image')) return prefix + parts.map((p) => p.text).join('')
  return prefix ? [{ type: 'input_text', text: prefix }, ...parts] : parts
}

/** A system message's content: its text, as a string or text blocks (nothing else instructs). */
function systemContent(content: string | BlockIn[], where: string): string | ({ type: string } & Fields)[] {
  if (typeof content === 'string') return content
  return content.map((b, j) => {
    if (b.type !== 'text' || typeof b.text !== 'string')
      throw invalid(`${where}/content/${j} a system message holds text blocks only`)
    return { type: 'input_text', text: b.text, ...cache(b) }
  })
}

type ClientToolIn = z.infer<typeof ClientTool>
const isClientTool = (t: NonNullable<MessagesRequest['tools']>[number]): t is ClientToolIn =>
  !t.type || t.type === 'custom'

/** The Messages request as the engine's neutral request. */
export function messagesToNeutral(req: MessagesRequest): ResponsesRequest {
  const out: Fields = { stream: req.stream === true, max_output_tokens: req.max_tokens }
  for (const k of SAME) if (req[k] != null) out[k] = req[k]
  if (req.stop_sequences?.length) out.stop = req.stop_sequences
  if (req.metadata?.user_id) out.user = req.metadata.user_id
  // Anthropic's `standard_only` is the default tier; its `auto` and the official client's tiers are the engine's own.
  if (req.service_tier) out.service_tier = req.service_tier === 'standard_only' ? 'default' : req.service_tier

  const input: InputItem[] = []
  if (req.system !== undefined) {
    input.push({
      role: 'system',
      content:
        typeof req.system === 'string'
          ? req.system
          : req.system.map((b) => ({ type: 'input_text', text: b.text, ...cache(b) })),
    })
  }
  req.messages.forEach((m, i) => {
    const where = `/messages/${i}`
    if (m.role === 'system') {
      // Where it stands in the conversation: each protocol's adapter carries it as a system (or
      // developer) message there, or folds it into the instructions where the provider has no other place.
      input.push({ role: 'system', content: systemContent(m.content, where) })
      return
    }
    if (typeof m.content === 'string') {
      input.push(
        m.role === 'user'
          ? { role: 'user', content: m.content }
          : { role: 'assistant', content: [{ type: 'output_text', text: m.content }] },
      )
      return
    }
    let parts: ({ type: string } & Fields)[] = []
    const flush = () => {
      if (parts.length) input.push({ role: m.role, content: parts })
      parts = []
    }
    m.content.forEach((b, j) => {
      const at = `${where}/content/${j}`
      switch (b.type) {
        case 'text':
          parts.push({
            type: m.role === 'user' ? 'input_text' : 'output_text',
            text: String(b.text ?? ''),
            ...cache(b),
          })
          return
        case 'image':
          if (m.role !== 'user') throw invalid(`${at} images belong in user messages`)
          parts.push({ type: 'input_image', image_url: imageUrl(b, at), ...cache(b) })
          return
        case 'tool_use':
          if (m.role !== 'assistant') throw invalid(`${at} tool_use belongs in assistant messages`)
          flush()
          input.push({
            type: 'function_call',
            call_id: String(b.id),
            name: String(b.name),
            arguments: JSON.stringify(b.input ?? {}),
          })
          return
        case 'tool_result':
          if (m.role !== 'user') throw invalid(`${at} tool_result belongs in user messages`)
          if (typeof b.tool_use_id !== 'string' || !b.tool_use_id) throw invalid(`${at}/tool_use_id is required`)
          flush()
          input.push({
            type: 'function_call_output',
            call_id: b.tool_use_id,
            output: resultOutput(b.content, b.is_error === true, at),
          })
          return
        case 'thinking':
        case 'redacted_thinking': {
          // Earlier reasoning goes back as it came (Anthropic requires a tool loop's thinking, signed):
          // a reasoning item, the signature (or the redacted data) as its state.
          if (m.role !== 'assistant') throw invalid(`${at} ${b.type} belongs in assistant messages`)
          flush()
          const state = b.type === 'thinking' ? b.signature : b.data
          input.push({
            type: 'reasoning',
            summary: b.type === 'thinking' ? [{ type: 'summary_text', text: String(b.thinking ?? '') }] : [],
            ...(typeof state === 'string' && state ? { encrypted_content: state } : {}),
          })
          return
        }
        case 'server_tool_use':
        case 'mcp_tool_use':
          // A tool the provider ran (the reply gave it back): its state too; the text after it holds its result.
          if (m.role !== 'assistant') throw invalid(`${at} ${b.type} belongs in assistant messages`)
          return
        default:
          if (m.role === 'assistant' && b.type !== 'tool_result' && b.type.endsWith('_tool_result')) return
          throw invalid(
            `${at} content blocks of type ${b.type} are not served by this Roster (served: text, image, tool_use, tool_result, thinking, redacted_thinking, and in assistant messages the server tools' blocks)`,
          )
      }
    })
    flush()
  })
  out.input = input

  if (req.tools?.length) {
    out.tools = req.tools.map((t) =>
      isClientTool(t)
        ? {
            type: 'function',
            name: t.name,
            description: t.description,
            parameters: t.input_schema,
            ...(t.strict != null ? { strict: t.strict } : {}),
          }
        : t,
    )
  }
  const choice = req.tool_choice
  if (choice) {
    out.tool_choice =
      choice.type === 'auto'
        ? 'auto'
        : choice.type === 'any'
          ? 'required'
          : choice.type === 'none'
            ? 'none'
            : { type: 'function', name: choice.name }
    if ('disable_parallel_tool_use' in choice && choice.disable_parallel_tool_use) out.parallel_tool_calls = false
  }
  if (req.thinking?.type === 'enabled') out.reasoning = { enabled: true, max_tokens: req.thinking.budget_tokens }
  else if (req.thinking?.type === 'adaptive') out.reasoning = { enabled: true }
  else if (req.thinking?.type === 'disabled') out.reasoning = { enabled: false }
  return out as ResponsesRequest
}

const STOP: Record<StopReason, NonNullable<Message['stop_reason']>> = {
  stop: 'end_turn',
  tool_calls: 'tool_use',
  length: 'max_tokens',
  content_filter: 'refusal',
}

export const messageId = (responseId: string) => `msg_${responseId.replace(/^resp_/, '')}`

/** Beyond Anthropic's fields, as the official client reads it on every door: the cost in USD. */
type Cost = { cost?: number }

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
export class MessagesStream implements DoorStream {
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
