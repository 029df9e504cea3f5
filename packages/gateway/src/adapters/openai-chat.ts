import type { Entry, Part } from '../conversation.js'
import { logprobsOf, type Delta, type Finish } from '../deltas.js'
import { gatewayError } from '../errors.js'
import { common, type Adapter, type CallSpec, type StreamTranslator } from './adapter.js'
import { logprobsWanted, type ResponsesRequest } from '../request.js'

// Responses ⇄ OpenAI Chat Completions (also vLLM, Ollama, llama.cpp server, LM Studio and most
// hosted providers).

type Json = Record<string, any>

function chatPart(p: Part, caching: boolean): Json {
  const cache = caching && p.cache ? { cache_control: p.cache } : {}
  return p.kind === 'text'
    ? { type: 'text', text: p.text, ...cache }
    : { type: 'image_url', image_url: { url: p.url, ...(p.detail ? { detail: p.detail } : {}) }, ...cache }
}

function chatContent(parts: Part[], caching: boolean): string | Json[] {
  const plain = parts.length === 1 && parts[0]!.kind === 'text' && !(caching && parts[0]!.cache)
  return plain ? (parts[0] as { text: string }).text : parts.map((p) => chatPart(p, caching))
}

function chatMessages(entries: Entry[], caching: boolean): Json[] {
  const messages: Json[] = []
  for (const e of entries) {
    if (e.kind === 'message') messages.push({ role: e.role, content: chatContent(e.parts, caching) })
    else if (e.kind === 'call') {
      const call = { id: e.callId, type: 'function', function: { name: e.name, arguments: e.arguments } }
      const last = messages.at(-1)
      // Calls of one turn belong to one assistant message.
      if (last?.role === 'assistant' && Array.isArray(last.tool_calls)) last.tool_calls.push(call)
      else messages.push({ role: 'assistant', content: null, tool_calls: [call] })
    } else messages.push({ role: 'tool', tool_call_id: e.callId, content: e.output })
  }
  return messages
}

const FINISH: Record<string, Finish> = { stop: 'stop', length: 'length', tool_calls: 'tool_calls', function_call: 'tool_calls', content_filter: 'content_filter' }

function usageDelta(u: Json | undefined): Delta[] {
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

export const openaiChat: Adapter = {
  path: '/chat/completions',
  headers: (key) => ({ 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) }),

  body(spec: CallSpec): Json {
    const { req } = spec
    const body: Json = { model: spec.upstreamModel, messages: chatMessages(spec.entries, spec.caching), stream: spec.stream }
    if (spec.stream) body.stream_options = { include_usage: true }
    if (req.max_output_tokens != null) body.max_tokens = req.max_output_tokens
    common(req, body, ['temperature', 'top_p', 'frequency_penalty', 'presence_penalty', 'parallel_tool_calls', 'stop', 'prompt_cache_key'])
    const logprobs = logprobsWanted(req)
    if (logprobs !== undefined) Object.assign(body, { logprobs: true, ...(logprobs ? { top_logprobs: logprobs } : {}) })
    if (spec.tools.length) {
      body.tools = spec.tools.map((t) => ({
        type: 'function',
        function: { name: t.name, ...(t.description ? { description: t.description } : {}), parameters: t.parameters, ...(t.strict != null ? { strict: t.strict } : {}) },
      }))
      body.tool_choice = typeof spec.toolChoice === 'string' ? spec.toolChoice : { type: 'function', function: { name: spec.toolChoice.name } }
    }
    const format = req.text?.format as Json | undefined
    if (format?.type === 'json_object') body.response_format = { type: 'json_object' }
    if (format?.type === 'json_schema') {
      body.response_format = {
        type: 'json_schema',
        json_schema: { name: format.name, schema: format.schema, ...(format.description ? { description: format.description } : {}), ...(format.strict != null ? { strict: format.strict } : {}) },
      }
    }
    if (req.text?.verbosity) body.verbosity = req.text.verbosity
    const effort = reasoningEffort(req.reasoning)
    if (effort) body.reasoning_effort = effort
    const tier = req.service_tier === 'fast' || req.service_tier === 'ultrafast' ? 'priority' : req.service_tier
    if (tier && tier !== 'auto') body.service_tier = tier
    if (spec.user) body.user = spec.user
    return body
  },

  reply(reply: Json): Delta[] {
    const choice = reply.choices?.[0] ?? {}
    const m = choice.message ?? {}
    const out: Delta[] = []
    const reasoning = m.reasoning_content ?? m.reasoning
    if (typeof reasoning === 'string') out.push({ type: 'reasoning', delta: reasoning })
    if (typeof m.content === 'string') out.push({ type: 'text', delta: m.content, logprobs: logprobsOf(choice.logprobs?.content) })
    if (typeof m.refusal === 'string') out.push({ type: 'refusal', delta: m.refusal })
    ;(m.tool_calls ?? []).forEach((c: Json, index: number) =>
      out.push({ type: 'tool_call', index, id: String(c.id), name: String(c.function?.name), arguments: String(c.function?.arguments ?? '') }),
    )
    out.push(...usageDelta(reply.usage))
    out.push({ type: 'finish', reason: FINISH[choice.finish_reason] ?? 'stop' })
    return out
  },

  streamer(): StreamTranslator {
    return ({ data }) => {
      if (data === '[DONE]') return []
      const chunk = JSON.parse(data)
      if (chunk.error) throw gatewayError('provider_unavailable', `the provider failed mid-stream: ${String(chunk.error.message ?? '').slice(0, 300)}`)
      const out: Delta[] = []
      const choice = chunk.choices?.[0]
      const d = choice?.delta
      if (d) {
        const reasoning = d.reasoning_content ?? d.reasoning
        if (typeof reasoning === 'string' && reasoning) out.push({ type: 'reasoning', delta: reasoning })
        if (typeof d.content === 'string' && d.content) out.push({ type: 'text', delta: d.content, logprobs: logprobsOf(choice.logprobs?.content) })
        if (typeof d.refusal === 'string' && d.refusal) out.push({ type: 'refusal', delta: d.refusal })
        for (const c of d.tool_calls ?? []) {
          out.push({ type: 'tool_call', index: c.index ?? 0, id: c.id, name: c.function?.name, arguments: c.function?.arguments ?? '' })
        }
      }
      if (choice?.finish_reason) out.push({ type: 'finish', reason: FINISH[choice.finish_reason] ?? 'stop' })
      out.push(...usageDelta(chunk.usage))
      return out
    }
  },
}

/**
 * The reasoning effort to ask for: the request's own, or, where it asked for reasoning by budget or
 * by switching it on (the Messages door's `thinking`), the level nearest that budget.
 */
function reasoningEffort(r: ResponsesRequest['reasoning']): string | undefined {
  if (!r || r.enabled === false) return undefined
  if (r.effort) return r.effort
  if (r.max_tokens != null) return r.max_tokens <= 2048 ? 'low' : r.max_tokens <= 8192 ? 'medium' : 'high'
  return r.enabled ? 'medium' : undefined
}
