import { z } from 'zod'
import type { Catalogue, CatalogueModel } from '../catalogue.js'
import { inputItems, isMessage, type ResponsesRequest } from '../request.js'
import type { Plugin } from './plugin.js'
import { invalid } from '../errors.js'
import { answersText } from '../model-directory.js'

// The routers (`auto-router`, `auto-beta-router`, `pareto-router`, `switchyard-router`): which
// model `openrouter/auto` stands for, chosen among this Roster's catalogue by each router's
// documented rule, over what the catalogue knows: its order (best first, as GET /models lists it)
// for quality, and its prices for cost. Only models able to serve the request are candidates (tools
// when it offers any, images when its input has any, reasoning when it asks for it). The answer
// names the model chosen, as every answer does.

/** Whether `id` matches a pattern of the entry (an id, or `author/*`). */
const matches = (id: string, pattern: string) =>
  pattern.endsWith('/*') ? id.startsWith(pattern.slice(0, -1)) : id === pattern

/** What a request needs of its model. */
function needs(req: ResponsesRequest) {
  const images = inputItems(req.input).some(
    (i) =>
      isMessage(i) &&
      Array.isArray(i.content) &&
      i.content.some((p) => (p as { type?: string }).type === 'input_image'),
  )
  const effort = (req.reasoning as { effort?: string } | undefined)?.effort
  return { tools: (req.tools?.length ?? 0) > 0, images, reasoning: !!effort && effort !== 'none' }
}

/** The catalogue's models able to serve the request, best first, within the entry's lists. */
function candidates(catalogue: Catalogue, req: ResponsesRequest, allowed?: string[], excluded?: string[]) {
  const need = needs(req)
  return catalogue.models.filter(
    (m) =>
      answersText(m) &&
      (!allowed?.length || allowed.some((p) => matches(m.id, p))) &&
      !excluded?.some((p) => matches(m.id, p)) &&
      (!need.tools || m.capabilities.tools) &&
      (!need.images || m.capabilities.images) &&
      (!need.reasoning || m.capabilities.reasoning),
  )
}

/** A model's cost per token, input and output together. */
const cost = (m: CatalogueModel) => Number(m.pricing.input) + Number(m.pricing.output)

/** Each model's cost percentile among `models` (0: the cheapest, 100: the dearest). */
function percentiles(models: CatalogueModel[]): Map<string, number> {
  const sorted = [...models].sort((a, b) => cost(a) - cost(b))
  return new Map(sorted.map((m, i) => [m.id, sorted.length === 1 ? 0 : (i / (sorted.length - 1)) * 100]))
}

const TIERS = { low: [0, 20], medium: [20, 40], high: [40, 60], xhigh: [60, 80], max: [80, 100.01] } as const
const AutoParameters = z.object({
  allowed_models: z.array(z.string().min(1).max(200)).max(200).optional(),
  excluded_models: z.array(z.string().min(1).max(200)).max(200).optional(),
  cost_tier: z.enum(['low', 'medium', 'high', 'xhigh', 'max']).optional(),
  cost_quality_tradeoff: z.number().min(0).max(10).optional(),
  pin_model: z.boolean().optional(),
})
type AutoParameters = z.infer<typeof AutoParameters>

/**
 * The auto router's rule: the candidates whose cost falls in the band asked for (`cost_tier`, or a
 * ceiling of the 90th percentile less 8 per step of `cost_quality_tradeoff`, 9 by default), the
 * best of them; the nearest to the band when none is in it.
 */
function chooseAuto(catalogue: Catalogue, req: ResponsesRequest, p: AutoParameters): string | undefined {
  const models = candidates(catalogue, req, p.allowed_models, p.excluded_models)
  if (!models.length) return undefined
  const [lo, hi] = p.cost_tier ? TIERS[p.cost_tier] : [0, 90 - 8 * (p.cost_quality_tradeoff ?? 9)]
  const at = percentiles(models)
  const inBand = models.find((m) => at.get(m.id)! >= lo && at.get(m.id)! <= hi)
  if (inBand) return inBand.id
  const distance = (m: CatalogueModel) => Math.min(Math.abs(at.get(m.id)! - lo), Math.abs(at.get(m.id)! - hi))
  return [...models].sort((a, b) => distance(a) - distance(b))[0]!.id
}

const ParetoParameters = z.object({
  max_price: z.number().min(0).optional(),
  min_coding_score: z.number().min(0).max(1).optional(),
  price_source: z.enum(['prompt', 'weighted_avg']).optional(),
})

/**
 * The Pareto router's rule: with `max_price` (USD per million input tokens), the best candidate at
 * or under it (the cheapest when none is); otherwise the cheapest of the quality tier asked for
 * (`min_coding_score` ≥ 0.66, the default: the best third; ≥ 0.33: the best two thirds; else all).
 */
function choosePareto(catalogue: Catalogue, req: ResponsesRequest, p: z.infer<typeof ParetoParameters>) {
  const models = candidates(catalogue, req)
  if (!models.length) return undefined
  const cheapest = (ms: CatalogueModel[]) => [...ms].sort((a, b) => cost(a) - cost(b))[0]!.id
  if (p.max_price !== undefined)
    return models.find((m) => Number(m.pricing.input) * 1e6 <= p.max_price!)?.id ?? cheapest(models)
  const score = p.min_coding_score ?? 0.66
  const share = score >= 0.66 ? 1 / 3 : score >= 0.33 ? 2 / 3 : 1
  return cheapest(models.slice(0, Math.max(1, Math.ceil(models.length * share))))
}

const SwitchyardParameters = z.object({ algorithm: z.enum(['capability', 'stage', 'auto']).optional() })

/** A router: its plugin, and the model it chooses for a request (undefined: none can serve it). */
interface Router<P> {
  plugin: Plugin<P>
  choose(catalogue: Catalogue, req: ResponsesRequest, p: P): string | undefined
}
const router = <P>(id: string, parameters: z.ZodType<P>, choose: Router<P>['choose']): Router<P> => ({
  plugin: { id, parameters },
  choose,
})

export const ROUTERS = [
  router('auto-router', AutoParameters, chooseAuto),
  router('auto-beta-router', AutoParameters.omit({ pin_model: true }), chooseAuto),
  router('pareto-router', ParetoParameters, choosePareto),
  // Switchyard's algorithms pick by capability or by the stage of an agent's work; over a catalogue
  // that knows capabilities and an order, each comes to the best model able to serve the request.
  router('switchyard-router', SwitchyardParameters, (catalogue, req) => candidates(catalogue, req)[0]?.id),
] as Router<unknown>[]

/**
 * The model a request's router plugin chooses for `openrouter/auto`, or undefined when it names no
 * router (or its parameters do not read: the request is refused for them once it is set up). A
 * router that finds no model it may choose refuses the request (400): it never falls back to one
 * its entry ruled out.
 */
export function routedModel(catalogue: Catalogue, req: ResponsesRequest): string | undefined {
  for (const entry of req.plugins ?? []) {
    if (entry.enabled === false) continue
    const r = ROUTERS.find((x) => x.plugin.id === entry.id)
    if (!r) continue
    const { id: _id, enabled: _enabled, ...rest } = entry
    const parsed = r.plugin.parameters.safeParse(rest)
    if (!parsed.success) return undefined
    const chosen = r.choose(catalogue, req, parsed.data)
    if (chosen === undefined)
      throw invalid(
        `/plugins ${entry.id}: no model it may choose can serve this request (its allowed and excluded models, and what the request needs: tools, images, reasoning)`,
      )
    return chosen
  }
  return undefined
}
