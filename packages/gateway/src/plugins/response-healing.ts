import { jsonrepair } from 'jsonrepair'
import { z } from 'zod'
import { isProviderItem } from '../wire.js'
import type { Plugin } from './plugin.js'

// `response-healing`: a whole reply that was asked to be JSON (`text.format` json_schema or
// json_object; `response_format` on /chat/completions) and is not, repaired where it can be: the
// JSON taken out of a markdown fence or the prose around it, then its syntax mended (missing
// brackets, trailing commas, unquoted keys, single quotes) by jsonrepair. A reply that already
// parses, or that no repair makes parse, is left as it came. Streams pass as they are (their text
// has reached the client before it is whole), as OpenRouter documents.

/** The JSON a text holds, or undefined when nothing in it repairs to JSON. */
export function healJson(text: string): string | undefined {
  const fenced = /```(?:json|JSON)?\s*\n?([\s\S]*?)(?:\n?```|$)/.exec(text)?.[1]
  const start = text.search(/[[{]/)
  const end = Math.max(text.lastIndexOf('}'), text.lastIndexOf(']'))
  const candidates = [fenced, start === -1 ? undefined : text.slice(start, end > start ? end + 1 : undefined), text]
  for (const candidate of candidates) {
    if (!candidate?.trim()) continue
    try {
      const repaired = jsonrepair(candidate.trim())
      const value: unknown = JSON.parse(repaired)
      // A bare word or number "repaired" from prose is no answer to a request for JSON.
      if (value !== null && typeof value === 'object') return JSON.stringify(value)
    } catch {}
  }
  return undefined
}

const parses = (text: string) => {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}

export const responseHealing: Plugin = {
  id: 'response-healing',
  parameters: z.object({}),
  finish(run) {
    const format = (run.req.text as { format?: { type?: unknown } } | undefined)?.format?.type
    if (run.live || (format !== 'json_schema' && format !== 'json_object')) return
    for (const item of run.assembler.output) {
      if (isProviderItem(item) || item.type !== 'message') continue
      for (const part of item.content) {
        if (part.type !== 'output_text' || parses(part.text)) continue
        const healed = healJson(part.text)
        if (healed === undefined) continue
        part.text = healed
        // The indices of the text's annotations no longer hold.
        part.annotations = []
        part.logprobs = []
      }
    }
  },
}
