import { invalid } from '../errors.js'
import type { InputItem } from '../request.js'
import { isOpenAIEncrypted, REDACTED_THINKING, type ReasoningItem } from '../wire.js'

// Reasoning as Chat Completions carries it in OpenRouter's form: `reasoning` (the text) and
// `reasoning_details` (each reasoning item, with the provider's opaque state: Anthropic's thinking
// signature, its redacted thinking, OpenAI's encrypted content), given back by the client on the
// assistant message of the next turn, as a tool loop with thinking on requires.

export type ReasoningDetail =
  | { type: 'reasoning.text'; text?: string; signature?: string; index: number }
  | { type: 'reasoning.summary'; summary: string; index: number }
  | { type: 'reasoning.encrypted'; data: string; index: number }

/** A finished reasoning item as its details (the `index`-th reasoning item of the reply). */
export function reasoningDetails(item: ReasoningItem, index: number): ReasoningDetail[] {
  const text = item.summary.map((s) => s.text).join('')
  const state = item.encrypted_content
  if (item[REDACTED_THINKING] && state) return [{ type: 'reasoning.encrypted', data: state, index }]
  if (state && isOpenAIEncrypted(state))
    return [
      ...(text ? [{ type: 'reasoning.summary' as const, summary: text, index }] : []),
      { type: 'reasoning.encrypted', data: state, index },
    ]
  if (!text && !state) return []
  return [{ type: 'reasoning.text', text, ...(state ? { signature: state } : {}), index }]
}

/** What a streamed reasoning item's state adds when the item is done (its text went as it came). */
export function reasoningStateDetail(item: ReasoningItem, index: number): ReasoningDetail | undefined {
  const state = item.encrypted_content
  if (!state) return undefined
  if (item[REDACTED_THINKING] || isOpenAIEncrypted(state)) return { type: 'reasoning.encrypted', data: state, index }
  return { type: 'reasoning.text', signature: state, index }
}

/**
 * An assistant message's `reasoning_details` as the neutral request's reasoning items, in order.
 * Pieces of one item (a stream's details, given back unmerged) share an index: they are joined,
 * text after text, the signature or data from whichever piece has it.
 */
export function reasoningFromDetails(details: unknown, where: string): InputItem[] {
  if (details == null) return []
  if (!Array.isArray(details)) throw invalid(`${where}/reasoning_details must be an array`)
  const items = new Map<unknown, { text: string[]; state?: string; texts: boolean }>()
  details.forEach((d: unknown, i) => {
    const at = `${where}/reasoning_details/${i}`
    if (!d || typeof d !== 'object') throw invalid(`${at} must be an object`)
    const o = d as Record<string, unknown>
    const key = typeof o.index === 'number' ? o.index : `at ${i}`
    const item = items.get(key) ?? { text: [], texts: false }
    items.set(key, item)
    const str = (k: string) => {
      const v = o[k]
      if (v != null && typeof v !== 'string') throw invalid(`${at}/${k} must be a string`)
      return v ?? undefined
    }
    switch (o.type) {
      case 'reasoning.text': {
        const text = str('text')
        const signature = str('signature')
        item.texts = true
        if (text) item.text.push(text)
        if (signature) item.state = signature
        return
      }
      case 'reasoning.summary': {
        const summary = str('summary')
        item.texts = true
        if (summary) item.text.push(summary)
        return
      }
      case 'reasoning.encrypted': {
        const data = str('data')
        if (data) item.state = data
        return
      }
      default:
        // Details of kinds Roster does not make (a server tool's record…) are the provider's own; none goes back.
        return
    }
  })
  return [...items.values()].flatMap((r) =>
    r.texts || r.state
      ? [
          {
            type: 'reasoning',
            summary: r.texts ? [{ type: 'summary_text', text: r.text.join('') }] : [],
            ...(r.state ? { encrypted_content: r.state } : {}),
          },
        ]
      : [],
  )
}
