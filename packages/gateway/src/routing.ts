import { createHash } from 'node:crypto'
import { z } from 'zod'
import type { Catalogue, CatalogueModel, Endpoint } from './catalogue.js'
import { describeIssues, gatewayError, invalid } from './errors.js'
import { partitionFromRoute, tierPreference, type ResponsesRequest } from './request.js'
import { isWebSearchKind } from './web-search.js'
import { ADAPTERS } from './adapters/registry.js'

// Which endpoints a request may use, in the order they are tried. Routing is stateless apart
// from what endpoints have been measured to do (latency, throughput), so replicas of the API agree
// on a session's endpoint without talking to each other.

/** USD per million tokens, as the official client's max_price fields are. */
const PerMillion = z
  .union([
    z.number(),
    z
      .string()
      .regex(/^\d+(\.\d+)?$/)
      .transform(Number),
  ])
  .pipe(z.number().min(0))

export const ProviderPreferences = z.looseObject({
  order: z.array(z.string().min(1)).optional(),
  only: z.array(z.string().min(1)).optional(),
  ignore: z.array(z.string().min(1)).optional(),
  allow_fallbacks: z.boolean().nullable().optional(),
  sort: z
    .union([
      z.enum(['price', 'throughput', 'latency']),
      z.looseObject({
        by: z.enum(['price', 'throughput', 'latency']).optional(),
        partition: z.enum(['model', 'none']).nullable().optional(),
      }),
    ])
    .nullable()
    .optional(),
  max_price: z.looseObject({ prompt: PerMillion.optional(), completion: PerMillion.optional() }).nullable().optional(),
})
export type ProviderPreferences = z.infer<typeof ProviderPreferences>

const NO_PREFERENCES = { success: true as const, data: {} as ProviderPreferences }

export interface Candidate {
  model: CatalogueModel
  endpoint: Endpoint
}

export interface Route {
  candidates: Candidate[]
  /** How the order was decided, for routing metadata. */
  strategy: string
  requested: string
}

/** What endpoints have been seen to do: exponentially weighted, per endpoint. */
export class EndpointStats {
  private readonly seen = new Map<Endpoint, { ttfbMs: number; tokensPerSecond: number }>()

  record(endpoint: Endpoint, ttfbMs: number, tokensPerSecond?: number) {
    const s = this.seen.get(endpoint)
    if (!s) return void this.seen.set(endpoint, { ttfbMs, tokensPerSecond: tokensPerSecond ?? 0 })
    s.ttfbMs = s.ttfbMs * 0.8 + ttfbMs * 0.2
    if (tokensPerSecond !== undefined) s.tokensPerSecond = s.tokensPerSecond * 0.8 + tokensPerSecond * 0.2
  }

  /** Unmeasured endpoints rank first, so they get measured. */
  latency = (e: Endpoint) => this.seen.get(e)?.ttfbMs ?? -1
  throughput = (e: Endpoint) => this.seen.get(e)?.tokensPerSecond ?? Infinity
}

const price = (c: Candidate) => {
  const p = c.endpoint.pricing ?? c.model.pricing
  return Number(p.input) + Number(p.output)
}

/** Rendezvous hashing: each session gets a stable order of equally good endpoints. */
const weight = (session: string, c: Candidate) =>
  createHash('sha1')
    .update(session)
    .update('\0')
    .update(c.model.id)
    .update('\0')
    .update(c.endpoint.provider)
    .update(c.endpoint.base_url)
    .digest()
    .readUInt32BE(0)

/**
 * What the request needs of a model beyond text: tools, image input (in a message, or in a tool's
 * output), and whether an image is in a tool's output (only some protocols carry that).
 */
function needsOf(req: ResponsesRequest): { tools: boolean; images: boolean; toolImages: boolean; search: boolean } {
  const tools = (req.tools?.length ?? 0) > 0
  const search = tools && req.tools!.some((t) => isWebSearchKind(t.type))
  let images = false
  let toolImages = false
  if (Array.isArray(req.input)) {
    const hasImage = (parts: unknown) =>
      Array.isArray(parts) && (parts as { type?: unknown }[]).some((p) => p?.type === 'input_image')
    for (const item of req.input as { type?: unknown; content?: unknown; output?: unknown }[]) {
      if (hasImage(item.content)) images = true
      else if (item.type === 'function_call_output' && hasImage(item.output)) images = toolImages = true
    }
  }
  return { tools, images, toolImages, search }
}

/** Whether an endpoint's protocol carries images in tool results (Chat Completions' tool messages are text). */
const takesToolImages = (e: Endpoint) => ADAPTERS[e.protocol].toolImages

const noToolImages = (models: CatalogueModel[]) =>
  invalid(
    `/model ${models.map((m) => m.id).join(', ')}: no endpoint takes images in tool results (its providers' Chat Completions tool messages carry text only); send the image in a user message, or choose a model served over the Responses or Anthropic protocol`,
  )

const noEndpoint = (models: CatalogueModel[]) =>
  gatewayError(
    'not_found',
    `no endpoint of ${models.map((m) => m.id).join(', ')} matches the request's provider preferences and service tier`,
  )

export class Router {
  private turn = 0
  private readonly single = new Map<string, Route>()
  private readonly byId: Map<string, CatalogueModel>

  constructor(
    catalogue: Catalogue,
    readonly stats = new EndpointStats(),
  ) {
    this.byId = new Map(catalogue.models.map((m) => [m.id, m]))
  }

  route(req: ResponsesRequest, session: string | undefined): Route {
    const names = [...new Set([req.model, ...(req.models ?? [])].filter((m): m is string => !!m))]
    const unknown = names.filter((n) => !this.byId.has(n))
    if (unknown.length)
      throw invalid(
        `/${unknown.includes(req.model!) ? 'model' : 'models'} no model named ${unknown.join(', ')} is served here; GET /api/v1/models lists them`,
      )
    const named = names.map((n) => this.byId.get(n)!)
    // Only models that can serve what the request carries (tools, images) are candidates.
    const needs = needsOf(req)
    const models = named.filter(
      (m) => (!needs.tools || m.capabilities.tools) && (!needs.images || m.capabilities.images),
    )
    if (!models.length) {
      const what = [needs.tools && 'tools', needs.images && 'image input'].filter(Boolean).join(' and ')
      throw invalid(
        `/model ${named.map((m) => m.id).join(', ')} cannot take ${what} (see capabilities in GET /api/v1/models)`,
      )
    }
    // The common case, one model with one endpoint and no preferences, has one answer per tier.
    if (models.length === 1 && models[0]!.endpoints.length === 1 && req.provider == null && req.route == null) {
      if (needs.toolImages && !takesToolImages(models[0]!.endpoints[0]!)) throw noToolImages(models)
      const key = `${models[0]!.id}\n${req.service_tier ?? ''}`
      let route = this.single.get(key)
      if (!route) {
        const endpoint = models[0]!.endpoints[0]!
        if (!endpoint.tiers.some((t) => tierPreference(req.service_tier).includes(t))) {
          throw noEndpoint(models)
        }
        this.single.set(
          key,
          (route = { candidates: [{ model: models[0]!, endpoint }], strategy: 'direct', requested: models[0]!.id }),
        )
      }
      return route
    }

    const parsed = req.provider == null ? NO_PREFERENCES : ProviderPreferences.safeParse(req.provider)
    if (!parsed.success) throw invalid(`/provider ${describeIssues(parsed.error)}`)
    const prefs = parsed.data
    const sortBy = typeof prefs.sort === 'string' ? prefs.sort : prefs.sort?.by
    const partition =
      (typeof prefs.sort === 'object' ? prefs.sort?.partition : undefined) ?? partitionFromRoute(req.route) ?? 'model'
    const tiers = tierPreference(req.service_tier)
    const allowFallbacks = prefs.allow_fallbacks !== false

    const eligible = (c: Candidate) => {
      const e = c.endpoint
      if (needs.toolImages && !takesToolImages(e)) return false
      if (prefs.only && !prefs.only.includes(e.provider)) return false
      if (prefs.ignore?.includes(e.provider)) return false
      if (!allowFallbacks && prefs.order && !prefs.order.includes(e.provider)) return false
      if (!e.tiers.some((t) => tiers.includes(t))) return false
      const p = e.pricing ?? c.model.pricing
      if (prefs.max_price?.prompt !== undefined && Number(p.input) * 1e6 > prefs.max_price.prompt) return false
      if (prefs.max_price?.completion !== undefined && Number(p.output) * 1e6 > prefs.max_price.completion) return false
      return true
    }
    const tierRank = (c: Candidate) => Math.min(...c.endpoint.tiers.map((t) => tiers.indexOf(t)).filter((i) => i >= 0))
    // A provider that runs the client's web search is preferred to one that would leave it out.
    const searchRank = needs.search ? (c: Candidate) => (c.endpoint.web_search ? 0 : 1) : () => 0
    const orderRank = (c: Candidate) => {
      const i = prefs.order?.indexOf(c.endpoint.provider) ?? -1
      return i < 0 ? Infinity : i
    }
    const measure =
      sortBy === 'price'
        ? price
        : sortBy === 'latency'
          ? (c: Candidate) => this.stats.latency(c.endpoint)
          : sortBy === 'throughput'
            ? (c: Candidate) => -this.stats.throughput(c.endpoint)
            : undefined
    // Equal endpoints are spread: by the session (sticky), or in turn when there is none.
    const spread = session ? (c: Candidate) => -weight(session, c) : undefined
    const start = this.turn++

    const ordered = (group: Candidate[]) => {
      const n = group.length
      const keyed = group.map((c, i) => ({
        c,
        keys: [
          orderRank(c),
          searchRank(c),
          tierRank(c),
          measure ? measure(c) : 0,
          spread ? spread(c) : (i - (start % n) + n) % n,
        ],
      }))
      keyed.sort((a, b) => {
        for (let k = 0; k < a.keys.length; k++) if (a.keys[k] !== b.keys[k]) return a.keys[k]! - b.keys[k]!
        return 0
      })
      return keyed.map((k) => k.c)
    }

    const perModel = models.map((model) => model.endpoints.map((endpoint) => ({ model, endpoint })).filter(eligible))
    let candidates = partition === 'none' ? ordered(perModel.flat()) : perModel.flatMap(ordered)
    if (!allowFallbacks && !prefs.order) {
      // Without fallbacks each model keeps its best endpoint only.
      const seen = new Set<string>()
      candidates = candidates.filter((c) => !seen.has(c.model.id) && !!seen.add(c.model.id))
    }
    if (!candidates.length) {
      const anyTakes = models.some((m) => m.endpoints.some(takesToolImages))
      throw needs.toolImages && !anyTakes ? noToolImages(models) : noEndpoint(models)
    }
    const strategy =
      [
        prefs.order ? 'order' : undefined,
        sortBy ? `sort:${sortBy}` : undefined,
        partition === 'none' ? 'partition:none' : undefined,
        session && !sortBy && !prefs.order ? 'sticky' : undefined,
      ]
        .filter(Boolean)
        .join('+') || (candidates.length > 1 ? 'fallback' : 'direct')
    return { candidates, strategy, requested: names[0]! }
  }
}
