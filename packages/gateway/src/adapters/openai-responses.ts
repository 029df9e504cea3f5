import type {
  Response,
  ResponseCreateParams,
  ResponseFormatTextConfig,
  ResponseFunctionCallOutputItemList,
  ResponseIncludable,
  ResponseInputContent,
  ResponseInputItem,
  ResponseStreamEvent,
  ResponseTextConfig,
  ResponseUsage,
  Tool,
} from 'openai/resources/responses/responses'
import type { Entry, Part } from '../conversation.js'
import { callStart, logprobsOf, type Delta, type Finish } from '../deltas.js'
import { logprobsWanted, type ResponsesRequest } from '../request.js'
import { providerError } from '../errors.js'
import { openaiWebSearch } from '../web-search.js'
import { responsesItem } from '../provider-items.js'
import type { Annotation } from '../wire.js'
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
  // Earlier reasoning is left out: OpenAI keeps its own (stored, or by previous_response_id), and an
  // item's encrypted content may be another provider's.
  return entries.flatMap((e): ResponseInputItem | [] => {
    if (e.kind === 'reasoning') return []
    if (e.kind === 'call') return { type: 'function_call', call_id: e.callId, name: e.name, arguments: e.arguments }
    if (e.kind === 'result')
      return {
        type: 'function_call_output',
        call_id: e.callId,
        output: e.parts ? (e.parts.map(inputPart) as ResponseFunctionCallOutputItemList) : e.output,
      }
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
        // Not in the openai client's types yet: OpenAI reports the tokens written to its cache beside those read.
        cacheWrite:
          (u.input_tokens_details as { cache_write_tokens?: number | null } | null | undefined)?.cache_write_tokens ??
          0,
        output: u.output_tokens ?? 0,
        reasoning: u.output_tokens_details?.reasoning_tokens ?? 0,
      },
    },
  ]
}

type Reply = AsSent<Response>
type Fields = Record<string, unknown>

function finishOf(r: Reply): Finish {
  if (r.status === 'incomplete') return r.incomplete_details?.reason === 'content_filter' ? 'content_filter' : 'length'
  return (r.output ?? []).some((o) => o?.type === 'function_call') ? 'tool_calls' : 'stop'
}

const KNOWN = new Set(['message', 'reasoning', 'function_call'])

/** A reasoning item's text: its summary parts, or, where it has none, its reasoning text (DeepSeek, xAI). */
function reasoningParts(item: Fields): string[] {
  const from = (list: unknown, type: string) =>
    (Array.isArray(list) ? list : []).flatMap((p: Fields | null) =>
      p && p.type === type && typeof p.text === 'string' && p.text ? [p.text] : [],
    )
  const summary = from(item.summary, 'summary_text')
  return summary.length ? summary : from(item.content, 'reasoning_text')
}

/** A whole reasoning item as deltas: an item of its own, its parts, and its opaque state. */
function reasoningDeltas(item: Fields, key: string): Delta[] {
  const out: Delta[] = [{ type: 'reasoning', delta: '', item: key }]
  reasoningParts(item).forEach((text, part) => out.push({ type: 'reasoning', delta: text, item: key, part }))
  if (typeof item.encrypted_content === 'string' && item.encrypted_content)
    out.push({ type: 'reasoning_state', state: item.encrypted_content })
  return out
}

/** A message's content as deltas: text with its annotations, refusals. */
function messageDeltas(item: Fields): Delta[] {
  const out: Delta[] = []
  for (const c of (Array.isArray(item.content) ? item.content : []) as (Fields | null)[]) {
    if (c?.type === 'output_text') {
      out.push({ type: 'text', delta: String(c.text ?? ''), logprobs: logprobsOf(c.logprobs) })
      for (const a of Array.isArray(c.annotations) ? c.annotations : [])
        if (a && typeof a === 'object' && typeof (a as Fields).type === 'string')
          out.push({ type: 'annotation', annotation: a as Annotation })
    } else if (c?.type === 'refusal') out.push({ type: 'refusal', delta: String(c.refusal ?? '') })
  }
  return out
}

/**
 * What was streamed of each output item, by its output_index: a provider that sends an item's
 * content only in its `.done` events (function arguments, reasoning, text) has it taken from there.
 * Of a call, its arguments so far (a `.done` may hold only the rest); of anything else, whether any came.
 */
class Streamed {
  private readonly args = new Map<number, string>()
  private readonly any = new Set<number>()
  add(index: number) {
    this.any.add(index)
  }
  addArgs(index: number, piece: string) {
    this.args.set(index, (this.args.get(index) ?? '') + piece)
  }
  argsOf(index: number) {
    return this.args.get(index) ?? ''
  }
  seen(index: number) {
    return this.any.has(index)
  }
}

export const openaiResponses: Adapter<ResponseCreateParams, Response> = {
  title: 'OpenAI Responses',
  path: '/responses',
  toolImages: true,
  webSearch: openaiWebSearch,
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
    if (spec.tools.length || spec.search) {
      body.tools = spec.tools.map((t) => ({
        type: 'function',
        name: t.name,
        ...(t.description ? { description: t.description } : {}),
        parameters: t.parameters,
        strict: t.strict ?? false,
      }))
      if (spec.search) {
        body.tools.push(spec.search.tool as unknown as Tool)
        // The client's openai types predate max_tool_calls; OpenAI's API takes it.
        if (spec.search.maxCalls) Object.assign(body, { max_tool_calls: spec.search.maxCalls })
      }
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

  reply(r, provider): Delta[] {
    const out: Delta[] = []
    let call = 0
    ;(r.output ?? []).forEach((raw, index) => {
      const item = (raw ?? {}) as Fields
      if (item.type === 'reasoning') out.push(...reasoningDeltas(item, `oi:${index}`))
      else if (item.type === 'message') out.push(...messageDeltas(item))
      else if (item.type === 'function_call') out.push(callStart(call++, item, 'call_id', String(item.arguments ?? '')))
      else if (typeof item.type === 'string')
        out.push({ type: 'provider_item', key: `oi:${index}`, item: responsesItem(item), done: true })
    })
    if (r.status === 'failed') throw providerError(provider, {}, r)
    out.push(...usageDelta(r.usage), { type: 'finish', reason: finishOf(r) })
    return out
  },

  streamer(provider): StreamTranslator {
    const streamed = new Streamed()
    return (event) => {
      if (event === 'end' || event.data === '[DONE]') return []
      const e = (event.json ?? JSON.parse(event.data)) as AsSent<ResponseStreamEvent> & Fields
      const index = typeof e.output_index === 'number' ? e.output_index : 0
      switch (e.type) {
        case 'response.output_text.delta':
          streamed.add(index)
          return [{ type: 'text', delta: String(e.delta ?? ''), logprobs: logprobsOf(e.logprobs) }]
        case 'response.refusal.delta':
          streamed.add(index)
          return [{ type: 'refusal', delta: String(e.delta ?? '') }]
        case 'response.output_text.annotation.added':
          return e.annotation && typeof e.annotation === 'object'
            ? [{ type: 'annotation', annotation: e.annotation as unknown as Annotation }]
            : []
        case 'response.reasoning_summary_text.delta':
          streamed.add(index)
          return [
            {
              type: 'reasoning',
              delta: String(e.delta ?? ''),
              item: `oi:${index}`,
              part: typeof e.summary_index === 'number' ? e.summary_index : undefined,
            },
          ]
        case 'response.reasoning_text.delta':
          streamed.add(index)
          return [{ type: 'reasoning', delta: String(e.delta ?? ''), item: `oi:${index}` }]
        case 'response.output_item.added': {
          // Item ids change from event to event on some providers (GitHub Copilot): items are told apart by output_index.
          const item = (e.item ?? {}) as Fields
          if (item.type === 'function_call') return [callStart(index, item, 'call_id', String(item.arguments ?? ''))]
          if (item.type === 'reasoning') return [{ type: 'reasoning', delta: '', item: `oi:${index}` }]
          if (typeof item.type === 'string' && !KNOWN.has(item.type))
            return [{ type: 'provider_item', key: `oi:${index}`, item: responsesItem(item), done: false }]
          return []
        }
        case 'response.function_call_arguments.delta':
          streamed.addArgs(index, String(e.delta ?? ''))
          return [{ type: 'tool_call', index, arguments: String(e.delta ?? '') }]
        case 'response.function_call_arguments.done':
          return rest(streamed, index, e.arguments, (piece) => [{ type: 'tool_call', index, arguments: piece }])
        case 'response.output_item.done': {
          const item = (e.item ?? {}) as Fields
          if (item.type === 'function_call')
            return rest(streamed, index, item.arguments, (piece) => [{ type: 'tool_call', index, arguments: piece }])
          if (item.type === 'reasoning') {
            const out: Delta[] = streamed.seen(index)
              ? []
              : reasoningParts(item).map((text, part) => ({
                  type: 'reasoning',
                  delta: text,
                  item: `oi:${index}`,
                  part,
                }))
            if (typeof item.encrypted_content === 'string' && item.encrypted_content)
              out.push({ type: 'reasoning_state', state: item.encrypted_content })
            return out
          }
          if (item.type === 'message') return streamed.seen(index) ? [] : messageDeltas(item)
          if (typeof item.type === 'string' && !KNOWN.has(item.type))
            return [{ type: 'provider_item', key: `oi:${index}`, item: responsesItem(item), done: true }]
          return []
        }
        case 'response.completed':
        case 'response.incomplete':
          return [...usageDelta(e.response?.usage), { type: 'finish', reason: finishOf(e.response ?? {}) }]
        case 'response.failed':
          throw providerError(provider, {}, e.response)
        case 'error':
          throw providerError(provider, e)
        default:
          return []
      }
    }
  },
}

/** What a `.done` event holds beyond what was streamed of the item (all of it, when nothing was). */
function rest(streamed: Streamed, index: number, whole: unknown, deltas: (piece: string) => Delta[]): Delta[] {
  if (typeof whole !== 'string') return []
  const so = streamed.argsOf(index)
  if (!whole.startsWith(so) || whole.length === so.length) return []
  const piece = whole.slice(so.length)
  streamed.addArgs(index, piece)
  return deltas(piece)
}
