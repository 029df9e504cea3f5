import { catalogueIdOf, type AliasFamily, type Catalogue } from './catalogue.js'
import { AUTO_MODEL, autoModel } from './model-directory.js'
import { routedModel } from './plugins/routers.js'
import { FUSION_MODEL, withFusionPlugin } from './plugins/fusion.js'
import type { ResponsesRequest } from './request.js'

// The model names a request gives, as the catalogue knows them: a model's own id, a provider's own
// name for it on the doors that speak that provider's protocol (catalogue `aliases`), or
// `openrouter/auto` (the best model for the request), or `openrouter/fusion`. The engine resolves them before routing; a name
// that resolves to nothing is left as given, for routing to refuse in the door's words.

/** The request with its names resolved (a new object: the caller's is never changed), and the model's id. */
export function resolveModelNames(
  catalogue: Catalogue,
  req: ResponsesRequest,
  family: AliasFamily,
): { req: ResponsesRequest; id: string | undefined } {
  // `openrouter/fusion` is the fusion plugin's to resolve (plugins/fusion.ts), once its fields are read.
  if (req.model === FUSION_MODEL) return { req: withFusionPlugin(req), id: FUSION_MODEL }
  const named = (name: string) =>
    catalogueIdOf(catalogue, family, name) ??
    (name === AUTO_MODEL ? (routedModel(catalogue, req) ?? autoModel(catalogue, req)) : undefined)
  const models = req.models?.map((name) => named(name) ?? name)
  const id = req.model ? named(req.model) : undefined
  if (!models && !id) return { req, id }
  return { req: { ...req, ...(models ? { models } : {}), ...(id ? { model: id } : {}) }, id }
}
