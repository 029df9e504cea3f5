import { z } from 'zod'
import { findModel } from '../model-directory.js'
import { inputItems, isMessage, type InputItem, type ResponsesRequest } from '../request.js'
import { estimateInputTokens } from '../token-estimate.js'
import type { Plugin } from './plugin.js'

// `context-compression` (engine `middle-out`, OpenRouter's transform of that name): an input longer
// than the model's context is fitted to it by leaving out items from its middle, where a long
// conversation matters least: the first message (the task) and the latest ones stay. A call and its
// result leave together (a provider refuses one without the other). Roster's token estimate
// decides, with room kept for the reply (the request's max_output_tokens, else the model's, else
// 4,096). An input that fits is left as it is.

const Parameters = z.object({ engine: z.literal('middle-out').optional() })

/** The call id that ties a call to its result (function calls and their outputs, and the like). */
const callIdOf = (item: InputItem): string | undefined =>
  !isMessage(item) && typeof item.call_id === 'string' ? item.call_id : undefined

/**
 * The input without items from its middle, nearest the middle first, until their weights come
 * within `budget` (or nothing more can leave). Linear in the items: a long input costs no more
 * than reading it.
 */
export function middleOut(items: InputItem[], weight: (item: InputItem) => number, budget: number): InputItem[] {
  const weights = items.map(weight)
  let total = weights.reduce((a, b) => a + b, 0)
  const last = items.length - 1
  if (total <= budget || last < 2) return items
  const calls = new Map<string, number[]>()
  items.forEach((item, i) => {
    const call = callIdOf(item)
    if (call !== undefined) calls.set(call, [...(calls.get(call) ?? []), i])
  })
  const gone = new Uint8Array(items.length)
  const middle = Math.floor(items.length / 2)
  for (let d = 0; total > budget && (middle - d > 0 || middle + d < last); d++) {
    for (const i of d === 0 ? [middle] : [middle - d, middle + d]) {
      if (total <= budget || i <= 0 || i >= last || gone[i]) continue
      const call = callIdOf(items[i]!)
      // What leaves with it: its call's other half too. Never the first item or the last.
      const group = call === undefined ? [i] : calls.get(call)!
      if (group.some((j) => j === 0 || j === last)) continue
      for (const j of group)
        if (!gone[j]) {
          gone[j] = 1
          total -= weights[j]!
        }
    }
  }
  return items.filter((_, i) => !gone[i])
}

export const contextCompression: Plugin<z.infer<typeof Parameters>> = {
  id: 'context-compression',
  parameters: Parameters,
  prepare(req, _p, { catalogue }) {
    const model = req.model ? findModel(catalogue, req.model) : undefined
    if (!model || typeof req.input === 'string' || !req.input?.length) return req
    const reply = req.max_output_tokens ?? model.max_output_tokens ?? 4_096
    const room = model.context_length - Math.min(reply, Math.floor(model.context_length / 2))
    // What stays whatever leaves (the instructions and tools), then each item's own share.
    const fixed = estimateInputTokens({ ...req, input: [] } as ResponsesRequest)
    const items = inputItems(req.input)
    const weight = (item: InputItem) => estimateInputTokens({ input: [item] } as ResponsesRequest)
    const kept = middleOut(items, weight, room - fixed)
    return kept === items ? req : { ...req, input: kept }
  },
}
