import type { Entry, Part } from '../conversation.js'
import { logprobsOf, type Delta, type Finish } from '../deltas.js'
import { logprobsWanted } from '../request.js'
import { GatewayError, upstreamError } from '../errors.js'
import { common, type Adapter, type CallSpec, type StreamTranslator } from './adapter.js'

// Responses ⇄ OpenAI Responses: the same format upstream, so mostly a rewrite of what Roster adds
// (routing, server tools, presets) into what the provider knows.

type Json = Record<string, any>

function inputPart(p: Part, role: string): Json {
  if (p.kind === 'image') return { type: 'input_image', image_url: p.url, detail: p.detail ?? 'auto' }
  return { type: role === 'assistant' ? 'output_text' : 'input_text', text: p.text }
}

function items(entries: Entry[]): Json[] {
  return entries.map((e) =>
    e.kind === 'message'
      ? { type: 'message', role: e.role, content: e.parts.map((p) => inputPart(p, e.role)) }
      : e.kind === 'call'
        ? { type: 'function_call', call_id: e.callId, name: e.name, arguments: e.arguments }
        : { type: 'function_call_output', call_id: e.callId, output: e.output },
  )
}

function usageDelta(u: Json | undefined): Delta[] {
  if (!u) return []
  return [
    {
      type: 'usage',
      usage: {
        input: u.input_tokens ?? 0,
        cached: u.input_tokens_details?.cached_tokens ?? 0,
        output: u.output_tokens ?? 0,
        reasoning: u.output_tokens_details?.reasoning_tokens ?? 0,
      },
    },
  ]
}

function finishOf(r: Json): Finish {
  if (r.status === 'incomplete') return r.incomplete_details?.reason === 'content_filter' ? 'content_filter' : 'length'
  return (r.output ?? []).some((o: Json) => o.type === 'function_call') ? 'tool_calls' : 'stop'
}

function failed(r: Json | undefined): GatewayError {
  const e = r?.error ?? {}
  const status = e.code === 'rate_limit_exceeded' ? 429 : e.code === 'invalid_prompt' ? 400 : 502
  return upstreamError('the provider', status, JSON.stringify({ error: { message: e.message ?? 'the response failed', type: e.code } }))
}

export const openaiResponses: Adapter = {
  path: '/responses',
  headers: (key) => ({ 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) }),

  body(spec: CallSpec): Json {
    const { req } = spec
    const body: Json = { model: spec.upstreamModel, input: items(spec.entries), stream: spec.stream, store: false }
    common(req, body, ['max_output_tokens', 'temperature', 'top_p', 'parallel_tool_calls', 'prompt_cache_key', 'truncation', 'include', 'text'])
    const logprobs = logprobsWanted(req)
    if (logprobs !== undefined) {
      body.include = [...new Set([...(req.include ?? []), 'message.output_text.logprobs'])]
      body.top_logprobs = logprobs
    }
    if (spec.tools.length) {
      body.tools = spec.tools.map((t) => ({ type: 'function', name: t.name, ...(t.description ? { description: t.description } : {}), parameters: t.parameters, strict: t.strict ?? false }))
      body.tool_choice = typeof spec.toolChoice === 'string' ? spec.toolChoice : { type: 'function', name: spec.toolChoice.name }
    }
    if (req.reasoning) {
      const { effort, summary } = req.reasoning
      const wanted = effort ?? (req.reasoning.enabled ? 'medium' : undefined)
      if (wanted || summary) body.reasoning = { ...(wanted ? { effort: wanted } : {}), ...(summary ? { summary } : {}) }
    }
    const tier = req.service_tier === 'fast' || req.service_tier === 'ultrafast' ? 'priority' : req.service_tier
    if (tier) body.service_tier = tier
    if (spec.user) body.safety_identifier = spec.user
    return body
  },

  reply(r: Json): Delta[] {
    const out: Delta[] = []
    let call = 0
    for (const item of r.output ?? []) {
      if (item.type === 'reasoning') {
        const text = (item.summary ?? []).map((s: Json) => s.text).join('')
        if (text) out.push({ type: 'reasoning', delta: text })
      } else if (item.type === 'message') {
        for (const c of item.content ?? []) {
          if (c.type === 'output_text') out.push({ type: 'text', delta: String(c.text ?? ''), logprobs: logprobsOf(c.logprobs) })
          else if (c.type === 'refusal') out.push({ type: 'refusal', delta: String(c.refusal ?? '') })
        }
      } else if (item.type === 'function_call') {
        out.push({ type: 'tool_call', index: call++, id: item.call_id, name: item.name, arguments: String(item.arguments ?? '') })
      }
    }
    if (r.status === 'failed') throw failed(r)
    out.push(...usageDelta(r.usage), { type: 'finish', reason: finishOf(r) })
    return out
  },

  streamer(): StreamTranslator {
    return ({ data }) => {
      if (data === '[DONE]') return []
      const e = JSON.parse(data)
      switch (e.type) {
        case 'response.output_text.delta':
          return [{ type: 'text', delta: String(e.delta ?? ''), logprobs: logprobsOf(e.logprobs) }]
        case 'response.refusal.delta':
          return [{ type: 'refusal', delta: String(e.delta ?? '') }]
        case 'response.reasoning_summary_text.delta':
        case 'response.reasoning_text.delta':
          return [{ type: 'reasoning', delta: String(e.delta ?? '') }]
        case 'response.output_item.added':
          return e.item?.type === 'function_call'
            ? [{ type: 'tool_call', index: e.output_index, id: e.item.call_id, name: e.item.name, arguments: String(e.item.arguments ?? '') }]
            : []
        case 'response.function_call_arguments.delta':
          return [{ type: 'tool_call', index: e.output_index, arguments: String(e.delta ?? '') }]
        case 'response.completed':
        case 'response.incomplete':
          return [...usageDelta(e.response?.usage), { type: 'finish', reason: finishOf(e.response ?? {}) }]
        case 'response.failed':
          throw failed(e.response)
        case 'error':
          throw upstreamError('the provider', e.code === 'rate_limit_exceeded' ? 429 : 502, JSON.stringify({ error: { message: e.message } }))
        default:
          return []
      }
    }
  },
}
