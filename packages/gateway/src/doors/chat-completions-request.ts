import { z } from 'zod'

import { invalid } from '../errors.js'
import {
  Metadata,
  ServiceTier,
  sparseParser,
  StopCondition,
  type InputItem,
  type ResponsesRequest,
} from '../request.js'

import { reasoningFromDetails } from './reasoning-details.js'

// POST /chat/completions, the way in: the OpenAI Chat Completions request, with the extensions the
// official client (`client.chat.send`) sends, checked and translated to the engine's neutral request
// (chat-completions.ts: the way out).

/** A JSON object built up field by field before it is handed on as its type. */
export type Fields = Record<string, unknown>

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
