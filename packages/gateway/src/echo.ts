import { tierPreference, type ResponsesRequest } from './request.js'
import type { ResponseObject } from './wire.js'
import { flatName } from './namespaces.js'

type Tool = NonNullable<ResponsesRequest['tools']>[number]

/**
 * The settings a Response reports when the request left them out: the values in force, since the
 * Open Responses schema allows no null for them. Roster sends none of these upstream unless asked,
 * so they are the providers' own defaults (the same at OpenAI and Anthropic); it never truncates
 * input, and runs nothing in the background. Listed in docs/gateway.md.
 */
export const EFFECTIVE_DEFAULTS = Object.freeze({
  temperature: 1,
  top_p: 1,
  presence_penalty: 0,
  frequency_penalty: 0,
  top_logprobs: 0,
  truncation: 'disabled',
  background: false,
})

// The schema's reasoning efforts are none…xhigh and its verbosities low…high; the official client
// also sends `minimal` and `max`. The Response reports the nearest level the schema has (the
// request's own value still goes upstream).
const EFFORT: Record<string, string> = { minimal: 'low', max: 'xhigh' }
const VERBOSITY: Record<string, string> = { xhigh: 'high', max: 'high' }

/** The tier an endpoint served: the first of the request's preferences that it offers. */
export function servedTier(requested: ResponsesRequest['service_tier'], offered: readonly string[]): string {
  for (const tier of tierPreference(requested)) if (offered.includes(tier)) return tier
  return 'default'
}

/** A function tool as the schema's FunctionTool has it: every key present, strict as sent upstream. */
const echoFunction = (t: Record<string, unknown>, name = t.name): Tool =>
  ({
    ...t,
    type: 'function',
    name,
    description: t.description ?? null,
    parameters: t.parameters ?? null,
    strict: t.strict ?? false,
  }) as Tool

/**
 * The tools the model was offered, as the schema's tools are (function tools, and `prefix:name`
 * tools such as Roster's server tools): a namespace tool's functions under the names they were
 * offered by (namespaces.ts); kinds Roster left out (the answer's Warning names them) are not reported.
 */
function echoTools(tools: ResponsesRequest['tools']): Tool[] {
  if (!tools?.length) return []
  return tools.flatMap((t): Tool[] => {
    if (t.type === 'function') return [echoFunction(t)]
    if (t.type.includes(':')) return [t]
    if (t.type !== 'namespace' || !Array.isArray(t.tools)) return []
    const ns = String(t.name)
    return (t.tools as Record<string, unknown>[])
      .filter((f) => f?.type === 'function')
      .map((f) => echoFunction(f, flatName(ns, String(f.name))))
  })
}

/** An allowed_tools choice without its mode runs as `auto`, and a Response says so. */
function echoToolChoice(c: ResponsesRequest['tool_choice']): NonNullable<ResponsesRequest['tool_choice']> {
  if (c === undefined) return 'auto'
  return typeof c === 'object' && c.type === 'allowed_tools' && c.mode == null ? { ...c, mode: 'auto' } : c
}

const TEXT_FORMAT = Object.freeze({ format: Object.freeze({ type: 'text' }) })

/**
 * `text` as the schema's TextField has it. A json_schema format is reported with `schema: null`,
 * as the published schema requires of a Response (the client has the schema it sent).
 */
function echoText(text: ResponsesRequest['text']): object {
  if (!text) return TEXT_FORMAT
  const f = text.format
  const format = !f
    ? TEXT_FORMAT.format
    : f.type === 'json_schema'
      ? {
          type: 'json_schema',
          name: f.name ?? 'response',
          description: f.description ?? null,
          schema: null,
          strict: f.strict ?? false,
        }
      : { type: f.type }
  const verbosity = text.verbosity ? (VERBOSITY[text.verbosity] ?? text.verbosity) : undefined
  return verbosity ? { format, verbosity } : { format }
}

function echoReasoning(r: ResponsesRequest['reasoning']): object | null {
  if (!r) return null
  return { ...r, effort: r.effort ? (EFFORT[r.effort] ?? r.effort) : null, summary: r.summary ?? null }
}

/** Writes the request's settings into a Response as it reports them (ResponseResource's echoed keys). */
export function echoSettings(req: ResponsesRequest, tier: string, body: ResponseObject): void {
  body.instructions = req.instructions ?? null
  body.metadata = req.metadata ?? null
  body.temperature = req.temperature ?? EFFECTIVE_DEFAULTS.temperature
  body.top_p = req.top_p ?? EFFECTIVE_DEFAULTS.top_p
  body.frequency_penalty = req.frequency_penalty ?? EFFECTIVE_DEFAULTS.frequency_penalty
  body.presence_penalty = req.presence_penalty ?? EFFECTIVE_DEFAULTS.presence_penalty
  body.top_logprobs = req.top_logprobs ?? EFFECTIVE_DEFAULTS.top_logprobs
  body.parallel_tool_calls = req.parallel_tool_calls ?? true
  body.tool_choice = echoToolChoice(req.tool_choice)
  body.tools = echoTools(req.tools)
  body.max_output_tokens = req.max_output_tokens ?? null
  body.max_tool_calls = req.max_tool_calls ?? null
  body.previous_response_id = null
  body.reasoning = echoReasoning(req.reasoning)
  body.service_tier = tier
  body.store = false
  body.background = EFFECTIVE_DEFAULTS.background
  body.text = echoText(req.text)
  body.truncation = req.truncation ?? EFFECTIVE_DEFAULTS.truncation
  body.safety_identifier = req.safety_identifier ?? null
  body.prompt_cache_key = req.prompt_cache_key ?? null
  body.prompt_cache_options = req.prompt_cache_options ?? null
}
