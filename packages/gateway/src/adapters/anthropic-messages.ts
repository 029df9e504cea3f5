import type {
  ContentBlockParam,
  ImageBlockParam,
  Message,
  MessageCreateParams,
  MessageDeltaUsage,
  MessageParam,
  RawMessageStreamEvent,
  TextBlockParam,
  ToolUnion,
  Usage,
} from '@anthropic-ai/sdk/resources/messages'
import type { Entry, Part } from '../conversation.js'
import { callStart, type Delta, type Finish } from '../deltas.js'
import { providerError } from '../errors.js'
import { anthropicWebSearch } from '../web-search.js'
import { anthropicBlockItem, anthropicToolItem } from '../provider-items.js'
import { ANTHROPIC_CITATION, isOpenAIEncrypted, type Annotation } from '../wire.js'
import type { Adapter, AsSent, CallSpec, StreamTranslator } from './adapter.js'

type Fields = Record<string, unknown>

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

/**
 * Earlier reasoning as Anthropic takes it back (with thinking on, a tool loop's last assistant turn
 * must begin with it): thinking with its signature, or, with no text part, redacted thinking's data.
 * Reasoning without a signature cannot be given back (Anthropic refuses unsigned thinking), nor
 * OpenAI's encrypted content (a Fernet token, `gAAAAA…`), which is no signature of Anthropic's.
 */
function thinkingBlock(e: Extract<Entry, { kind: 'reasoning' }>): ContentBlockParam | undefined {
  if (!e.state || isOpenAIEncrypted(e.state)) return undefined
  return e.text !== undefined
    ? { type: 'thinking', thinking: e.text, signature: e.state }
    : { type: 'redacted_thinking', data: e.state }
}

/** Whether the messages end in tool results whose assistant turn does not begin with (signed or redacted) thinking. */
function unsignedToolLoop(messages: MessageParam[]): boolean {
  const last = messages.at(-1)
  if (!Array.isArray(last?.content) || !last.content.some((b) => b.type === 'tool_result')) return false
  const turn = messages.at(-2)
  if (turn?.role !== 'assistant') return false
  const first = typeof turn.content === 'string' ? undefined : turn.content[0]
  return first?.type !== 'thinking' && first?.type !== 'redacted_thinking'
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
    } else if (e.kind === 'reasoning') {
      const block = thinkingBlock(e)
      if (block) append('assistant', [block])
    } else
      append('user', [
        {
          type: 'tool_result',
          tool_use_id: e.callId,
          content: e.parts ? e.parts.map((p) => block(p, caching)) : e.output,
        },
      ])
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

/**
 * Sampling settings the client's types no longer list: older models and Anthropic-compatible
 * servers take them, and a request that sets them means them.
 */
type Body = MessageCreateParams & { temperature?: number; top_p?: number; top_k?: number }

export const anthropic: Adapter<Body, Message> = {
  title: 'Anthropic Messages',
  path: '/messages',
  toolImages: true,
  webSearch: anthropicWebSearch,
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
    if (spec.tools.length || spec.search) {
      body.tools = spec.tools.map((t) => ({
        name: t.name,
        ...(t.description ? { description: t.description } : {}),
        input_schema: { type: 'object' as const, ...t.parameters },
      }))
      if (spec.search) body.tools.push(spec.search.tool as unknown as ToolUnion)
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
    // The budget counts within max_tokens and must be at least 1024. A tool loop whose last
    // assistant turn has no signed thinking to begin with (its reasoning came from another provider,
    // or the client did not give it back) is refused by Anthropic with thinking on; as Anthropic's
    // refusal advises, that turn is asked without thinking (docs/gateway.md).
    if (wanted !== undefined && maxTokens > 1024 && !unsignedToolLoop(body.messages))
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
    // What an Anthropic client sent that only Anthropic reads (mcp_servers, container…), as it came.
    if (spec.anthropicFields) Object.assign(body, spec.anthropicFields)
    return body
  },

  reply(r): Delta[] {
    const out: Delta[] = []
    let call = 0
    const blocks = (r.content ?? []) as (Fields | null)[]
    // A server tool's call is shown with its result, which names it by tool_use_id.
    const resultOf = new Map<string, Fields>()
    for (const b of blocks)
      if (b && typeof b.tool_use_id === 'string' && isToolResult(b)) resultOf.set(b.tool_use_id, b)
    blocks.forEach((b, index) => {
      if (!b) return
      if (b.type === 'thinking') {
        out.push({ type: 'reasoning', delta: String(b.thinking ?? ''), item: `b:${index}` })
        if (typeof b.signature === 'string' && b.signature) out.push({ type: 'reasoning_state', state: b.signature })
      } else if (b.type === 'redacted_thinking')
        out.push({ type: 'reasoning_redacted', data: String(b.data ?? ''), item: `b:${index}` })
      else if (b.type === 'text') {
        const text = String(b.text ?? '')
        out.push({ type: r.stop_reason === 'refusal' ? 'refusal' : 'text', delta: text })
        for (const c of Array.isArray(b.citations) ? b.citations : []) out.push(citation(c, text.length))
      } else if (b.type === 'tool_use') out.push(callStart(call++, b, 'id', JSON.stringify(b.input ?? {})))
      else if (isServerCall(b)) {
        const id = String(b.id ?? '')
        out.push({ type: 'provider_item', key: id, item: anthropicToolItem(b, resultOf.get(id)), done: true })
      } else if (unknownBlock(b))
        out.push({ type: 'provider_item', key: `b:${index}`, item: anthropicBlockItem(b), done: true })
    })
    out.push(...usage(r.usage as AsSent<Usage>), { type: 'finish', reason: finish(r.stop_reason) })
    return out
  },

  streamer(provider): StreamTranslator {
    /** The content blocks of the message so far by index: their type, and what streamed into them. */
    const open = new Map<number, { block: Fields; json: string; text: number; citations: Fields[] }>()
    /** Server tool calls waiting for their result (a result may not come: the turn paused). */
    const pending = new Map<string, Fields>()
    return (event) => {
      if (event === 'end') return flush(pending)
      const e = (event.json ?? JSON.parse(event.data)) as AsSent<RawMessageStreamEvent> & Fields
      const index = typeof e.index === 'number' ? e.index : 0
      // An error mid-stream (not among the client's stream event types: the client raises it).
      if ((e.type as string) === 'error') throw providerError(provider, e)
      switch (e.type) {
        case 'message_start':
          return usage(e.message?.usage)
        case 'content_block_start': {
          const block = (e.content_block ?? {}) as Fields
          open.set(index, { block, json: '', text: 0, citations: [] })
          if (block.type === 'tool_use') return [callStart(index, block, 'id', '')]
          if (block.type === 'thinking')
            return [{ type: 'reasoning', delta: String(block.thinking ?? ''), item: `b:${index}` }]
          if (block.type === 'redacted_thinking')
            return [{ type: 'reasoning_redacted', data: String(block.data ?? ''), item: `b:${index}` }]
          if (block.type === 'text' && typeof block.text === 'string' && block.text) {
            open.get(index)!.text += block.text.length
            return [{ type: 'text', delta: block.text }]
          }
          if (isToolResult(block) && typeof block.tool_use_id === 'string') {
            const call = pending.get(block.tool_use_id)
            if (!call) return []
            pending.delete(block.tool_use_id)
            return [{ type: 'provider_item', key: block.tool_use_id, item: anthropicToolItem(call, block), done: true }]
          }
          if (unknownBlock(block))
            return [{ type: 'provider_item', key: `b:${index}`, item: anthropicBlockItem(block), done: true }]
          return []
        }
        case 'content_block_delta': {
          const d = (e.delta ?? {}) as Fields
          const at = open.get(index)
          if (d.type === 'text_delta') {
            const text = String(d.text ?? '')
            if (at) at.text += text.length
            return [{ type: 'text', delta: text }]
          }
          if (d.type === 'thinking_delta')
            return [{ type: 'reasoning', delta: String(d.thinking ?? ''), item: `b:${index}` }]
          if (d.type === 'signature_delta') return [{ type: 'reasoning_state', state: String(d.signature ?? '') }]
          if (d.type === 'citations_delta') {
            // Citations name no indices: each covers its text block, known once the block ends.
            if (at && d.citation && typeof d.citation === 'object') at.citations.push(d.citation as Fields)
            return []
          }
          if (d.type === 'input_json_delta') {
            const piece = String(d.partial_json ?? '')
            if (at) at.json += piece
            if (at && isServerCall(at.block)) return []
            return [{ type: 'tool_call', index, arguments: piece }]
          }
          return []
        }
        case 'content_block_stop': {
          const at = open.get(index)
          open.delete(index)
          if (!at) return []
          if (at.citations.length) return at.citations.map((c) => citation(c, at.text))
          // A call whose input came whole with its start and never in pieces (the grammar allows it; some proxies do it).
          if (at.block.type === 'tool_use' && !at.json) {
            const input = at.block.input
            if (input && typeof input === 'object' && Object.keys(input).length)
              return [{ type: 'tool_call', index, arguments: JSON.stringify(input) }]
          }
          if (isServerCall(at.block)) {
            let input: unknown = at.block.input ?? {}
            try {
              if (at.json) input = JSON.parse(at.json)
            } catch {}
            const call: Fields = { ...at.block, input }
            const id = String(at.block.id ?? '')
            pending.set(id, call)
            return [{ type: 'provider_item', key: id, item: anthropicToolItem(call, undefined), done: false }]
          }
          return []
        }
        case 'message_delta':
          return [
            ...usage(e.usage),
            ...(e.delta?.stop_reason ? [{ type: 'finish' as const, reason: finish(e.delta.stop_reason) }] : []),
          ]
        default:
          return []
      }
    }
  },
}

/** The block kinds Roster reads; any other is carried as the provider's item. */
const KNOWN_BLOCKS = new Set(['text', 'thinking', 'redacted_thinking', 'tool_use'])
const unknownBlock = (b: Fields) =>
  typeof b.type === 'string' && !KNOWN_BLOCKS.has(b.type) && !isServerCall(b) && !isToolResult(b)

/** Server tool calls the turn ended before their result came: closed as they were. */
function flush(pending: Map<string, Fields>): Delta[] {
  const out: Delta[] = [...pending].map(([key, call]) => ({
    type: 'provider_item' as const,
    key,
    item: anthropicToolItem(call, undefined),
    done: true,
  }))
  pending.clear()
  return out
}

/** A block for a tool the provider runs itself (web search, web fetch, code execution, MCP…). */
const isServerCall = (b: Fields) => b.type === 'server_tool_use' || b.type === 'mcp_tool_use'
/** The result of such a tool (`web_search_tool_result`, `mcp_tool_result`, `code_execution_tool_result`…). */
const isToolResult = (b: Fields) =>
  typeof b.type === 'string' && b.type !== 'tool_result' && b.type.endsWith('_tool_result')

/**
 * An Anthropic citation as the Responses wire's annotation: a web search result's as `url_citation`
 * (covering its text block), any other kind as it came, under its own type; either way the
 * citation Anthropic sent rides along for the Messages door.
 */
function citation(c: unknown, covers: number): Delta {
  const raw = (c && typeof c === 'object' ? c : {}) as Fields
  const annotation: Annotation =
    typeof raw.url === 'string'
      ? {
          type: 'url_citation',
          url: raw.url,
          title: typeof raw.title === 'string' ? raw.title : '',
          start_index: 0,
          end_index: 0,
        }
      : { ...raw, type: typeof raw.type === 'string' ? raw.type : 'citation' }
  annotation[ANTHROPIC_CITATION] = raw
  return { type: 'annotation', annotation, covers }
}
