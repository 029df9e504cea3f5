import { Agent, request } from 'undici'
import { guardedLookup, readCapped } from './network-guard.js'

// The search engines `openrouter:web_search` runs where the endpoint has no search of its own: a
// self-hosted SearXNG (its JSON API, the default a team can run beside Roster) or a hosted search
// API a team holds a key for (Brave, Tavily, Exa). Each answers a query with results of one shape.

export interface SearchResult {
  url: string
  title: string
  /** What the engine says of the page: a snippet, or its text where the engine gives it. */
  content: string
}

export interface SearchQuery {
  query: string
  maxResults: number
  allowedDomains?: string[]
  excludedDomains?: string[]
  /** Most characters of content per result. */
  maxCharacters: number
  signal: AbortSignal
}

export type BackendName = 'searxng' | 'brave' | 'tavily' | 'exa'
export const BACKEND_NAMES: readonly BackendName[] = ['searxng', 'brave', 'tavily', 'exa']

export interface SearchBackend {
  name: BackendName
  search(q: SearchQuery): Promise<SearchResult[]>
}

/** Where each backend is, and its key: from settings (the API passes them). */
export interface SearchBackendOptions {
  /** The backend `engine: "auto"` uses when the endpoint has no search: the first configured, unless named. */
  preferred?: BackendName
  searxngUrl?: string
  brave?: { apiKey: string; baseUrl?: string }
  tavily?: { apiKey: string; baseUrl?: string }
  exa?: { apiKey: string; baseUrl?: string }
  /** Where each hosted API is reached when its key is a workspace's own (BYOK), where the settings move it. */
  baseUrls?: Partial<Record<'brave' | 'tavily' | 'exa', string>>
  /** Time limit of one search. */
  timeoutMs: number
  /** Largest answer read from a backend. */
  maxBytes?: number
}

class SearchFailed extends Error {}

const host = (url: string) => {
  try {
    return new URL(url).hostname.toLowerCase()
  } catch {
    return ''
  }
}
const within = (h: string, domain: string) => h === domain || h.endsWith(`.${domain}`)

/** The results the query's domain lists let through (every engine's own filter is checked again here). */
function filtered(results: SearchResult[], q: SearchQuery): SearchResult[] {
  return results
    .filter((r) => /^https?:\/\//i.test(r.url))
    .filter((r) => !q.allowedDomains?.length || q.allowedDomains.some((d) => within(host(r.url), d)))
    .filter((r) => !q.excludedDomains?.some((d) => within(host(r.url), d)))
    .slice(0, q.maxResults)
    .map((r) => ({ ...r, content: r.content.slice(0, q.maxCharacters) }))
}

const text = (v: unknown) => (typeof v === 'string' ? v : '')

/** Reads a backend's JSON answer, naming the backend and its status when it is not one. */
async function json(
  name: string,
  agent: Agent,
  url: URL,
  init: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: string },
  q: SearchQuery,
  options: SearchBackendOptions,
): Promise<unknown> {
  const res = await request(url, {
    ...init,
    dispatcher: agent,
    signal: AbortSignal.any([q.signal, AbortSignal.timeout(options.timeoutMs)]),
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
  })
  const { text: body, truncated } = await readCapped(res.body, options.maxBytes ?? 2 * 1024 * 1024)
  if (res.statusCode !== 200)
    throw new SearchFailed(`${name} answered ${res.statusCode}${body ? `: ${body.slice(0, 200)}` : ''}`)
  if (truncated) throw new SearchFailed(`${name} answered more than Roster reads`)
  try {
    return JSON.parse(body)
  } catch {
    throw new SearchFailed(`${name} answered something other than JSON`)
  }
}

const list = (v: unknown): Record<string, unknown>[] =>
  Array.isArray(v) ? v.filter((x): x is Record<string, unknown> => !!x && typeof x === 'object') : []

/** SearXNG's JSON API (`/search?format=json`; the instance must list `json` in its search formats). */
function searxng(base: string, options: SearchBackendOptions): SearchBackend {
  // An operator's own SearXNG is usually on a private address: its address is the operator's choice.
  const agent = new Agent({ connect: { timeout: options.timeoutMs } })
  return {
    name: 'searxng',
    async search(q) {
      const url = new URL('search', base.endsWith('/') ? base : `${base}/`)
      url.searchParams.set('q', q.query)
      url.searchParams.set('format', 'json')
      const answer = (await json(
        'SearXNG',
        agent,
        url,
        { method: 'GET', headers: { accept: 'application/json' } },
        q,
        options,
      )) as {
        results?: unknown
        unresponsive_engines?: unknown
      }
      const results = list(answer.results)
      // Nothing found because its engines failed (not because nothing matched): the model is told so.
      const failed = Array.isArray(answer.unresponsive_engines) ? answer.unresponsive_engines : []
      if (!results.length && failed.length)
        throw new SearchFailed(
          `SearXNG's engines did not answer (${failed
            .slice(0, 5)
            .map((e) => (Array.isArray(e) ? e.map(String).join(': ') : String(e)))
            .join('; ')})`,
        )
      return filtered(
        results.map((r) => ({ url: text(r.url), title: text(r.title), content: text(r.content) })),
        q,
      )
    },
  }
}

/**
 * A hosted API at its public address is reached at public addresses only; one an operator points
 * elsewhere (`*_BASE_URL`: a proxy, a test's stand-in) is reached where it says.
 */
const hostedAgent = (cfg: { baseUrl?: string }, options: SearchBackendOptions) =>
  new Agent({
    connect: {
      timeout: options.timeoutMs,
      ...(cfg.baseUrl ? {} : { lookup: guardedLookup({ allowPrivateNetworks: false }) }),
    },
  })

/** Brave Search's web search API. */
function brave(
  cfg: { apiKey: string; baseUrl?: string },
  options: SearchBackendOptions,
  agent: Agent = hostedAgent(cfg, options),
): SearchBackend {
  return {
    name: 'brave',
    async search(q) {
      const url = new URL('res/v1/web/search', cfg.baseUrl ?? 'https://api.search.brave.com/')
      url.searchParams.set('q', q.query)
      url.searchParams.set('count', String(Math.min(20, q.maxResults)))
      const answer = (await json(
        'Brave Search',
        agent,
        url,
        { method: 'GET', headers: { accept: 'application/json', 'x-subscription-token': cfg.apiKey } },
        q,
        options,
      )) as { web?: { results?: unknown } }
      return filtered(
        list(answer.web?.results).map((r) => ({
          url: text(r.url),
          title: text(r.title),
          content: text(r.description),
        })),
        q,
      )
    },
  }
}

/** Tavily's search API. */
function tavily(
  cfg: { apiKey: string; baseUrl?: string },
  options: SearchBackendOptions,
  agent: Agent = hostedAgent(cfg, options),
): SearchBackend {
  return {
    name: 'tavily',
    async search(q) {
      const answer = (await json(
        'Tavily',
        agent,
        new URL('search', cfg.baseUrl ?? 'https://api.tavily.com/'),
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${cfg.apiKey}` },
          body: JSON.stringify({
            query: q.query,
            max_results: Math.min(20, q.maxResults),
            ...(q.allowedDomains?.length ? { include_domains: q.allowedDomains } : {}),
            ...(q.excludedDomains?.length ? { exclude_domains: q.excludedDomains } : {}),
          }),
        },
        q,
        options,
      )) as { results?: unknown }
      return filtered(
        list(answer.results).map((r) => ({ url: text(r.url), title: text(r.title), content: text(r.content) })),
        q,
      )
    },
  }
}

/** Exa's search API, with each result's text. */
function exa(
  cfg: { apiKey: string; baseUrl?: string },
  options: SearchBackendOptions,
  agent: Agent = hostedAgent(cfg, options),
): SearchBackend {
  return {
    name: 'exa',
    async search(q) {
      const answer = (await json(
        'Exa',
        agent,
        new URL('search', cfg.baseUrl ?? 'https://api.exa.ai/'),
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': cfg.apiKey },
          body: JSON.stringify({
            query: q.query,
            numResults: Math.min(100, q.maxResults),
            ...(q.allowedDomains?.length ? { includeDomains: q.allowedDomains } : {}),
            ...(q.excludedDomains?.length ? { excludeDomains: q.excludedDomains } : {}),
            contents: { text: { maxCharacters: q.maxCharacters } },
          }),
        },
        q,
        options,
      )) as { results?: unknown }
      return filtered(
        list(answer.results).map((r) => ({ url: text(r.url), title: text(r.title), content: text(r.text) })),
        q,
      )
    },
  }
}

/** The backends these settings configure, in the order `auto` tries them (the preferred one first). */
export function searchBackends(options: SearchBackendOptions): Map<BackendName, SearchBackend> {
  const made: SearchBackend[] = []
  if (options.searxngUrl) made.push(searxng(options.searxngUrl, options))
  if (options.brave) made.push(brave(options.brave, options))
  if (options.tavily) made.push(tavily(options.tavily, options))
  if (options.exa) made.push(exa(options.exa, options))
  made.sort((a, b) => Number(b.name === options.preferred) - Number(a.name === options.preferred))
  return new Map(made.map((b) => [b.name, b]))
}

const HOSTED = { brave, tavily, exa }

/**
 * The hosted APIs with a workspace's own key (BYOK): each at the address the settings give it (else
 * its public one), the connections of one API shared by every key. Made per key as requests ask.
 */
export function keyedBackends(options: SearchBackendOptions) {
  const agents = new Map<keyof typeof HOSTED, Agent>()
  return (name: keyof typeof HOSTED, apiKey: string): SearchBackend => {
    const baseUrl = options.baseUrls?.[name] ?? options[name]?.baseUrl
    let agent = agents.get(name)
    if (!agent) agents.set(name, (agent = hostedAgent({ baseUrl }, options)))
    return HOSTED[name]({ apiKey, ...(baseUrl ? { baseUrl } : {}) }, options, agent)
  }
}

export { SearchFailed }
