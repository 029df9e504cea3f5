import type {
  ChatCompletion,
  ChatCompletionAssistantMessageParam,
  ChatCompletionChunk,
  ChatCompletionContentPartImage,
  ChatCompletionContentPartText,
  ChatCompletionCreateParams,
  ChatCompletionMessageFunctionToolCall,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions'
import type { CompletionUsage } from 'openai/resources/completions'
import type { CacheMark, Entry, Part } from '../conversation.js'
import { logprobsOf, type Delta, type Finish } from '../deltas.js'
import { gatewayError } from '../errors.js'
import { copyGiven, type Adapter, type AsSent, type CallSpec, type StreamTranslator } from './adapter.js'
import { logprobsWanted, type ResponsesRequest } from '../request.js'

// Responses ⇄ OpenAI Chat Completions (also vLLM, Ollama, llama.cpp server, LM Studio and most
// hosted providers). Shapes are the openai client's, with what providers add beside them.

/** Cache breakpoints on content parts (Anthropic and Gemini behind OpenAI-compatible endpoints). */
type Cached<T> = T & { cache_control?: CacheMark }
type ChatPart = Cached<ChatCompletionContentPartText> | Cached<ChatCompletionContentPartImage>
/** What OpenAI-compatible providers add to a message or delta: the reasoning, under either name. */
interface ReasoningFields {
  reasoning_content?: string | null
  reasoning?: string | null
}
/** Usage as OpenAI-compatible providers report it, with the cache writes some add. */
type ChatUsage = CompletionUsage & { prompt_tokens_details?: { cache_write_tokens?: number } }
type ChatReply = Omit<ChatCompletion, 'choices' | 'usage'> & {
  choices: (ChatCompletion['choices'][number] & {
    message: ChatCompletion['choices'][number]['message'] & ReasoningFields
  })[]
  usage?: ChatUsage
}
type ChatChunk = Omit<ChatCompletionChunk, 'choices' | 'usage'> & {
  choices: (ChatCompletionChunk['choices'][number] & {
    delta: ChatCompletionChunk['choices'][number]['delta'] & ReasoningFields
  })[]
  usage?: ChatUsage | null
  /** A failure mid-stream, as OpenRouter and others report it. */
  error?: { message?: string }
}

const DETAILS = ['auto', 'low', 'high'] as const

function chatPart(p: Part, caching: boolean): ChatPart {
  const cache = caching && p.cache ? { cache_control: p.cache } : {}
  if (p.kind === 'text') return { type: 'text', text: p.text, ...cache }
  const detail = DETAILS.find((d) => d === p.detail)
  return { type: 'image_url', image_url: { url: p.url, ...(detail ? { detail } : {}) }, ...cache }
}

function chatContent(parts: Part[], caching: boolean): string | ChatPart[] {
  const only = parts.length === 1 ? parts[0]! : undefined
  return only?.kind === 'text' && !(caching && only.cache) ? only.text : parts.map((p) => chatPart(p, caching))
}

function chatMessages(entries: Entry[], caching: boolean): ChatCompletionMessageParam[] {
  const messages: ChatCompletionMessageParam[] = []
  for (const e of entries) {
    if (e.kind === 'message') {
      const content = chatContent(e.parts, caching)
      // An assistant's earlier turn is text: its parts are text parts.
      if (e.role === 'assistant')
        messages.push({ role: 'assistant', content: content as string | ChatCompletionContentPartText[] })
      else if (e.role === 'system')
        messages.push({ role: 'system', content: content as string | ChatCompletionContentPartText[] })
      else messages.push({ role: 'user', content })
    } else if (e.kind === 'call') {
      const call: ChatCompletionMessageFunctionToolCall = {
        id: e.callId,
        type: 'function',
        function: { name: e.name, arguments: e.arguments },
      }
      const last = messages.at(-1)
      // Calls of one turn belong to one assistant message.
      if (last?.role === 'assistant' && last.tool_calls) last.tool_calls.push(call)
      else
        messages.push({
          role: 'assistant',
          content: null,
          tool_calls: [call],
        } satisfies ChatCompletionAssistantMessageParam)
    } else messages.push({ role: 'tool', tool_call_id: e.callId, content: e.output })
  }
  return messages
}

const FINISH: Record<string, Finish> = {
  stop: 'stop',
  length: 'length',
  tool_calls: 'tool_calls',
  function_call: 'tool_calls',
  content_filter: 'content_filter',
}
const finish = (reason: string | null | undefined): Finish => FINISH[reason ?? ''] ?? 'stop'

function usageDelta(u: AsSent<ChatUsage> | null | undefined): Delta[] {
  if (!u) return []
  return [
    {
      type: 'usage',
      usage: {
        input: u.prompt_tokens ?? 0,
        cached: u.prompt_tokens_details?.cached_tokens ?? 0,
        cacheWrite: u.prompt_tokens_details?.cache_write_tokens ?? 0,
        output: u.completion_tokens ?? 0,
        reasoning: u.completion_tokens_details?.reasoning_tokens ?? 0,
      },
    },
  ]
}

export const openaiChat: Adapter<ChatCompletionCreateParams, ChatReply> = {
  path: '/chat/completions',
  headers: (key) => ({ 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) }),

  body(spec: CallSpec): ChatCompletionCreateParams {
    const { req } = spec
    const body: ChatCompletionCreateParams = {
      model: spec.upstreamModel,
      messages: chatMessages(spec.entries, spec.caching),
      stream: spec.stream,
    }
    if (spec.stream) body.stream_options = { include_usage: true }
    if (req.max_output_tokens != null) body.max_tokens = req.max_output_tokens
    copyGiven(req, body, [
      'temperature',
      'top_p',
      'frequency_penalty',
      'presence_penalty',
      'parallel_tool_calls',
      'stop',
      'prompt_cache_key',
    ])
    const logprobs = logprobsWanted(req)
    if (logprobs !== undefined) Object.assign(body, { logprobs: true, ...(logprobs ? { top_logprobs: logprobs } : {}) })
    if (spec.tools.length) {
      body.tools = spec.tools.map((t) => ({
        type: 'function',
        function: {
          name: t.name,
          ...(t.description ? { description: t.description } : {}),
          parameters: t.parameters,
          ...(t.strict != null ? { strict: t.strict } : {}),
        },
      }))
      body.tool_choice =
        typeof spec.toolChoice === 'string'
          ? spec.toolChoice
          : { type: 'function', function: { name: spec.toolChoice.name } }
    }
    const format = req.text?.format
    if (format?.type === 'json_object') body.response_format = { type: 'json_object' }
    if (format?.type === 'json_schema') {
      const { name, schema, description, strict } = format as {
        name?: string
        schema?: Record<string, unknown>
        description?: string
        strict?: boolean | null
      }
      body.response_format = {
        type: 'json_schema',
        json_schema: {
          name: name ?? 'response',
          schema,
          ...(description ? { description } : {}),
          ...(strict != null ? { strict } : {}),
        },
      }
    }
    // Chat Completions' verbosity stops at high.
    const verbosity = req.text?.verbosity
    if (verbosity) body.verbosity = verbosity === 'xhigh' || verbosity === 'max' ? 'high' : verbosity
    const effort = reasoningEffort(req.reasoning)
    if (effort) body.reasoning_effort = effort
    const tier = req.service_tier === 'fast' || req.service_tier === 'ultrafast' ? 'priority' : req.service_tier
    if (tier && tier !== 'auto') body.service_tier = tier
    if (spec.user) body.user = spec.user
    return body
  },

  reply(reply): Delta[] {
    const choice = reply.choices?.[0]
    const m = choice?.message
    const out: Delta[] = []
    const reasoning = m?.reasoning_content ?? m?.reasoning
    if (typeof reasoning === 'string') out.push({ type: 'reasoning', delta: reasoning })
    if (typeof m?.content === 'string')
      out.push({ type: 'text', delta: m.content, logprobs: logprobsOf(choice?.logprobs?.content) })
    if (typeof m?.refusal === 'string') out.push({ type: 'refusal', delta: m.refusal })
    ;(m?.tool_calls ?? []).forEach((c, index) => {
      const f = c && 'function' in c ? c.function : undefined
      out.push({
        type: 'tool_call',
        index,
        id: String(c?.id),
        name: String(f?.name),
        arguments: String(f?.arguments ?? ''),
      })
    })
    out.push(...usageDelta(reply.usage))
    out.push({ type: 'finish', reason: finish(choice?.finish_reason) })
    return out
  },

  streamer(): StreamTranslator {
    return ({ data }) => {
      if (data === '[DONE]') return []
      const chunk = JSON.parse(data) as AsSent<ChatChunk>
      if (chunk.error)
        throw gatewayError(
          'provider_unavailable',
          `the provider failed mid-stream: ${String(chunk.error.message ?? '').slice(0, 300)}`,
        )
      const out: Delta[] = []
      const choice = chunk.choices?.[0]
      const d = choice?.delta
      if (d) {
        const reasoning = d.reasoning_content ?? d.reasoning
        if (typeof reasoning === 'string' && reasoning) out.push({ type: 'reasoning', delta: reasoning })
        if (typeof d.content === 'string' && d.content)
          out.push({ type: 'text', delta: d.content, logprobs: logprobsOf(choice.logprobs?.content) })
        if (typeof d.refusal === 'string' && d.refusal) out.push({ type: 'refusal', delta: d.refusal })
        for (const c of d.tool_calls ?? []) {
          out.push({
            type: 'tool_call',
            index: c?.index ?? 0,
            id: c?.id ?? undefined,
            name: c?.function?.name ?? undefined,
            arguments: c?.function?.arguments ?? '',
          })
        }
      }
      if (choice?.finish_reason) out.push({ type: 'finish', reason: finish(choice.finish_reason) })
      out.push(...usageDelta(chunk.usage))
      return out
    }
  },
}

/**
 * The reasoning effort to ask for: the request's own, or, where it asked for reasoning by budget or
 * by switching it on (the Messages door's `thinking`), the level nearest that budget.
 */
function reasoningEffort(r: ResponsesRequest['reasoning']): ChatCompletionCreateParams['reasoning_effort'] {
  if (!r || r.enabled === false) return undefined
  if (r.effort) return r.effort
  if (r.max_tokens != null) return r.max_tokens <= 2048 ? 'low' : r.max_tokens <= 8192 ? 'medium' : 'high'
  return r.enabled ? 'medium' : undefined
}
