import type {
  Response,
  ResponseCreateParams,
  ResponseFormatTextConfig,
  ResponseIncludable,
  ResponseInputContent,
  ResponseInputItem,
  ResponseStreamEvent,
  ResponseTextConfig,
  ResponseUsage,
} from 'openai/resources/responses/responses'
import type { Entry, Part } from '../conversation.js'
import { logprobsOf, type Delta, type Finish } from '../deltas.js'
import { logprobsWanted, type ResponsesRequest } from '../request.js'
import { type GatewayError, upstreamError } from '../errors.js'
import { copyGiven, type Adapter, type AsSent, type CallSpec, type StreamTranslator } from './adapter.js'

// Responses ⇄ OpenAI Responses: the same format upstream, so mostly a rewrite of what Roster adds
// (routing, server tools, presets) into what the provider knows. Shapes are the openai client's.

const DETAILS = ['auto', 'low', 'high', 'original'] as const

function inputPart(p: Part): ResponseInputContent {
  if (p.kind === 'image')
    return { type: 'input_image', image_url: p.url, detail: DETAILS.find((d) => d === p.detail) ?? 'auto' }
  return { type: 'input_text', text: p.text }
}

function items(entries: Entry[]): ResponseInputItem[] {
  return entries.map((e): ResponseInputItem => {
    if (e.kind === 'call') return { type: 'function_call', call_id: e.callId, name: e.name, arguments: e.arguments }
    if (e.kind === 'result') return { type: 'function_call_output', call_id: e.callId, output: e.output }
    // An assistant's earlier turn is its text, given back as the model's own output text.
    if (e.role === 'assistant')
      return {
        type: 'message',
        role: 'assistant',
        content: e.parts.map((p) => (p.kind === 'text' ? p.text : '')).join(''),
      }
    return { type: 'message', role: e.role, content: e.parts.map(inputPart) }
  })
}

/** The request's text settings as Responses takes them: verbosity stops at high. */
function textConfig(text: ResponsesRequest['text']): ResponseTextConfig | undefined {
  if (!text) return undefined
  const out: ResponseTextConfig = {}
  if (text.format) out.format = text.format as ResponseFormatTextConfig
  const v = text.verbosity
  if (v) out.verbosity = v === 'xhigh' || v === 'max' ? 'high' : v
  return out
}

function usageDelta(u: AsSent<ResponseUsage> | null | undefined): Delta[] {
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

type Reply = AsSent<Response>

function finishOf(r: Reply): Finish {
  if (r.status === 'incomplete') return r.incomplete_details?.reason === 'content_filter' ? 'content_filter' : 'length'
  return (r.output ?? []).some((o) => o?.type === 'function_call') ? 'tool_calls' : 'stop'
}

function failed(r: Reply | null | undefined): GatewayError {
  const e = r?.error ?? {}
  const status = e.code === 'rate_limit_exceeded' ? 429 : e.code === 'invalid_prompt' ? 400 : 502
  return upstreamError(
    'the provider',
    status,
    JSON.stringify({ error: { message: e.message ?? 'the response failed', type: e.code } }),
  )
}

export const openaiResponses: Adapter<ResponseCreateParams, Response> = {
  path: '/responses',
  headers: (key) => ({ 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) }),

  body(spec: CallSpec): ResponseCreateParams {
    const { req } = spec
    const body: ResponseCreateParams = {
      model: spec.upstreamModel,
      input: items(spec.entries),
      stream: spec.stream,
      store: false,
    }
    copyGiven(req, body, [
      'max_output_tokens',
      'temperature',
      'top_p',
      'parallel_tool_calls',
      'prompt_cache_key',
      'truncation',
      'include',
    ])
    const text = textConfig(req.text)
    if (text) body.text = text
    const logprobs = logprobsWanted(req)
    if (logprobs !== undefined) {
      body.include = [...new Set<ResponseIncludable>([...(req.include ?? []), 'message.output_text.logprobs'])]
      body.top_logprobs = logprobs
    }
    if (spec.tools.length) {
      body.tools = spec.tools.map((t) => ({
        type: 'function',
        name: t.name,
        ...(t.description ? { description: t.description } : {}),
        parameters: t.parameters,
        strict: t.strict ?? false,
      }))
      body.tool_choice =
        typeof spec.toolChoice === 'string' ? spec.toolChoice : { type: 'function', name: spec.toolChoice.name }
    }
    if (req.reasoning) {
      const { effort, summary } = req.reasoning
      const wanted = effort ?? (req.reasoning.enabled ? 'medium' : undefined)
      if (wanted || summary) body.reasoning = { ...(wanted ? { effort: wanted } : {}), ...(summary ? { summary } : {}) }
    }
    const tier = req.service_tier === 'fast' || req.service_tier === 'ultrafast' ? 'priority' : req.service_tier
    if (tier) body.service_tier = tier as ResponseCreateParams['service_tier']
    if (spec.user) body.safety_identifier = spec.user
    return body
  },

  reply(r): Delta[] {
    const out: Delta[] = []
    let call = 0
    for (const item of r.output ?? []) {
      if (item?.type === 'reasoning') {
        const text = (item.summary ?? []).map((s) => s?.text ?? '').join('')
        if (text) out.push({ type: 'reasoning', delta: text })
      } else if (item?.type === 'message') {
        for (const c of item.content ?? []) {
          if (c?.type === 'output_text')
            out.push({ type: 'text', delta: String(c.text ?? ''), logprobs: logprobsOf(c.logprobs) })
          else if (c?.type === 'refusal') out.push({ type: 'refusal', delta: String(c.refusal ?? '') })
        }
      } else if (item?.type === 'function_call') {
        out.push({
          type: 'tool_call',
          index: call++,
          id: item.call_id ?? undefined,
          name: item.name ?? undefined,
          arguments: String(item.arguments ?? ''),
        })
      }
    }
    if (r.status === 'failed') throw failed(r)
    out.push(...usageDelta(r.usage), { type: 'finish', reason: finishOf(r) })
    return out
  },

  streamer(): StreamTranslator {
    return ({ data }) => {
      if (data === '[DONE]') return []
      const e = JSON.parse(data) as AsSent<ResponseStreamEvent>
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
            ? [
                {
                  type: 'tool_call',
                  index: e.output_index ?? 0,
                  id: e.item.call_id ?? undefined,
                  name: e.item.name ?? undefined,
                  arguments: String(e.item.arguments ?? ''),
                },
              ]
            : []
        case 'response.function_call_arguments.delta':
          return [{ type: 'tool_call', index: e.output_index ?? 0, arguments: String(e.delta ?? '') }]
        case 'response.completed':
        case 'response.incomplete':
          return [...usageDelta(e.response?.usage), { type: 'finish', reason: finishOf(e.response ?? {}) }]
        case 'response.failed':
          throw failed(e.response)
        case 'error':
          throw upstreamError(
            'the provider',
            e.code === 'rate_limit_exceeded' ? 429 : 502,
            JSON.stringify({ error: { message: e.message } }),
          )
        default:
          return []
      }
    }
  },
}
