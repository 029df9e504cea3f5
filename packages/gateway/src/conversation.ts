import { isProviderRunInput } from './provider-items.js'
import { inputItems, isMessage, type InputItem, type ResponsesRequest } from './request.js'
import { invalid } from './errors.js'
import { flatName } from './namespaces.js'
import type { ReasoningItem } from './wire.js'

// The request's conversation in one neutral form that every adapter writes out in its own
// protocol: instructions first, developer folded into system, calls and their results paired by
// call id, cache breakpoints already placed.

export interface CacheMark {
  type: 'ephemeral'
  ttl?: '5m' | '1h'
}
export type Part =
  { kind: 'text'; text: string; cache?: CacheMark } | { kind: 'image'; url: string; detail?: string; cache?: CacheMark }
export type Entry =
  | { kind: 'message'; role: 'system' | 'user' | 'assistant'; parts: Part[] }
  | { kind: 'call'; callId: string; name: string; arguments: string }
  /**
   * A tool's result: its text, and where it holds an image (a screenshot a tool read), its parts
   * (text and images, in order), for the protocols that take images in tool results; routing
   * sends such a request only to those (never is an image read to a model as text).
   */
  | { kind: 'result'; callId: string; output: string; parts?: Part[] }
  /**
   * Earlier reasoning given back: its text (absent where the item had no text parts at all:
   * Anthropic's redacted thinking), and the provider's opaque state (Anthropic's thinking
   * signature, or its redacted thinking's data; OpenAI's encrypted content).
   * Only a protocol that needs it back writes it out (Anthropic, whose thinking with tools requires
   * the last turn's thinking, signed); the others leave it out.
   */
  | { kind: 'reasoning'; text?: string; state?: string }

/** A content part as sent: its `type`, other fields unchecked until read. */
type PartInput = { type: string; [field: string]: unknown }

function cacheMark(p: PartInput): CacheMark | undefined {
  const c = p.cache_control as { type?: unknown; ttl?: unknown } | null | undefined
  if (c && c.type === 'ephemeral')
    return { type: 'ephemeral', ...(c.ttl === '5m' || c.ttl === '1h' ? { ttl: c.ttl } : {}) }
  return p.prompt_cache_breakpoint ? { type: 'ephemeral' } : undefined
}

function part(p: PartInput, where: string): Part | null {
  const cache = cacheMark(p)
  switch (p.type) {
    case 'input_text':
    case 'output_text':
    case 'text':
      return { kind: 'text', text: String(p.text ?? ''), ...(cache ? { cache } : {}) }
    case 'refusal':
      return { kind: 'text', text: String(p.refusal ?? '') }
    case 'input_image': {
      const url = p.image_url ?? p.url
      if (typeof url !== 'string' || !url)
        throw invalid(
          `${where} input_image needs image_url (an https URL or a data: URL); file ids are not served here`,
        )
      return {
        kind: 'image',
        url,
        ...(typeof p.detail === 'string' ? { detail: p.detail } : {}),
        ...(cache ? { cache } : {}),
      }
    }
    default:
      throw invalid(`${where} content parts of type ${p.type} are not served by this Roster`)
  }
}

const parts = (content: unknown, where: string): Part[] =>
  typeof content === 'string'
    ? [{ kind: 'text', text: content }]
    : Array.isArray(content)
      ? content.map((p: PartInput, i) => part(p, `${where}/content/${i}`)).filter((p): p is Part => p !== null)
      : []

const asText = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v ?? null))

/** The request's input (and any turns the tool loop added) as neutral entries. */
export function conversation(req: ResponsesRequest, extra: InputItem[] = []): Entry[] {
  const out: Entry[] = []
  if (req.instructions) out.push({ kind: 'message', role: 'system', parts: [{ kind: 'text', text: req.instructions }] })
  const items = inputItems(req.input)
  const all = extra.length ? [...items, ...extra] : items
  for (let i = 0; i < all.length; i++) {
    const item = all[i]!
    // Where an item came from, for an error: the request's input, or a turn the tool loop added.
    const where = i < items.length ? (typeof req.input === 'string' ? '/input' : `/input/${i}`) : 'a server tool turn'
    if (isMessage(item)) {
      out.push({
        kind: 'message',
        role: item.role === 'developer' ? 'system' : item.role,
        parts: parts(item.content, where),
      })
    } else if (item.type === 'function_call') {
      // A namespace tool's function goes back under the flat name it was offered by (namespaces.ts).
      const name = String(item.name)
      out.push({
        kind: 'call',
        callId: String(item.call_id),
        name: typeof item.namespace === 'string' && item.namespace ? flatName(item.namespace, name) : name,
        arguments: asText(item.arguments ?? '{}'),
      })
    } else if (item.type === 'function_call_output') {
      out.push(resultEntry(String(item.call_id), item.output, where))
    } else if (item.type === 'apply_patch_call' || (item.type === 'openrouter:apply_patch' && item.operation)) {
      // A patch handed over (server-tools/apply-patch.ts), given back: the model's call, as it made it.
      out.push({ kind: 'call', callId: String(item.call_id), name: 'apply_patch', arguments: asText(item.operation) })
    } else if (item.type === 'apply_patch_call_output') {
      // What the client made of it: its status, and what it said.
      const said = typeof item.output === 'string' && item.output ? `: ${item.output}` : ''
      out.push({ kind: 'result', callId: String(item.call_id), output: `${String(item.status ?? 'completed')}${said}` })
    } else if (typeof item.type === 'string' && item.type.startsWith('openrouter:') && item.call_id) {
      // A server tool's item echoed back from an earlier response: the model sees the call and result.
      const callId = String(item.call_id)
      out.push({
        kind: 'call',
        callId,
        name: item.type.slice('openrouter:'.length),
        arguments: asText(item.arguments ?? '{}'),
      })
      out.push({ kind: 'result', callId, output: asText(item.output) })
    } else if (item.type === 'reasoning') {
      out.push(reasoningEntry(item))
    } else if (typeof item.type === 'string' && isProviderRunInput(item.type)) {
      // Tools the provider ran (web search, MCP…) are the provider's own state; they are not
      // replayed to another turn (the text that followed holds their results).
    } else {
      throw invalid(`${where} input items of type ${String(item.type)} are not served by this Roster`)
    }
  }
  placeAutomaticBreakpoint(req, out)
  return out
}

/**
 * A function call's output: a string, or content parts (the Responses API's input_text and
 * input_image, as Codex's view_image sends). Text parts alone are the text they hold; with an
 * image, the parts are kept as they are.
 */
function resultEntry(callId: string, output: unknown, where: string): Entry {
  if (!Array.isArray(output)) return { kind: 'result', callId, output: asText(output) }
  const given = output.map((p: PartInput, i) => {
    if (p?.type === 'input_file')
      throw invalid(
        `${where}/output/${i} files in tool outputs are not served by this Roster (served: input_text, input_image)`,
      )
    return part(p ?? { type: 'none' }, `${where}/output/${i}`)
  })
  const resultParts = given.filter((p): p is Part => p !== null)
  const text = resultParts.map((p) => (p.kind === 'text' ? p.text : '')).join('')
  return resultParts.some((p) => p.kind === 'image')
    ? { kind: 'result', callId, output: text, parts: resultParts }
    : { kind: 'result', callId, output: text }
}

/** A reasoning input item's text (its summary parts, else its reasoning text, joined as they came) and state. */
function reasoningEntry(item: InputItem): Entry {
  const r = item as { summary?: unknown; content?: unknown; encrypted_content?: unknown }
  const texts = (parts: unknown, type: string) =>
    Array.isArray(parts)
      ? parts.flatMap((p: { type?: unknown; text?: unknown }) =>
          p && p.type === type && typeof p.text === 'string' ? [p.text] : [],
        )
      : []
  const summary = texts(r.summary, 'summary_text')
  const parts = summary.length ? summary : texts(r.content, 'reasoning_text')
  const state = typeof r.encrypted_content === 'string' && r.encrypted_content ? r.encrypted_content : undefined
  return { kind: 'reasoning', ...(parts.length ? { text: parts.join('') } : {}), ...(state ? { state } : {}) }
}

/** An output reasoning item as the input item that gives it back to the next turn (its text and state, as they came). */
export const reasoningInput = (r: ReasoningItem): InputItem => ({
  type: 'reasoning',
  id: r.id,
  summary: r.summary.map((p) => ({ type: 'summary_text', text: p.text })),
  ...(r.encrypted_content ? { encrypted_content: r.encrypted_content } : {}),
})

/**
 * Top-level cache_control puts one breakpoint on the last cacheable block (the last text part of
 * the prompt), unless prompt_cache_options.mode is explicit: then only marked blocks are cached.
 */
function placeAutomaticBreakpoint(req: ResponsesRequest, entries: Entry[]) {
  if (!req.cache_control || req.prompt_cache_options?.mode === 'explicit') return
  const mark = { type: 'ephemeral' as const, ...(req.cache_control.ttl ? { ttl: req.cache_control.ttl } : {}) }
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i]!
    if (e.kind !== 'message') continue
    const last = [...e.parts].reverse().find((p) => p.kind === 'text')
    if (last) {
      last.cache ??= mark
      return
    }
  }
}
