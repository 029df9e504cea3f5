import { z } from 'zod'
import { invalid } from '../errors.js'
import { BACKEND_NAMES, type BackendName, type SearchBackend, type SearchResult } from './search-backends.js'
import { errorOf, toolError, type ServerTool, type ServerToolKind } from './tool.js'
import type { SearchCredential, SearchProvider } from '../byok.js'

// `openrouter:web_search`: the endpoint's own search where it has one (run-setup.ts hands the
// request to it, as a client's own web search tool), else a search engine Roster calls: SearXNG
// or a hosted API a team holds a key for (search-backends.ts). The model gets the results' text;
// the item shows the query and its sources; the answer cites the sources it names (citations.ts).

/** The engines OpenRouter documents that Roster has no backend for. */
const FOREIGN_ENGINES = ['firecrawl', 'parallel', 'perplexity']

const Domain = z
  .string()
  .min(1)
  .max(253)
  .transform((d) => d.toLowerCase().replace(/^\*?\./, ''))

export const WebSearchParameters = z
  .object({
    allowed_domains: z.array(Domain).max(100).optional(),
    excluded_domains: z.array(Domain).max(100).optional(),
    engine: z.string().max(32).optional(),
    max_characters: z.int().min(1).max(100_000).optional(),
    max_results: z.int().min(1).max(25).optional(),
    max_total_results: z.int().min(1).max(1_000).optional(),
    max_uses: z.int().min(1).max(100).optional(),
    search_context_size: z.enum(['low', 'medium', 'high']).optional(),
    mode: z.string().max(32).optional(),
    user_location: z.record(z.string(), z.unknown()).optional(),
  })
  .refine((p) => !(p.allowed_domains && p.excluded_domains), 'give allowed_domains or excluded_domains, not both')
export type WebSearchParameters = z.infer<typeof WebSearchParameters>

/** Characters of content per result for a context size (Exa's documented sizes); 2,000 when none is given. */
const CONTEXT_CHARACTERS = { low: 5_000, medium: 15_000, high: 30_000 } as const

/** Whether the entry asks for the endpoint's own search (`native`), allows it (`auto`, the default), or names an engine. */
export const wantsNative = (p: WebSearchParameters) => (p.engine ?? 'auto') === 'native'
export const allowsNative = (p: WebSearchParameters) => ['auto', 'native'].includes(p.engine ?? 'auto')

/** The sources a run's searches found, by URL: what the answer's citations may point at. */
export type FoundSources = Map<string, SearchResult>

export function webSearch(
  backends: Map<BackendName, SearchBackend>,
  keyed?: (name: SearchProvider, apiKey: string) => SearchBackend,
): ServerToolKind<WebSearchParameters> {
  /**
   * The engine an entry searches with: a workspace's own key for it first (BYOK, as with models),
   * then the operator's, then the workspace's fallback keys; for `auto`, the workspace's own key of
   * any hosted API before the operator's first engine.
   */
  const backendFor = (p: WebSearchParameters, keys: readonly SearchCredential[] = []): SearchBackend => {
    const engine = p.engine ?? 'auto'
    const own = (fallback: boolean) =>
      keyed &&
      keys.find((k) => k.fallback === fallback && (engine === 'auto' || engine === 'native' || k.provider === engine))
    const first = own(false)
    if (first) return keyed!(first.provider, first.key)
    if (engine === 'auto' || engine === 'native') {
      const configured = backends.values().next().value
      if (configured) return configured
      const fallback = own(true)
      if (fallback) return keyed!(fallback.provider, fallback.key)
      throw invalid(
        `/tools openrouter:web_search: the endpoint chosen has no web search of its own, and this Roster has no search engine configured (set SEARXNG_URL, BRAVE_SEARCH_API_KEY, TAVILY_API_KEY or EXA_API_KEY)`,
      )
    }
    const named = backends.get(engine as BackendName)
    if (named) return named
    const last = own(true)
    if (last) return keyed!(last.provider, last.key)
    if ((BACKEND_NAMES as readonly string[]).includes(engine))
      throw invalid(`/tools openrouter:web_search: the engine ${engine} is not configured on this Roster`)
    throw invalid(
      `/tools openrouter:web_search: the engine ${engine} is not served by this Roster${FOREIGN_ENGINES.includes(engine) ? '' : ' (no such engine)'}: use auto, native, ${BACKEND_NAMES.join(', ')}`,
    )
  }
  return {
    type: 'openrouter:web_search',
    parameters: WebSearchParameters,
    offer(p, ctx) {
      const backend = backendFor(p, ctx.searchKeys)
      let total = 0
      const maxTotal = p.max_total_results ?? 50
      const tool: ServerTool & { found: FoundSources } = {
        type: 'openrouter:web_search',
        maxUses: p.max_uses,
        found: new Map(),
        definition: {
          name: 'web_search',
          description:
            'Searches the web and returns the pages found: their URL, title and text. Cite the URLs you use.',
          parameters: {
            type: 'object',
            properties: { query: { type: 'string', description: 'What to search for' } },
            required: ['query'],
            additionalProperties: false,
          },
        },
        async run(args, { signal }) {
          const query = typeof args.query === 'string' ? args.query.trim().slice(0, 400) : ''
          if (!query) return toolError('query is empty')
          if (total >= maxTotal) return toolError(`the request's ${maxTotal} search results are used up`)
          try {
            const results = await backend.search({
              query,
              maxResults: Math.min(p.max_results ?? 5, maxTotal - total),
              allowedDomains: p.allowed_domains,
              excludedDomains: p.excluded_domains,
              maxCharacters:
                p.max_characters ?? (p.search_context_size ? CONTEXT_CHARACTERS[p.search_context_size] : 2_000),
              signal,
            })
            total += results.length
            for (const r of results) tool.found.set(r.url, r)
            return { query, engine: backend.name, results }
          } catch (err) {
            return toolError(`the search failed: ${(err as Error).message}`)
          }
        },
        itemFields(args, output) {
          const o = (output ?? {}) as { query?: string; results?: SearchResult[] }
          const error = errorOf(output)
          return {
            action: {
              type: 'search',
              query: o.query ?? (typeof args.query === 'string' ? args.query : ''),
              sources: (o.results ?? []).map((r) => ({ type: 'url', url: r.url })),
            },
            ...(error ? { error } : {}),
          }
        },
      }
      return tool
    },
  }
}

/** The sources a tool found, when it is a web search tool (see webSearch). */
export const sourcesOf = (tool: ServerTool): FoundSources | undefined =>
  (tool as ServerTool & { found?: FoundSources }).found
