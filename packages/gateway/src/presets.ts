import { z } from 'zod'
import { ResponsesFields, ResponsesRequest } from './request.js'
import { describeIssues, gatewayError } from './errors.js'

// Presets: what of a request a preset keeps, how the other request formats map onto it, and how a
// request that names a preset is merged with the preset's designated version.

/** A JSON object as a client sent it (or as a preset stores it): fields unchecked until read. */
type Fields = Record<string, unknown>

/**
 * The request fields a preset's configuration holds. Everything else (input, instructions, which
 * becomes the system prompt, stream, store, prompt, messages, metadata, user, session_id, trace,
 * debug, previous_response_id, prompt_cache_key, …) belongs to one request and is not kept.
 */
export const PRESET_FIELDS = [
  'model',
  'models',
  'provider',
  'route',
  'service_tier',
  'temperature',
  'top_p',
  'top_k',
  'frequency_penalty',
  'presence_penalty',
  'top_logprobs',
  'max_output_tokens',
  'max_tool_calls',
  'stop_server_tools_when',
  'stop',
  'parallel_tool_calls',
  'tools',
  'tool_choice',
  'reasoning',
  'text',
  'include',
  'modalities',
  'image_config',
  'plugins',
  'truncation',
  'cache_control',
  'prompt_cache_options',
] as const

// The bodies the three preset creates read, as the API document describes them. The routes check
// them as presetFrom* below do (the kept fields with the request's own rules; the rest ignored).
const keptFields = Object.fromEntries([...PRESET_FIELDS, 'instructions'].map((k) => [k, true])) as {
  [K in (typeof PRESET_FIELDS)[number] | 'instructions']: true
}
export const PresetResponsesBody = ResponsesFields.pick(keptFields).describe(
  'A Responses request body: the kept fields become the configuration, instructions the system prompt; the rest is ignored.',
)
const anyFields = z.unknown()
const sampling = {
  temperature: z.number().optional(),
  top_p: z.number().optional(),
  top_k: z.int().optional(),
  model: z.string().optional(),
  models: z.array(z.string()).optional(),
  provider: anyFields.optional(),
  plugins: anyFields.optional(),
  service_tier: z.string().optional(),
}
export const PresetChatBody = z
  .looseObject({
    ...sampling,
    messages: z.array(z.looseObject({ role: z.string(), content: anyFields })).optional(),
    max_tokens: z.int().optional(),
    max_completion_tokens: z.int().optional(),
    stop: z.union([z.string(), z.array(z.string())]).optional(),
    tools: z
      .array(
        z.looseObject({
          type: z.string(),
          function: z
            .looseObject({
              name: z.string(),
              description: z.string().optional(),
              parameters: anyFields.optional(),
              strict: z.boolean().optional(),
            })
            .optional(),
        }),
      )
      .optional(),
    tool_choice: anyFields.optional(),
    response_format: z.looseObject({ type: z.string() }).optional(),
    reasoning_effort: z.string().optional(),
    reasoning: anyFields.optional(),
  })
  .describe(
    'A Chat Completions request body: system and developer messages become the system prompt, the other settings the configuration.',
  )
export const PresetMessagesBody = z
  .looseObject({
    ...sampling,
    system: z.union([z.string(), z.array(z.looseObject({ type: z.string(), text: z.string().optional() }))]).optional(),
    max_tokens: z.int().optional(),
    stop_sequences: z.array(z.string()).optional(),
    tools: z
      .array(
        z.looseObject({ name: z.string(), description: z.string().optional(), input_schema: anyFields.optional() }),
      )
      .optional(),
    tool_choice: z.looseObject({ type: z.string(), name: z.string().optional() }).optional(),
    thinking: z.looseObject({ type: z.string(), budget_tokens: z.int().optional() }).optional(),
  })
  .describe(
    'An Anthropic Messages request body: system becomes the system prompt, the other settings the configuration.',
  )

/** A slug: 1–64 characters of a–z, 0–9, `-`, `_`, `.`, starting and ending with a letter or digit. */
export const PresetSlug = z
  .string()
  .regex(
    /^[a-z0-9](?:[a-z0-9._-]{0,62}[a-z0-9])?$/,
    'a slug is 1–64 characters of a–z, 0–9, "-", "_" and ".", starting and ending with a letter or digit',
  )

/** What a preset version is made of: the kept fields (validated with their request limits) and the system prompt. */
export interface PresetContent {
  config: Fields
  systemPrompt: string | null
}

const keep = (body: Fields): Fields =>
  Object.fromEntries(PRESET_FIELDS.filter((k) => body[k] !== undefined).map((k) => [k, body[k]]))

/** Validates the kept fields with the request's own rules; the rest is ignored, not checked. */
function validated(config: Fields, where: string): Fields {
  const parsed = ResponsesFields.pick(
    Object.fromEntries(PRESET_FIELDS.map((k) => [k, true])) as { [K in (typeof PRESET_FIELDS)[number]]: true },
  ).safeParse(config)
  if (!parsed.success) {
    throw new PresetInputError(`invalid ${where}: ${describeIssues(parsed.error)}`)
  }
  return keep(parsed.data as Fields)
}

export class PresetInputError extends Error {
  override name = 'PresetInputError'
}

const isObject = (v: unknown): v is Fields => typeof v === 'object' && v !== null && !Array.isArray(v)
const textOf = (content: unknown): string =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content.map((p) => (isObject(p) && typeof p.text === 'string' ? p.text : '')).join('')
      : ''

/** From a Responses body (POST /presets/{slug}/responses). */
export function presetFromResponses(body: unknown): PresetContent {
  if (!isObject(body)) throw new PresetInputError('the body must be a JSON object')
  const instructions = body.instructions
  if (instructions !== undefined && instructions !== null && typeof instructions !== 'string')
    throw new PresetInputError('instructions must be a string')
  return {
    config: validated(keep(body), 'preset configuration'),
    systemPrompt: (instructions as string | null | undefined) ?? null,
  }
}

/** From a Chat Completions body (POST /presets/{slug}/chat/completions): system messages become the prompt. */
export function presetFromChat(body: unknown): PresetContent {
  if (!isObject(body)) throw new PresetInputError('the body must be a JSON object')
  const config: Fields = keep(body)
  delete config.stop
  const system = (Array.isArray(body.messages) ? body.messages : [])
    .filter((m) => isObject(m) && (m.role === 'system' || m.role === 'developer'))
    .map((m: Fields) => textOf(m.content))
  const max = body.max_completion_tokens ?? body.max_tokens
  if (max !== undefined) config.max_output_tokens = max
  if (body.stop !== undefined) config.stop = body.stop
  if (Array.isArray(body.tools)) {
    config.tools = body.tools.map((t: unknown) =>
      isObject(t) && t.type === 'function' && isObject(t.function)
        ? {
            type: 'function',
            name: t.function.name,
            description: t.function.description,
            parameters: t.function.parameters ?? null,
            strict: t.function.strict,
          }
        : t,
    )
  }
  const choice = body.tool_choice
  if (isObject(choice) && choice.type === 'function')
    config.tool_choice = { type: 'function', name: isObject(choice.function) ? choice.function.name : undefined }
  const format = body.response_format
  if (isObject(format)) {
    config.text =
      format.type === 'json_schema'
        ? { format: { type: 'json_schema', ...(isObject(format.json_schema) ? format.json_schema : {}) } }
        : { format: { type: format.type } }
  }
  if (typeof body.reasoning_effort === 'string') config.reasoning = { effort: body.reasoning_effort }
  if (isObject(body.reasoning)) config.reasoning = body.reasoning
  return { config: validated(config, 'preset configuration'), systemPrompt: system.length ? system.join('\n\n') : null }
}

/** From an Anthropic Messages body (POST /presets/{slug}/messages): `system` becomes the prompt. */
export function presetFromMessages(body: unknown): PresetContent {
  if (!isObject(body)) throw new PresetInputError('the body must be a JSON object')
  const config: Fields = {}
  for (const k of ['model', 'models', 'provider', 'temperature', 'top_p', 'top_k', 'service_tier', 'plugins'] as const)
    if (body[k] !== undefined) config[k] = body[k]
  if (body.max_tokens !== undefined) config.max_output_tokens = body.max_tokens
  if (body.stop_sequences !== undefined) config.stop = body.stop_sequences
  if (Array.isArray(body.tools)) {
    config.tools = body.tools.map((t: unknown) =>
      isObject(t) && t.input_schema
        ? { type: 'function', name: t.name, description: t.description, parameters: t.input_schema }
        : t,
    )
  }
  const choice = body.tool_choice
  if (isObject(choice)) {
    config.tool_choice =
      choice.type === 'tool'
        ? { type: 'function', name: choice.name }
        : choice.type === 'any'
          ? 'required'
          : choice.type === 'none'
            ? 'none'
            : 'auto'
  }
  if (isObject(body.thinking) && body.thinking.type === 'enabled')
    config.reasoning = {
      enabled: true,
      ...(body.thinking.budget_tokens ? { max_tokens: body.thinking.budget_tokens } : {}),
    }
  const system = body.system === undefined ? null : textOf(body.system)
  return { config: validated(config, 'preset configuration'), systemPrompt: system }
}

/** The preset a request names, if any, and the model named beside it (`<model>@preset/<slug>`). */
export function presetReference(req: {
  model?: string
  preset?: string
}): { slug: string; model?: string } | undefined {
  const at = req.model?.indexOf('@preset/') ?? -1
  if (at >= 0) {
    const slug = req.model!.slice(at + '@preset/'.length)
    return at > 0 ? { slug, model: req.model!.slice(0, at) } : { slug }
  }
  return req.preset ? { slug: req.preset } : undefined
}

/**
 * A request merged with a preset version: the preset's fields are defaults, every field the
 * request gives wins (whole fields, not merged inside), a model written before `@preset/` wins
 * over both, and the system prompt is used when the request has no `instructions`.
 */
export function applyPreset(
  req: ResponsesRequest,
  version: { config: Fields; systemPrompt: string | null },
): ResponsesRequest {
  const ref = presetReference(req)
  const given: Fields = { ...req }
  delete given.preset
  if (ref) delete given.model
  if (ref?.model) given.model = ref.model
  for (const k of Object.keys(given)) if (given[k] === undefined) delete given[k]
  // `auto` is no preference (the official client always sends it), so the preset's tier stands.
  if (given.service_tier === 'auto' && version.config.service_tier !== undefined) delete given.service_tier
  const merged: Fields = { ...version.config, ...given }
  // A request that names a model list replaces the preset's model too, and the other way round.
  if (given.models && !given.model && !ref?.model) delete merged.model
  if (merged.instructions == null && version.systemPrompt != null) merged.instructions = version.systemPrompt
  const parsed = ResponsesRequest.safeParse(merged)
  if (!parsed.success) {
    throw new PresetInputError(`the request with its preset is invalid: ${describeIssues(parsed.error)}`)
  }
  return parsed.data
}

/** A preset's designated version, as the engine is given it: the lookup is a port (the API's database). */
export interface DesignatedPreset {
  presetId: string
  config: Fields
  systemPrompt: string | null
}

/** Where the engine finds a workspace's preset by its slug (undefined: none of that slug). */
export type PresetLookup = (workspaceId: string, slug: string) => Promise<DesignatedPreset | undefined>

/**
 * A request that names a preset, merged with its designated version (the request wins): a new
 * request and the preset's id; undefined when it names none (most requests, which go on without
 * waiting a tick). No preset of that slug: 404; a merge the schema refuses: 400.
 */
export function withPreset(
  lookup: PresetLookup | undefined,
  workspaceId: string | null | undefined,
  req: ResponsesRequest,
): Promise<{ req: ResponsesRequest; presetId: string }> | undefined {
  const ref = presetReference(req)
  if (!ref) return undefined
  return (async () => {
    const version = lookup && workspaceId ? await lookup(workspaceId, ref.slug) : undefined
    if (!version) throw gatewayError('not_found', `no preset ${ref.slug} in this workspace`)
    try {
      return { req: applyPreset(req, version), presetId: version.presetId }
    } catch (err) {
      if (err instanceof PresetInputError) throw gatewayError('invalid_request', err.message)
      throw err
    }
  })()
}
