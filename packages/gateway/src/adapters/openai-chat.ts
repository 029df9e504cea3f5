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
import { logprobsOf, type Delta, type Finish, type Usage } from '../deltas.js'
import { invalid, providerError } from '../errors.js'
import type { Annotation } from '../wire.js'
import { copyGiven, type Adapter, type AsSent, type CallSpec, type StreamTranslator } from './adapter.js'
import { ChatToolCalls } from './chat-tool-calls.js'
import { itemId } from '../item-id.js'
import { chatToolCallItem } from '../provider-items.js'
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
/** Usage as OpenAI-compatible providers report it, with the cache writes some add and DeepSeek's cache hits. */
type ChatUsage = CompletionUsage & {
  prompt_tokens_details?: { cache_write_tokens?: number }
  prompt_cache_hit_tokens?: number
}
/**
 * Content as some providers send it: a list of parts instead of a string (Mistral's, with its
 * thinking as a part of its own holding text parts).
 */
type ContentParts = { type: string; text?: string; thinking?: { type: string; text?: string }[] }[]
/** Citations beside the reply, as Perplexity sends them: the cited URLs, and (newer) their titles. */
interface CitationFields {
  citations?: string[]
  search_results?: { url?: string; title?: string }[]
}
type ChatReply = Omit<ChatCompletion, 'choices' | 'usage'> &
  CitationFields & {
    choices: (ChatCompletion['choices'][number] & {
      message: Omit<ChatCompletion['choices'][number]['message'], 'content'> &
        ReasoningFields & { content: string | ContentParts | null }
    })[]
    usage?: ChatUsage
  }
type ChatChunk = Omit<ChatCompletionChunk, 'choices' | 'usage'> &
  CitationFields & {
    choices: (ChatCompletionChunk['choices'][number] & {
      /** Where Moonshot reports a stream's usage: on its last choice. */
      usage?: ChatUsage | null
      delta: Omit<ChatCompletionChunk['choices'][number]['delta'], 'content'> &
        ReasoningFields & { content?: string | ContentParts | null; annotations?: unknown[] }
    })[]
    usage?: ChatUsage | null
    /** Where Groq reports a stream's usage. */
    x_groq?: { usage?: ChatUsage | null } | null
    /** A failure mid-stream, as OpenRouter and others report it. */
    error?: { message?: string; code?: string | number }
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
    } else if (e.kind === 'result') {
      // Chat Completions' tool messages carry text only; routing sends a request with an image in a
      // tool result elsewhere, so one here is refused rather than read to the model as text.
      if (e.parts) throw invalid('this endpoint (Chat Completions) cannot take images in tool results')
      messages.push({ role: 'tool', tool_call_id: e.callId, content: e.output })
    }
    // Earlier reasoning (e.kind 'reasoning') is left out: Chat Completions has no field that takes it back.
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

/**
 * Usage in Chat Completions' terms, as the neutral usage (docs/gateway.md, "Tokens"):
 * - `prompt_tokens` counts every input token; cached ones are within it
 *   (`prompt_tokens_details.cached_tokens`, or DeepSeek's `prompt_cache_hit_tokens`).
 * - `completion_tokens` counts every output token, reasoning ones within it
 *   (`completion_tokens_details.reasoning_tokens`): OpenAI, DeepSeek, Groq. Except where the
 *   provider's own total says otherwise: xAI counts reasoning apart, and its `total_tokens` is
 *   prompt + completion + reasoning. There the reasoning is added to the output, so that it is
 *   reported, and priced, once.
 */
export function chatUsage(u: AsSent<ChatUsage>): Partial<Usage> {
  const input = u.prompt_tokens ?? 0
  const completion = u.completion_tokens ?? 0
  const reasoning = u.completion_tokens_details?.reasoning_tokens ?? 0
  const outside = reasoning > 0 && u.total_tokens === input + completion + reasoning
  return {
    input,
    cached: u.prompt_tokens_details?.cached_tokens ?? u.prompt_cache_hit_tokens ?? 0,
    cacheWrite: u.prompt_tokens_details?.cache_write_tokens ?? 0,
    output: outside ? completion + reasoning : completion,
    reasoning,
  }
}

function usageDelta(u: AsSent<ChatUsage> | null | undefined): Delta[] {
  return u ? [{ type: 'usage', usage: chatUsage(u) }] : []
}

/** Content given as a string or as parts: its text, and the reasoning among its parts. */
function contentDeltas(content: unknown): Delta[] {
  if (typeof content === 'string') return content ? [{ type: 'text', delta: content }] : []
  if (!Array.isArray(content)) return []
  const out: Delta[] = []
  for (const part of content as AsSent<ContentParts>) {
    if (part?.type === 'text' && typeof part.text === 'string' && part.text)
      out.push({ type: 'text', delta: part.text })
    else if (part?.type === 'thinking')
      for (const t of part.thinking ?? [])
        if (t?.type === 'text' && typeof t.text === 'string' && t.text) out.push({ type: 'reasoning', delta: t.text })
  }
  return out
}

/**
 * Annotations as OpenAI and OpenRouter give them on a Chat Completions message
 * (`{type: "url_citation", url_citation: {url, title, start_index, end_index}}`), in the Responses
 * wire's terms.
 */
function annotationDeltas(list: unknown): Delta[] {
  if (!Array.isArray(list)) return []
  return list.flatMap((a: { type?: unknown; url_citation?: Record<string, unknown> } | null) => {
    const c = a?.type === 'url_citation' ? a.url_citation : undefined
    if (!c || typeof c.url !== 'string') return []
    const annotation: Annotation = {
      type: 'url_citation',
      url: c.url,
      title: typeof c.title === 'string' ? c.title : '',
      start_index: Number.isInteger(c.start_index) ? (c.start_index as number) : 0,
      end_index: Number.isInteger(c.end_index) ? (c.end_index as number) : 0,
    }
    return [{ type: 'annotation' as const, annotation }]
  })
}

/**
 * Perplexity's citations (URLs beside the reply, cited in the text as [1], [2]…) as url_citation
 * annotations, each spanning the first mark that cites it (none: the start of the text).
 */
function citationDeltas(r: AsSent<CitationFields>, text: string): Delta[] {
  const urls = Array.isArray(r.citations) ? r.citations : []
  const titles = new Map<string, string>()
  for (const s of Array.isArray(r.search_results) ? r.search_results : [])
    if (typeof s?.url === 'string' && typeof s.title === 'string') titles.set(s.url, s.title)
  return urls.flatMap((url, i) => {
    if (typeof url !== 'string') return []
    const mark = `[${i + 1}]`
    const at = text.indexOf(mark)
    const annotation: Annotation = {
      type: 'url_citation',
      url,
      title: titles.get(url) ?? '',
      start_index: Math.max(0, at),
      end_index: at < 0 ? 0 : at + mark.length,
    }
    return [{ type: 'annotation' as const, annotation }]
  })
}

export const openaiChat: Adapter<ChatCompletionCreateParams, ChatReply> = {
  title: 'Chat Completions',
  path: '/chat/completions',
  // A tool message's content is text; no web search tool (only search models, which are models).
  toolImages: false,
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
    const content = contentDeltas(m?.content)
    // Log probabilities belong to the text: the first text delta carries them.
    const logprobs = logprobsOf(choice?.logprobs?.content)
    const first = content.find((d) => d.type === 'text')
    if (first?.type === 'text' && logprobs) first.logprobs = logprobs
    out.push(...content)
    if (typeof m?.refusal === 'string') out.push({ type: 'refusal', delta: m.refusal })
    out.push(...annotationDeltas(m?.annotations))
    const text = content.map((d) => (d.type === 'text' ? d.delta : '')).join('')
    out.push(...citationDeltas(reply, text))
    ;(m?.tool_calls ?? []).forEach((c, index) => {
      const call = (c ?? {}) as Record<string, unknown>
      // A call of another kind (`custom`, or one Roster does not know) is the provider's item, never a function.
      if (typeof call.type === 'string' && call.type !== 'function') {
        const id = itemId('ctc')
        out.push({ type: 'provider_item', key: id, item: chatToolCallItem(call, id, 'completed'), done: true })
        return
      }
      const f = (call.function ?? {}) as { name?: unknown; arguments?: unknown }
      out.push({
        type: 'tool_call',
        index,
        id: typeof call.id === 'string' ? call.id : undefined,
        name: typeof f.name === 'string' ? f.name : undefined,
        arguments: typeof f.arguments === 'string' ? f.arguments : '',
      })
    })
    out.push(...usageDelta(reply.usage ?? (reply as AsSent<ChatChunk>).x_groq?.usage))
    out.push({ type: 'finish', reason: finish(choice?.finish_reason) })
    return out
  },

  streamer(provider): StreamTranslator {
    let finished = false
    const calls = new ChatToolCalls()
    let text = ''
    /** Perplexity repeats its citations on every chunk: the last ones are given at the end. */
    let citations: AsSent<CitationFields> | undefined
    // The end of the reply's text: its citations, then how it finished.
    const ending = (reason: Finish | undefined): Delta[] => {
      const out = citations ? citationDeltas(citations, text) : []
      citations = undefined
      if (!finished) out.push(...calls.finish())
      if (reason && !finished) {
        finished = true
        out.push({ type: 'finish', reason })
      }
      return out
    }
    return (event) => {
      // A stream that says it is done ([DONE]) but never said how it finished (some OpenRouter
      // providers) finished as its content says: with its calls, or its text.
      if (event === 'end') return []
      if (event.data === '[DONE]') return ending(calls.any ? 'tool_calls' : 'stop')
      const chunk = (event.json ?? JSON.parse(event.data)) as AsSent<ChatChunk>
      if (chunk.error) throw providerError(provider, chunk)
      if (Array.isArray(chunk.citations)) citations = chunk
      const out: Delta[] = []
      const choice = chunk.choices?.[0]
      const d = choice?.delta
      if (d) {
        const reasoning = d.reasoning_content ?? d.reasoning
        if (typeof reasoning === 'string' && reasoning) out.push({ type: 'reasoning', delta: reasoning })
        const content = contentDeltas(d.content)
        const logprobs = logprobsOf(choice.logprobs?.content)
        for (const c of content) {
          if (c.type === 'text') {
            text += c.delta
            if (logprobs) c.logprobs = logprobs
          }
          out.push(c)
        }
        if (typeof d.refusal === 'string' && d.refusal) out.push({ type: 'refusal', delta: d.refusal })
        out.push(...annotationDeltas(d.annotations))
        if (Array.isArray(d.tool_calls)) for (const c of d.tool_calls) out.push(...calls.piece(c))
      }
      if (choice?.finish_reason) out.push(...ending(finish(choice.finish_reason)))
      // Usage wherever known providers put it; none at all is counted by Roster when the reply ends.
      out.push(...usageDelta(chunk.usage ?? chunk.x_groq?.usage ?? choice?.usage))
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
