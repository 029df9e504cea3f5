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

/** The input without items from its middle until `fits` says it fits (or nothing more can leave). */
export function middleOut(items: InputItem[], fits: (items: InputItem[]) => boolean): InputItem[] {
  let kept = items
  while (kept.length > 2 && !fits(kept)) {
    const last = kept.length - 1
    // What leaves with the item at `i`: its call's other half too. Never the first item or the last.
    const leaving = (i: number) => {
      const call = callIdOf(kept[i]!)
      const gone = new Set(
        call === undefined ? [i] : kept.flatMap((x, j) => (j === i || callIdOf(x) === call ? [j] : [])),
      )
      return gone.has(0) || gone.has(last) ? undefined : gone
    }
    // The item nearest the middle that can leave.
    const middle = Math.floor(kept.length / 2)
    let gone: Set<number> | undefined
    for (let d = 0; !gone && d <= middle; d++)
      gone = leaving(middle - d) ?? (middle + d < last ? leaving(middle + d) : undefined)
    if (!gone) break
    const out = gone
    kept = kept.filter((_, i) => !out.has(i))
  }
  return kept
}

export const contextCompression: Plugin<z.infer<typeof Parameters>> = {
  id: 'context-compression',
  parameters: Parameters,
  prepare(req, _p, { catalogue }) {
    const model = req.model ? findModel(catalogue, req.model) : undefined
    if (!model || typeof req.input === 'string' || !req.input?.length) return req
    const reply = req.max_output_tokens ?? model.max_output_tokens ?? 4_096
    const room = model.context_length - Math.min(reply, Math.floor(model.context_length / 2))
    const fits = (input: InputItem[]) => estimateInputTokens({ ...req, input } as ResponsesRequest) <= room
    const items = inputItems(req.input)
    if (fits(items)) return req
    return { ...req, input: middleOut(items, fits) }
  },
}
