import { createServer, type IncomingMessage, type Server } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OutputItems$inboundSchema } from '@openrouter/sdk/models'
import type { Catalogue } from '../catalogue.js'
import { citeSources } from './citations.js'
import { searchBackends, type BackendName } from './search-backends.js'
import { serverToolKinds, type ServerTool } from './index.js'
import { sourcesOf } from './web-search.js'
import type { OutputItem } from '../wire.js'

// The search engines as their APIs are documented (SearXNG's JSON API, Brave's web search, Tavily's
// and Exa's search), stood in for by one server that checks each request's credentials and shape
// and answers with more results than asked for, one of them off-domain; and what the tools make
// of them: the model's results, the item the client sees (read with the official client's own
// schema), the citations on the answer.

interface Seen {
  path: string
  headers: IncomingMessage['headers']
  query: URLSearchParams
  body: Record<string, unknown> | undefined
}
const seen: Seen[] = []
let server: Server
let origin: string

const page = (n: number, host = 'docs.example.org') => ({
  url: `https://${host}/page-${n}`,
  title: `Page ${n}`,
  text: `All about page ${n}. `.repeat(50),
})
const pages = [page(1), page(2), page(3, 'ads.example.net'), page(4), page(5), page(6), page(7)]

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const url = new URL(req.url!, 'http://x')
    let raw = ''
    for await (const c of req) raw += c
    seen.push({
      path: url.pathname,
      headers: req.headers,
      query: url.searchParams,
      body: raw ? JSON.parse(raw) : undefined,
    })
    const json = (status: number, body: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
    if (url.pathname === '/searx/search') {
      if (url.searchParams.get('format') !== 'json') return res.writeHead(403).end('format not allowed')
      return json(200, {
        query: url.searchParams.get('q'),
        number_of_results: pages.length,
        results: pages.map((p) => ({ url: p.url, title: p.title, content: p.text, engine: 'stand-in' })),
      })
    }
    if (url.pathname === '/res/v1/web/search') {
      if (req.headers['x-subscription-token'] !== 'brave-key') return json(401, { error: 'bad token' })
      return json(200, {
        type: 'search',
        web: { results: pages.map((p) => ({ url: p.url, title: p.title, description: p.text.slice(0, 80) })) },
      })
    }
    if (url.pathname === '/tavily/search') {
      if (req.headers.authorization !== 'Bearer tvly-key') return json(401, { detail: 'unauthorized' })
      return json(200, { results: pages.map((p) => ({ url: p.url, title: p.title, content: p.text, score: 0.5 })) })
    }
    if (url.pathname === '/exa/search') {
      if (req.headers['x-api-key'] !== 'exa-key') return json(401, { error: 'unauthorized' })
      return json(200, { results: pages.map((p) => ({ url: p.url, title: p.title, text: p.text })) })
    }
    if (url.pathname === '/broken/search') return res.writeHead(200, { 'content-type': 'text/html' }).end('<html>')
    // A searx whose engines are all down answers 200, no results, and names them (searx's own words).
    if (url.pathname === '/down/search')
      return json(200, {
        query: url.searchParams.get('q'),
        number_of_results: 0,
        results: [],
        unresponsive_engines: [
          ['bing', 'HTTP error'],
          ['wikipedia', 'timeout'],
        ],
      })
    res.writeHead(404).end()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`
})
afterAll(() => new Promise<void>((r) => server.close(() => r())))

const signal = new AbortController().signal
const catalogue: Catalogue = { models: [] }
const search = () => ({
  searxngUrl: `${origin}/searx`,
  brave: { apiKey: 'brave-key', baseUrl: `${origin}/` },
  tavily: { apiKey: 'tvly-key', baseUrl: `${origin}/tavily/` },
  exa: { apiKey: 'exa-key', baseUrl: `${origin}/exa/` },
  timeoutMs: 2_000,
})
function webSearchTool(parameters: Record<string, unknown>, options = search()): ServerTool {
  const kind = serverToolKinds({
    webFetch: { allowPrivateNetworks: false, maxBytes: 1024, timeoutMs: 1_000 },
    search: options,
  }).get('openrouter:web_search')!
  return kind.offer(kind.parameters.parse(parameters), { catalogue })
}

describe('openrouter:web_search through each search engine', () => {
  it.each(['searxng', 'brave', 'tavily', 'exa'] as BackendName[])(
    '%s: the results the entry asks for, its domains kept to, content capped, the request as the API documents it',
    async (engine) => {
      seen.length = 0
      const tool = webSearchTool({ engine, max_results: 3, excluded_domains: ['example.net'], max_characters: 100 })
      const out = (await tool.run({ query: 'roster gateway' }, { signal })) as any
      expect(out.engine).toBe(engine)
      expect(out.results.map((r: any) => r.url)).toEqual([pages[0]!.url, pages[1]!.url, pages[3]!.url])
      for (const r of out.results) {
        expect(r.title).toMatch(/^Page \d$/)
        expect(r.content.length).toBeLessThanOrEqual(100)
        expect(r.content.length).toBeGreaterThan(0)
      }
      const asked = seen.at(-1)!
      if (engine === 'searxng') expect(asked.query.get('q')).toBe('roster gateway')
      if (engine === 'brave') expect([asked.query.get('q'), asked.query.get('count')]).toEqual(['roster gateway', '3'])
      if (engine === 'tavily')
        expect(asked.body).toEqual({ query: 'roster gateway', max_results: 3, exclude_domains: ['example.net'] })
      if (engine === 'exa')
        expect(asked.body).toEqual({
          query: 'roster gateway',
          numResults: 3,
          excludeDomains: ['example.net'],
          contents: { text: { maxCharacters: 100 } },
        })
      // The item the client sees, read by the official client's schema of output items.
      const item = {
        type: 'openrouter:web_search',
        id: 'st_1',
        call_id: 'call_1',
        status: 'completed',
        arguments: '{"query":"roster gateway"}',
        output: JSON.stringify(out),
        ...tool.itemFields!({ query: 'roster gateway' }, out),
      }
      const parsed = OutputItems$inboundSchema.parse(item) as any
      expect(parsed.action).toEqual({
        type: 'search',
        query: 'roster gateway',
        sources: out.results.map((r: any) => ({ type: 'url', url: r.url })),
      })
    },
  )

  it('auto takes the preferred engine, else the first configured; an allowed domain keeps the rest out', async () => {
    const first = webSearchTool({ allowed_domains: ['docs.example.org'] })
    expect(((await first.run({ query: 'q' }, { signal })) as any).engine).toBe('searxng')
    const preferred = webSearchTool({}, { ...search(), preferred: 'exa' } as ReturnType<typeof search>)
    const out = (await preferred.run({ query: 'q' }, { signal })) as any
    expect(out.engine).toBe('exa')
    expect(out.results).toHaveLength(5) // the default
    expect(searchBackends({ timeoutMs: 1 }).size).toBe(0)
  })

  it('holds a request to max_total_results, and tells the model when a search failed or had nothing to search', async () => {
    const tool = webSearchTool({ engine: 'tavily', max_results: 4, max_total_results: 6 })
    expect(((await tool.run({ query: 'a' }, { signal })) as any).results).toHaveLength(4)
    expect(((await tool.run({ query: 'b' }, { signal })) as any).results).toHaveLength(2)
    expect(await tool.run({ query: 'c' }, { signal })).toEqual({ error: "the request's 6 search results are used up" })
    expect(await tool.run({ query: '  ' }, { signal })).toEqual({ error: 'query is empty' })
    const wrongKey = webSearchTool(
      { engine: 'brave' },
      { ...search(), brave: { apiKey: 'nope', baseUrl: `${origin}/` } },
    )
    expect(((await wrongKey.run({ query: 'x' }, { signal })) as any).error).toMatch(
      /^the search failed: Brave Search answered 401/,
    )
    const broken = webSearchTool({}, { searxngUrl: `${origin}/broken`, timeoutMs: 1_000 } as ReturnType<typeof search>)
    expect(((await broken.run({ query: 'x' }, { signal })) as any).error).toBe(
      'the search failed: SearXNG answered something other than JSON',
    )
    const down = webSearchTool({}, { searxngUrl: `${origin}/down`, timeoutMs: 1_000 } as ReturnType<typeof search>)
    expect(((await down.run({ query: 'x' }, { signal })) as any).error).toBe(
      "the search failed: SearXNG's engines did not answer (bing: HTTP error; wikipedia: timeout)",
    )
  })

  it('refuses an engine it has not, and parameters that do not read', () => {
    const kind = serverToolKinds({
      webFetch: { allowPrivateNetworks: false, maxBytes: 1024, timeoutMs: 1_000 },
      search: { timeoutMs: 1_000 },
    }).get('openrouter:web_search')!
    expect(() => kind.offer(kind.parameters.parse({}), { catalogue })).toThrow(
      /no search engine configured \(set SEARXNG_URL/,
    )
    expect(() => kind.offer(kind.parameters.parse({ engine: 'exa' }), { catalogue })).toThrow(/exa is not configured/)
    expect(() => kind.offer(kind.parameters.parse({ engine: 'parallel' }), { catalogue })).toThrow(
      /parallel is not served/,
    )
    expect(kind.parameters.safeParse({ allowed_domains: ['a.org'], excluded_domains: ['b.org'] }).success).toBe(false)
    expect(kind.parameters.safeParse({ max_results: 0 }).success).toBe(false)
  })
})

describe('citations of what a search found', () => {
  it('annotate each place the answer names a found URL, never a longer URL that begins with it', async () => {
    const tool = webSearchTool({ engine: 'exa', max_results: 2 })
    await tool.run({ query: 'q' }, { signal })
    const found = sourcesOf(tool)!
    const text = `See ${pages[0]!.url} and ${pages[0]!.url}/deeper, then ${pages[1]!.url}.`
    const output = [
      {
        type: 'message',
        id: 'msg_1',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text, annotations: [], logprobs: [] }],
      },
    ] as unknown as OutputItem[]
    const events: any[] = []
    citeSources(output, 0, found, (e) => events.push(e))
    const annotations = (output[0] as any).content[0].annotations
    expect(annotations).toEqual([
      {
        type: 'url_citation',
        url: pages[0]!.url,
        title: 'Page 1',
        start_index: 4,
        end_index: 4 + pages[0]!.url.length,
      },
      {
        type: 'url_citation',
        url: pages[1]!.url,
        title: 'Page 2',
        start_index: text.lastIndexOf(pages[1]!.url),
        end_index: text.lastIndexOf(pages[1]!.url) + pages[1]!.url.length,
      },
    ])
    for (const a of annotations) expect(text.slice(a.start_index, a.end_index)).toBe(a.url)
    expect(events.map((e) => e.type)).toEqual([
      'response.output_text.annotation.added',
      'response.output_text.annotation.added',
    ])
  })
})
