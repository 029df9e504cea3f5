import type {
  ContentBlockParam,
  ImageBlockParam,
  Message,
  MessageCreateParams,
  MessageDeltaUsage,
  MessageParam,
  RawMessageStreamEvent,
  TextBlockParam,
  Usage,
} from '@anthropic-ai/sdk/resources/messages'
import type { Entry, Part } from '../conversation.js'
import type { Delta, Finish } from '../deltas.js'
import { upstreamError } from '../errors.js'
import type { Adapter, AsSent, CallSpec, StreamTranslator } from './adapter.js'

// Responses ⇄ Anthropic Messages. Shapes are the Anthropic client's.

/** Thinking budgets for the request's reasoning effort (Anthropic takes tokens, not levels). */
const BUDGET: Record<string, number> = { minimal: 1024, low: 2048, medium: 8192, high: 16384, xhigh: 32000, max: 64000 }

const MEDIA_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'] as const

function textBlock(text: string, p: Part, caching: boolean): TextBlockParam {
  return { type: 'text', text, ...(caching && p.cache ? { cache_control: p.cache } : {}) }
}

function block(p: Part, caching: boolean): TextBlockParam | ImageBlockParam {
  if (p.kind === 'text') return textBlock(p.text, p, caching)
  const cache = caching && p.cache ? { cache_control: p.cache } : {}
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(p.url)
  const media = data && MEDIA_TYPES.find((t) => t === data[1])
  // A data: URL of a type Anthropic does not take goes as it is, for the provider to refuse by name.
  if (data && !media) return { type: 'image', source: { type: 'url', url: p.url }, ...cache }
  return {
    type: 'image',
    source: data && media ? { type: 'base64', media_type: media, data: data[2]! } : { type: 'url', url: p.url },
    ...cache,
  }
}

/** System entries become the system blocks; the rest alternate user/assistant as Anthropic requires. */
function anthropicMessages(entries: Entry[], caching: boolean): { system: TextBlockParam[]; messages: MessageParam[] } {
  const system: TextBlockParam[] = []
  const messages: (MessageParam & { content: ContentBlockParam[] })[] = []
  const append = (role: 'user' | 'assistant', blocks: ContentBlockParam[]) => {
    const last = messages.at(-1)
    if (last?.role === role) last.content.push(...blocks)
    else messages.push({ role, content: blocks })
  }
  for (const e of entries) {
    if (e.kind === 'message') {
      if (e.role === 'system') {
        for (const p of e.parts) if (p.kind === 'text') system.push(textBlock(p.text, p, caching))
      } else
        append(
          e.role,
          e.parts.map((p) => block(p, caching)),
        )
    } else if (e.kind === 'call') {
      let input: unknown = {}
      try {
        input = JSON.parse(e.arguments || '{}')
      } catch {}
      append('assistant', [{ type: 'tool_use', id: e.callId, name: e.name, input }])
    } else append('user', [{ type: 'tool_result', tool_use_id: e.callId, content: e.output }])
  }
  return { system, messages }
}

const FINISH: Record<string, Finish> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop',
  max_tokens: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
}

const finish = (reason: string | null | undefined): Finish => FINISH[reason ?? ''] ?? 'stop'

function usage(u: AsSent<Usage | MessageDeltaUsage> | null | undefined): Delta[] {
  if (!u) return []
  const read = u.cache_read_input_tokens ?? 0
  const write = u.cache_creation_input_tokens ?? 0
  const thinking = u.output_tokens_details?.thinking_tokens
  return [
    {
      type: 'usage',
      usage: {
        ...(u.input_tokens != null ? { input: u.input_tokens + read + write, cached: read, cacheWrite: write } : {}),
        ...(u.output_tokens != null ? { output: u.output_tokens } : {}),
        ...(thinking != null ? { reasoning: thinking } : {}),
      },
    },
  ]
}

/** An error event mid-stream (not among the client's stream event types: the client raises it). */
interface StreamError {
  type: 'error'
  error: { type: string; message: string }
}

/**
 * Sampling settings the client's types no longer list: older models and Anthropic-compatible
 * servers take them, and a request that sets them means them.
 */
type Body = MessageCreateParams & { temperature?: number; top_p?: number; top_k?: number }

export const anthropic: Adapter<Body, Message> = {
  path: '/messages',
  headers: (key) => ({
    'content-type': 'application/json',
    'anthropic-version': '2023-06-01',
    ...(key ? { 'x-api-key': key } : {}),
  }),

  body(spec: CallSpec): Body {
    const { req } = spec
    const { system, messages } = anthropicMessages(spec.entries, spec.caching)
    const maxTokens = req.max_output_tokens ?? spec.defaultMaxTokens
    const body: Body = { model: spec.upstreamModel, max_tokens: maxTokens, messages, stream: spec.stream }
    if (system.length) body.system = system
    if (req.temperature != null) body.temperature = Math.min(1, req.temperature)
    if (req.top_p != null) body.top_p = req.top_p
    if (req.top_k != null) body.top_k = req.top_k
    if (req.stop != null) body.stop_sequences = typeof req.stop === 'string' ? [req.stop] : req.stop
    if (spec.tools.length) {
      body.tools = spec.tools.map((t) => ({
        name: t.name,
        ...(t.description ? { description: t.description } : {}),
        input_schema: { type: 'object' as const, ...t.parameters },
      }))
      const c = spec.toolChoice
      const alone = req.parallel_tool_calls === false ? { disable_parallel_tool_use: true } : {}
      body.tool_choice =
        c === 'auto'
          ? { type: 'auto', ...alone }
          : c === 'none'
            ? { type: 'none' }
            : c === 'required'
              ? { type: 'any', ...alone }
              : { type: 'tool', name: c.name, ...alone }
    }
    const r = req.reasoning
    const wanted =
      r && r.effort !== 'none' && r.enabled !== false
        ? (r.max_tokens ?? (r.effort ? BUDGET[r.effort] : r.enabled ? BUDGET.medium : undefined))
        : undefined
    // The budget counts within max_tokens and must be at least 1024.
    if (wanted !== undefined && maxTokens > 1024)
      body.thinking = { type: 'enabled', budget_tokens: Math.max(1024, Math.min(wanted, maxTokens - 1)) }
    // Structured outputs: Anthropic takes the schema as output_config.format.
    const format = req.text?.format
    if (format?.type === 'json_schema')
      body.output_config = {
        format: { type: 'json_schema', schema: (format.schema as Record<string, unknown> | undefined) ?? {} },
      }
    // Anthropic's tiers: `auto` may use priority capacity, `standard_only` never does.
    const tier = req.service_tier
    if (tier === 'priority' || tier === 'fast' || tier === 'ultrafast') body.service_tier = 'auto'
    else if (tier === 'default' || tier === 'flex') body.service_tier = 'standard_only'
    if (spec.user) body.metadata = { user_id: spec.user }
    return body
  },

  reply(r): Delta[] {
    const out: Delta[] = []
    let call = 0
    for (const b of r.content ?? []) {
      if (b?.type === 'thinking') out.push({ type: 'reasoning', delta: String(b.thinking ?? '') })
      else if (b?.type === 'text')
        out.push({ type: r.stop_reason === 'refusal' ? 'refusal' : 'text', delta: String(b.text ?? '') })
      else if (b?.type === 'tool_use')
        out.push({
          type: 'tool_call',
          index: call++,
          id: b.id ?? undefined,
          name: b.name ?? undefined,
          arguments: JSON.stringify(b.input ?? {}),
        })
    }
    out.push(...usage(r.usage), { type: 'finish', reason: finish(r.stop_reason) })
    return out
  },

  streamer(): StreamTranslator {
    return ({ data }) => {
      const e = JSON.parse(data) as AsSent<RawMessageStreamEvent> | AsSent<StreamError>
      switch (e.type) {
        case 'message_start':
          return usage(e.message?.usage)
        case 'content_block_start':
          return e.content_block?.type === 'tool_use'
            ? [
                {
                  type: 'tool_call',
                  index: e.index ?? 0,
                  id: e.content_block.id ?? undefined,
                  name: e.content_block.name ?? undefined,
                  arguments: '',
                },
              ]
            : e.content_block?.type === 'text' && e.content_block.text
              ? [{ type: 'text', delta: e.content_block.text }]
              : []
        case 'content_block_delta': {
          const d = e.delta
          if (d?.type === 'text_delta') return [{ type: 'text', delta: String(d.text ?? '') }]
          if (d?.type === 'thinking_delta') return [{ type: 'reasoning', delta: String(d.thinking ?? '') }]
          if (d?.type === 'input_json_delta')
            return [{ type: 'tool_call', index: e.index ?? 0, arguments: String(d.partial_json ?? '') }]
          return []
        }
        case 'message_delta':
          return [
            ...usage(e.usage),
            ...(e.delta?.stop_reason ? [{ type: 'finish' as const, reason: finish(e.delta.stop_reason) }] : []),
          ]
        case 'error': {
          const type = e.error?.type
          const status =
            type === 'overloaded_error'
              ? 529
              : type === 'rate_limit_error'
                ? 429
                : type === 'invalid_request_error'
                  ? 400
                  : 500
          throw upstreamError('the provider', status, JSON.stringify(e))
        }
        default:
          return []
      }
    }
  },
}
