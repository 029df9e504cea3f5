import { z } from 'zod'

import { invalid } from '../errors.js'
import { ServiceTier, sparseParser, type InputItem, type ResponsesRequest } from '../request.js'

import { estimateInputTokens } from '../token-estimate.js'

// POST /messages, the way in: the Anthropic Messages request (and count_tokens'), checked and
// translated to the engine's neutral request, so a Messages request may be served by a model of any
// protocol (messages.ts: the way out).

/** A JSON object as sent (a content block), or built up field by field before it is handed on as its type. */
export type Fields = Record<string, unknown>
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

/** Structured outputs: the JSON schema the reply's text must follow. */
const OutputFormat = z.looseObject({ type: z.literal('json_schema'), schema: z.record(z.string(), z.unknown()) })

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
  // How the reply is written: its structured output's schema, and how hard the model works (the effort beta).
  output_config: z.looseObject({ format: OutputFormat.optional(), effort: z.string().max(32).optional() }).optional(),
  /** The structured-outputs beta's name for output_config.format (@ai-sdk/anthropic sends it). */
  output_format: OutputFormat.optional(),
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

/** The reasoning efforts the neutral request names (request.ts). */
const EFFORTS = new Set(['max', 'xhigh', 'high', 'medium', 'low', 'minimal', 'none'])

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
  // Features of Anthropic's betas every protocol can carry: the output's schema, the effort.
  const format = req.output_config?.format ?? req.output_format
  if (format) out.text = { format: { type: 'json_schema', name: 'output', schema: format.schema, strict: true } }
  // An effort the neutral request has no name for is left out (each protocol's adapter writes the effort it takes).
  const effort = req.output_config?.effort
  if (effort && EFFORTS.has(effort)) out.reasoning = { ...(out.reasoning as Fields | undefined), effort }
  return out as ResponsesRequest
}
