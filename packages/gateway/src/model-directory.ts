import { z } from 'zod'
import type { Catalogue, CatalogueModel } from './catalogue.js'

// The catalogue as the official client reads it: the models list with its filters and pages
// (`client.models.list`, `listForUser`, `count`, `get`), the providers (`client.providers.list`)
// and the endpoints marked zero-data-retention (`client.endpoints.listZdrEndpoints`).
// governance-contract.md §4 to §6.

const supportedParameters = (m: CatalogueModel) => [
  'max_tokens',
  'temperature',
  'top_p',
  'stop',
  'response_format',
  'structured_outputs',
  ...(m.capabilities.tools ? ['tools', 'tool_choice'] : []),
  ...(m.capabilities.reasoning ? ['reasoning', 'include_reasoning'] : []),
]

const inputModalities = (m: CatalogueModel) => (m.capabilities.images ? ['text', 'image'] : ['text'])

/** What a model answers in: an image generator images, every other model text. */
const outputModalities = (m: CatalogueModel) => (m.capabilities.image_generation ? ['image'] : ['text'])

export const architecture = (m: CatalogueModel) => ({
  modality: `${inputModalities(m).join('+')}->${outputModalities(m).join('+')}`,
  input_modalities: inputModalities(m),
  output_modalities: outputModalities(m),
})

/** Whether a model answers in text (not an image generator): the ones a text request may be given. */
export const answersText = (m: CatalogueModel) => !m.capabilities.image_generation

/** PublicPricing: USD per token (and per request, per image), as decimal strings. */
export const pricingOf = (p: CatalogueModel['pricing']) => ({
  prompt: p.input,
  completion: p.output,
  ...(p.cached_input ? { input_cache_read: p.cached_input } : {}),
  ...(p.cache_write ? { input_cache_write: p.cache_write } : {}),
  ...(p.reasoning ? { internal_reasoning: p.reasoning } : {}),
  ...(p.request ? { request: p.request } : {}),
  ...(p.image ? { image: p.image } : {}),
  ...(p.web_search ? { web_search: p.web_search } : {}),
})

/** The Model object (§4.1). */
export function modelObject(m: CatalogueModel) {
  return {
    id: m.id,
    canonical_slug: m.id,
    name: m.name,
    created: m.created,
    description: m.description ?? '',
    context_length: m.context_length,
    architecture: architecture(m),
    pricing: pricingOf(m.pricing),
    top_provider: {
      context_length: m.context_length,
      max_completion_tokens: m.max_output_tokens ?? null,
      is_moderated: false,
    },
    per_request_limits: null,
    supported_parameters: supportedParameters(m),
    supported_voices: null,
    default_parameters: null,
    links: { details: `/api/v1/models/${m.id}/endpoints` },
    ...(m.capabilities.reasoning ? { reasoning: { mandatory: false } } : {}),
    endpoints: m.endpoints.map((e) => ({ provider: e.provider, protocol: e.protocol, tiers: e.tiers })),
  }
}

/** The whole catalogue as one page (`GET /models` with no query: "the full list is returned"): every model answers in text. */
export function modelsList(catalogue: Catalogue) {
  return queryModels(catalogue, {})
}

const list = z
  .string()
  .max(2_000)
  .transform((s) =>
    s
      .split(',')
      .map((x) => x.trim().toLowerCase())
      .filter(Boolean),
  )
const amount = z.coerce.number().finite().min(0)
const SORTS = ['newest', 'pricing-low-to-high', 'pricing-high-to-low', 'context-high-to-low'] as const
/** Filters over data the catalogue does not hold (rankings, benchmarks, ages): no model matches them. */
const UNKNOWN_DATA = [
  'category',
  'arch',
  'distillable',
  'region',
  'min_age_days',
  'max_age_days',
  'min_intelligence_index',
  'max_intelligence_index',
  'min_coding_index',
  'max_coding_index',
  'min_agentic_index',
  'max_agentic_index',
  'min_tool_success_rate',
  'max_tool_success_rate',
] as const

/** `GET /models` and `/models/user`'s query (§4). Names the client sends; others are ignored. */
export const ModelsQuery = z.object({
  offset: z.coerce.number().int().min(0).max(1_000_000).optional(),
  limit: z.coerce.number().int().min(1).max(1_000).optional(),
  q: z.string().max(200).optional(),
  context: z.coerce.number().int().min(0).optional(),
  output_modalities: list.optional(),
  input_modalities: list.optional(),
  supported_parameters: list.optional(),
  model_authors: list.optional(),
  providers: list.optional(),
  min_price: amount.optional(),
  max_price: amount.optional(),
  min_output_price: amount.optional(),
  max_output_price: amount.optional(),
  zdr: z.enum(['true', 'false']).optional(),
  sort: z.string().max(100).optional(),
  ...Object.fromEntries(UNKNOWN_DATA.map((k) => [k, z.string().max(200).optional()])),
})
export type ModelsQuery = z.infer<typeof ModelsQuery>

/** Why a query cannot be answered (400), or undefined. */
export function modelsQueryProblem(q: ModelsQuery): string | undefined {
  if (q.sort !== undefined && !(SORTS as readonly string[]).includes(q.sort))
    return `sort ${JSON.stringify(q.sort)} is not one Roster can order by: ${SORTS.join(', ')}`
  return undefined
}

/** $ per million tokens, as the price filters read it. */
const perMillion = (price: string) => Number(price) * 1_000_000

function matches(m: CatalogueModel, q: ModelsQuery): boolean {
  const query = q as Record<string, unknown>
  if (UNKNOWN_DATA.some((k) => query[k] !== undefined)) return false
  // "Defaults to `text`", and `all` is every model.
  const outputs = q.output_modalities ?? ['text']
  if (!outputs.includes('all') && !outputModalities(m).some((o) => outputs.includes(o))) return false
  const inputs = inputModalities(m)
  if (q.input_modalities && !q.input_modalities.every((x) => inputs.includes(x))) return false
  const params = supportedParameters(m)
  if (q.supported_parameters && !q.supported_parameters.every((p) => params.includes(p))) return false
  if (q.model_authors && !q.model_authors.includes(m.id.split('/')[0]!.toLowerCase())) return false
  if (q.providers && !m.endpoints.some((e) => q.providers!.includes(e.provider.toLowerCase()))) return false
  if (q.context !== undefined && m.context_length < q.context) return false
  const prompt = perMillion(m.pricing.input)
  const completion = perMillion(m.pricing.output)
  if (q.min_price !== undefined && prompt < q.min_price) return false
  if (q.max_price !== undefined && prompt > q.max_price) return false
  if (q.min_output_price !== undefined && completion < q.min_output_price) return false
  if (q.max_output_price !== undefined && completion > q.max_output_price) return false
  if (q.zdr === 'true' && !m.endpoints.some((e) => e.zdr)) return false
  if (q.q) {
    const needle = q.q.toLowerCase()
    if (!m.id.toLowerCase().includes(needle) && !m.name.toLowerCase().includes(needle)) return false
  }
  return true
}

const ORDER: Record<(typeof SORTS)[number], (a: CatalogueModel, b: CatalogueModel) => number> = {
  newest: (a, b) => b.created - a.created,
  'pricing-low-to-high': (a, b) => Number(a.pricing.input) - Number(b.pricing.input),
  'pricing-high-to-low': (a, b) => Number(b.pricing.input) - Number(a.pricing.input),
  'context-high-to-low': (a, b) => b.context_length - a.context_length,
}

/**
 * A page of the models a query selects (ModelsList). Without offset and limit, all of them; with
 * either, `limit` (default 500) from `offset`, and `[]` past the end (the client's iterator stops there).
 */
export function queryModels(catalogue: Catalogue, q: ModelsQuery, path = '/api/v1/models') {
  let models = catalogue.models.filter((m) => matches(m, q))
  if (q.sort) models = [...models].sort(ORDER[q.sort as (typeof SORTS)[number]])
  const paged = q.offset !== undefined || q.limit !== undefined
  const offset = q.offset ?? 0
  const limit = q.limit ?? 500
  const page = paged ? models.slice(offset, offset + limit) : models
  const more = paged && offset + limit < models.length
  return {
    data: page.map(modelObject),
    links: { next: more ? `${path}?offset=${offset + limit}&limit=${limit}` : null },
    total_count: models.length,
  }
}

/** `GET /models/count`: how many models answer in the modalities asked (text by default). */
export function countModels(catalogue: Catalogue, outputModalities?: string[]) {
  return { data: { count: catalogue.models.filter((m) => matches(m, { output_modalities: outputModalities })).length } }
}

/**
 * `GET /model/{author}/{slug}`: one model. A variant suffix (`:free`, `:nitro`…) names the same
 * model when the catalogue has no model of that exact id.
 */
export function findModel(catalogue: Catalogue, id: string): CatalogueModel | undefined {
  const exact = catalogue.models.find((m) => m.id === id)
  if (exact) return exact
  const base = id.replace(/:[a-z0-9-]+$/i, '')
  return base === id ? undefined : catalogue.models.find((m) => m.id === base)
}

/**
 * The catalogue's best model for a need: its first that can call tools when tools are needed, else
 * its first (a catalogue lists its models best first: one built from provider keys does); undefined
 * when it serves none.
 */
const bestModel = (catalogue: Catalogue, tools: boolean): string | undefined =>
  (
    catalogue.models.find((m) => answersText(m) && (!tools || m.capabilities.tools)) ??
    catalogue.models.find(answersText)
  )?.id

/** The interns' default model when none is set (INTERN_DEFAULT_MODEL): the best one, as an intern's work is tools. */
export const defaultInternModel = (catalogue: Catalogue): string | undefined => bestModel(catalogue, true)

/** OpenRouter's auto router's name: the model is chosen for the request (autoModel). */
export const AUTO_MODEL = 'openrouter/auto'

/**
 * The model `openrouter/auto` stands for, where the catalogue has no model of that id: the best one
 * for the request (one that can call tools when the request offers any). The answer names the model
 * chosen, as OpenRouter's does.
 */
export const autoModel = (catalogue: Catalogue, req: { tools?: unknown[] | null }): string | undefined =>
  bestModel(catalogue, (req.tools?.length ?? 0) > 0)

/** `GET /providers`: every provider the catalogue routes to, once, by name. */
export function providersOf(catalogue: Catalogue) {
  const names = [...new Set(catalogue.models.flatMap((m) => m.endpoints.map((e) => e.provider)))].sort()
  return {
    data: names.map((name) => ({
      name,
      slug: name.toLowerCase(),
      privacy_policy_url: null,
      terms_of_service_url: null,
      status_page_url: null,
    })),
  }
}

/** PublicEndpoint (§5): one endpoint of a model, without its address or credential. */
function publicEndpoint(m: CatalogueModel, e: CatalogueModel['endpoints'][number]) {
  const tools = m.capabilities.tools
  return {
    name: `${e.provider} | ${m.id}`,
    model_id: m.id,
    model_name: m.name,
    provider_name: e.provider,
    tag: e.provider,
    protocol: e.protocol,
    tiers: e.tiers,
    context_length: m.context_length,
    max_completion_tokens: m.max_output_tokens ?? null,
    max_prompt_tokens: null,
    pricing: pricingOf(e.pricing ?? m.pricing),
    quantization: null,
    supported_parameters: supportedParameters(m),
    supports_implicit_caching: m.capabilities.caching,
    supports_tool_choice: { auto: tools, function: tools, none: tools, required: tools },
    supports_voice_cloning: false,
    // Roster keeps no uptime or latency history across restarts; unknown is null, as the client allows.
    status: 0,
    uptime_last_30m: null,
    uptime_last_5m: null,
    uptime_last_1d: null,
    latency_last_30m: null,
    throughput_last_30m: null,
  }
}

/** One model's endpoints (`GET /models/{author}/{slug}/endpoints`), as the official client's endpoints list expects. */
export function modelEndpoints(catalogue: Catalogue, id: string) {
  const m = catalogue.models.find((x) => x.id === id)
  if (!m) return undefined
  return {
    id: m.id,
    name: m.name,
    created: m.created,
    description: m.description ?? '',
    architecture: { ...architecture(m), instruct_type: null, tokenizer: null },
    endpoints: m.endpoints.map((e) => publicEndpoint(m, e)),
  }
}

/** `GET /endpoints/zdr`: the endpoints whose providers keep nothing (the catalogue's `zdr`). */
export function zdrEndpoints(catalogue: Catalogue) {
  return { data: catalogue.models.flatMap((m) => m.endpoints.filter((e) => e.zdr).map((e) => publicEndpoint(m, e))) }
}

/** `GET /models` as the Anthropic client lists models: its page shape, newest first, by `after_id` / `before_id`. */
export const AnthropicModelsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(20),
  after_id: z.string().max(256).optional(),
  before_id: z.string().max(256).optional(),
})
export type AnthropicModelsQuery = z.infer<typeof AnthropicModelsQuery>

export function anthropicModelsPage(catalogue: Catalogue, q: AnthropicModelsQuery) {
  const all = [...catalogue.models].sort((a, b) => b.created - a.created || a.id.localeCompare(b.id))
  const at = (id: string | undefined) => (id === undefined ? -1 : all.findIndex((m) => m.id === id))
  let from = 0
  let to = all.length
  if (q.after_id !== undefined) from = at(q.after_id) + 1
  if (q.before_id !== undefined) to = Math.max(0, at(q.before_id))
  // An id that names no model pages from nothing, as a cursor past the end does.
  if ((q.after_id !== undefined && at(q.after_id) < 0) || (q.before_id !== undefined && at(q.before_id) < 0))
    return { data: [], has_more: false, first_id: null, last_id: null }
  // before_id pages backwards: the `limit` models just before it.
  const slice =
    q.before_id !== undefined ? all.slice(Math.max(from, to - q.limit), to) : all.slice(from, from + q.limit)
  const data = slice.map((m) => ({
    type: 'model' as const,
    id: m.id,
    display_name: m.name,
    created_at: new Date(m.created * 1000).toISOString(),
  }))
  const first = all.indexOf(slice[0]!)
  const has_more = q.before_id !== undefined ? first > from : from + slice.length < to
  return { data, has_more, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null }
}
