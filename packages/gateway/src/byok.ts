import type { Endpoint } from './catalogue.js'
import { gatewayError } from './errors.js'
import type { Candidate, Route } from './routing.js'

// Bring your own key (governance-contract.md §11): a workspace's own provider credentials, tried
// before the catalogue's shared credential for their provider. Per endpoint of that provider the
// order is: the workspace's credentials (ascending sort order), the shared credential, then the
// credentials marked `is_fallback`. `is_byok_only` drops the shared credential for every model of
// the provider; `is_required`, for the credential's allowed models. A credential that fails
// (refused, rate limited, down) gives way to the next, as any endpoint does.

/** A credential as routing reads it: unsealed, for the requests of one workspace. */
export interface ByokCredential {
  id: string
  provider: string
  key: string
  isByokOnly: boolean
  isFallback: boolean
  isRequired: boolean
  /** null: the endpoint's own zero-data-retention promise stands. */
  declaredZdr: boolean | null
  sortOrder: number
  allowedKeyHashes: ReadonlySet<string> | null
  allowedModels: ReadonlySet<string> | null
  allowedUserIds: ReadonlySet<string> | null
}

/** An endpoint reached with a workspace's own credential instead of the catalogue's. */
export interface ByokEndpoint extends Endpoint {
  byok: { credentialId: string; key: string }
}

export const isByok = (e: Endpoint): e is ByokEndpoint => 'byok' in e

/** Who a request is for, as credentials' allow-lists name them. */
export interface ByokCaller {
  keyHash: string
  userId: string | null
}

// One endpoint object per credential and catalogue endpoint, for as long as the credential is
// cached: the upstream client works out an endpoint's address and headers once per object.
const derived = new WeakMap<ByokCredential, Map<Endpoint, ByokEndpoint>>()
function endpointWith(cred: ByokCredential, endpoint: Endpoint): ByokEndpoint {
  let byEndpoint = derived.get(cred)
  if (!byEndpoint) derived.set(cred, (byEndpoint = new Map()))
  let e = byEndpoint.get(endpoint)
  if (!e) {
    e = {
      ...endpoint,
      api_key_env: undefined,
      zdr: cred.declaredZdr ?? endpoint.zdr,
      byok: { credentialId: cred.id, key: cred.key },
    }
    byEndpoint.set(endpoint, e)
  }
  return e
}

const applies = (cred: ByokCredential, c: Candidate, who: ByokCaller) =>
  (!cred.allowedModels || cred.allowedModels.has(c.model.id)) &&
  (!cred.allowedKeyHashes || cred.allowedKeyHashes.has(who.keyHash)) &&
  (!cred.allowedUserIds || (who.userId !== null && cred.allowedUserIds.has(who.userId)))

/** Whether a workspace's credentials take the shared credential out for this model (byok-only, or required for it). */
const sharedDropped = (ofProvider: readonly ByokCredential[], modelId: string) =>
  ofProvider.some((cred) => cred.isByokOnly || (cred.isRequired && (cred.allowedModels?.has(modelId) ?? true)))

/**
 * The route with the workspace's credentials in their places; refused (403) when the shared
 * credential is out for a provider and none of the workspace's may serve this request.
 */
export function withByok(route: Route, credentials: readonly ByokCredential[], who: ByokCaller): Route {
  let changed = false
  let onlyByok: string | undefined
  const candidates: Candidate[] = []
  for (const c of route.candidates) {
    const ofProvider = credentials.filter((cred) => cred.provider === c.endpoint.provider)
    if (!ofProvider.length) {
      candidates.push(c)
      continue
    }
    changed = true
    const own = ofProvider.filter((cred) => applies(cred, c, who)).sort((a, b) => a.sortOrder - b.sortOrder)
    for (const cred of own)
      if (!cred.isFallback) candidates.push({ model: c.model, endpoint: endpointWith(cred, c.endpoint) })
    if (!sharedDropped(ofProvider, c.model.id)) candidates.push(c)
    else onlyByok ??= c.endpoint.provider
    for (const cred of own)
      if (cred.isFallback) candidates.push({ model: c.model, endpoint: endpointWith(cred, c.endpoint) })
  }
  if (!changed) return route
  if (!candidates.length)
    throw gatewayError(
      'permission_denied',
      `this workspace serves ${onlyByok} only with its own keys (is_byok_only or is_required), and none of them may serve this request`,
    )
  return { ...route, candidates }
}

/** The hosted search APIs a workspace may bring its own key for (`openrouter:web_search`). */
export const SEARCH_PROVIDERS = ['brave', 'tavily', 'exa'] as const
export type SearchProvider = (typeof SEARCH_PROVIDERS)[number]

/** A workspace's own key for a search API, in the order it is tried. */
export interface SearchCredential {
  provider: SearchProvider
  key: string
  /** Tried after the operator's key for the same API (`is_fallback`). */
  fallback: boolean
}

/** The workspace's search API keys this caller may use (their allow-lists of keys and members), in sort order. */
export function searchCredentials(credentials: readonly ByokCredential[], who: ByokCaller): SearchCredential[] {
  return credentials
    .filter(
      (cred) =>
        (SEARCH_PROVIDERS as readonly string[]).includes(cred.provider) &&
        (!cred.allowedKeyHashes || cred.allowedKeyHashes.has(who.keyHash)) &&
        (!cred.allowedUserIds || (who.userId !== null && cred.allowedUserIds.has(who.userId))),
    )
    .sort((a, b) => a.sortOrder - b.sortOrder)
    .map((cred) => ({ provider: cred.provider as SearchProvider, key: cred.key, fallback: cred.isFallback }))
}
