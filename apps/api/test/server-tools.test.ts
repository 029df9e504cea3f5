import { createServer, type Server } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OpenRouter } from '@openrouter/sdk'
import { replayModel, startSimulator, type Simulator } from '@roster/upstream-sim'
import type { Catalogue } from '@roster/gateway'
import { describeNeeding, makeUserKey, startSearx, useTestTenant, type Searx } from '@roster/testing'
import { buildTestApp, simEndpoint, simModel, sseEvents } from './helpers.js'
import { invalidEvents } from './open-responses.js'

// The official client's server tools on /responses, against a real API with the simulator as the
// model (its `[sim] call` scripts make the calls) and a SearXNG stand-in answering as SearXNG's
// JSON API documents: web search through SearXNG with its sources on the item and citations on
// the answer, the endpoint's own search where it has one, the catalogue searched, the limits of an
// entry, and a workspace that disabled a tool.
const env = useTestTenant()
let sim: Simulator
let searx: Server
let searches: string[] = []
let tavilyKeys: string[] = []
let app: Awaited<ReturnType<typeof buildTestApp>>
let baseURL: string

const RESULTS = [
  { url: 'https://docs.example.org/roster', title: 'Roster docs', content: 'Roster is a gateway and an intern host.' },
  { url: 'https://blog.example.org/launch', title: 'Launch post', content: 'Roster launched today.' },
]

beforeAll(async () => {
  searx = createServer((req, res) => {
    const url = new URL(req.url!, 'http://x')
    // Tavily's search API, as a workspace's own key reaches it (BYOK).
    if (url.pathname === '/tavily/search') {
      tavilyKeys.push(String(req.headers.authorization))
      return res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          results: [{ url: 'https://tavily.example.org/r', title: 'Found by Tavily', content: 'x' }],
        }),
      )
    }
    if (url.pathname !== '/search' || url.searchParams.get('format') !== 'json') return res.writeHead(403).end()
    searches.push(url.searchParams.get('q') ?? '')
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ results: RESULTS }))
  })
  await new Promise<void>((r) => searx.listen(0, '127.0.0.1', r))
  sim = await startSimulator({ replyTokens: 4 })
  const catalogue: Catalogue = {
    models: [
      simModel('roster-sim/chat', [simEndpoint(sim.url, 'openai-chat')]),
      simModel('roster-sim/responses', [simEndpoint(sim.url, 'openai-responses')]),
      simModel('roster-sim/searching', [simEndpoint(sim.url, 'openai-responses', { web_search: true })]),
      // The provider runs the search itself: OpenAI's recorded answers (packages/upstream-sim/recordings).
      simModel('roster-rec/web-search', [
        simEndpoint(sim.url, 'openai-responses', {
          provider: 'openai',
          web_search: true,
          upstream_model: replayModel('openai-web-search.json'),
        }),
      ]),
      simModel('roster-rec/web-search-stream', [
        simEndpoint(sim.url, 'openai-responses', {
          provider: 'openai',
          web_search: true,
          upstream_model: replayModel('openai-web-search-citations.chunks'),
        }),
      ]),
      {
        ...simModel('roster-sim/image', [simEndpoint(sim.url, 'openai-chat', { upstream_model: 'sim-image-1' })]),
        capabilities: { tools: false, reasoning: false, images: false, caching: false, image_generation: true },
      },
    ],
  }
  app = await buildTestApp(
    env.t.db,
    {
      SEARXNG_URL: `http://127.0.0.1:${(searx.address() as { port: number }).port}`,
      // No Tavily key of the operator's: only a workspace's own reaches it.
      TAVILY_BASE_URL: `http://127.0.0.1:${(searx.address() as { port: number }).port}/tavily/`,
    },
    catalogue,
  )
  baseURL = `${await app.listen({ port: 0, host: '127.0.0.1' })}/api/v1`
})
afterAll(async () => {
  await app?.closeAll()
  await sim?.close()
  await new Promise<void>((r) => searx?.close(() => r()))
})

const client = () =>
  new OpenRouter({ apiKey: env.tenant.keys.user, serverURL: baseURL, retryConfig: { strategy: 'none' } })
const post = (body: object, key = env.tenant.keys.user) =>
  fetch(`${baseURL}/responses`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
/** POST /responses, its JSON answer. */
const answer = async (body: object, key = env.tenant.keys.user): Promise<any> => (await post(body, key)).json()
/** Sets the test workspace's disabled server tools. */
const setDisabled = async (tools: string[] | null) => {
  const res = await fetch(`${baseURL}/workspaces/${env.tenant.workspaceId}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${env.tenant.keys.management}`, 'content-type': 'application/json' },
    body: JSON.stringify({ disabled_server_tools: tools }),
  })
  expect(res.status, await res.clone().text()).toBe(200)
}
const SEARCH_THEN_CITE = `research\n[sim] call web_search {"query":"roster gateway"}\n[sim] say See ${RESULTS[0]!.url} for the details.`

describe('openrouter:web_search', () => {
  it('searches with SearXNG where the endpoint has no search: the item shows the query and sources, the answer cites them (official client, whole)', async () => {
    searches = []
    const res = (await client().responses.send({
      responsesRequest: {
        model: 'roster-sim/chat',
        input: SEARCH_THEN_CITE,
        tools: [{ type: 'openrouter:web_search', parameters: { maxResults: 2 } }],
      },
    })) as any
    expect(searches).toEqual(['roster gateway'])
    expect(res.output.map((o: any) => o.type)).toEqual(['openrouter:web_search', 'message'])
    expect(res.output[0]).toMatchObject({
      status: 'completed',
      action: {
        type: 'search',
        query: 'roster gateway',
        sources: RESULTS.map((r) => ({ type: 'url', url: r.url })),
      },
    })
    // The model read the results' text.
    const toModel = (sim.stats.lastBody['/v1/chat/completions'] as any).messages.at(-1)
    expect(toModel.role).toBe('tool')
    expect(JSON.parse(toModel.content).results).toEqual(RESULTS)
    const text = res.output[1].content[0]
    expect(text.text).toBe(`See ${RESULTS[0]!.url} for the details.`)
    expect(text.annotations).toEqual([
      {
        type: 'url_citation',
        url: RESULTS[0]!.url,
        title: 'Roster docs',
        startIndex: 4,
        endIndex: 4 + RESULTS[0]!.url.length,
      },
    ])
  })

  it('streams the same: the item added and done, the citation added, every event parsed by the official client', async () => {
    const stream = await client().responses.send({
      responsesRequest: {
        model: 'roster-sim/responses',
        input: SEARCH_THEN_CITE,
        stream: true,
        tools: [{ type: 'openrouter:web_search' }],
      },
    })
    const events: any[] = []
    for await (const e of stream as AsyncIterable<any>) events.push(e)
    const added = events.filter((e) => e.type === 'response.output_item.added').map((e) => e.item.type)
    expect(added).toEqual(['openrouter:web_search', 'message'])
    const done = events.find((e) => e.type === 'response.output_item.done' && e.item.type === 'openrouter:web_search')
    expect(done.item.action.sources).toHaveLength(2)
    const cited = events.filter((e) => e.type === 'response.output_text.annotation.added')
    expect(cited.map((e) => e.annotation.url)).toEqual([RESULTS[0]!.url])
    expect(events.at(-1).type).toBe('response.completed')
    expect(events.at(-1).response.output[1].content[0].annotations).toHaveLength(1)
  })

  it("goes to the endpoint's own search where it has one (engine auto), and refuses engine native where it has none", async () => {
    searches = []
    const res = await post({
      model: 'roster-sim/searching',
      input: 'anything new?',
      tools: [{ type: 'openrouter:web_search', parameters: { allowed_domains: ['example.org'] } }],
    })
    expect(res.status, await res.clone().text()).toBe(200)
    const sent = (sim.stats.lastBody['/v1/responses'] as any).tools
    expect(sent).toEqual([{ type: 'web_search', filters: { allowed_domains: ['example.org'] } }])
    expect(searches).toEqual([])
    const native = await post({
      model: 'roster-sim/chat',
      input: 'x',
      tools: [{ type: 'openrouter:web_search', parameters: { engine: 'native' } }],
    })
    expect(native.status).toBe(400)
    expect(((await native.json()) as any).error.message).toMatch(
      /engine native, but the endpoint chosen .* has no web search/,
    )
  })

  it('refuses an engine that is not configured or not known, and parameters that do not read, changing nothing', async () => {
    for (const [parameters, message] of [
      [{ engine: 'brave' }, /the engine brave is not configured/],
      [{ engine: 'firecrawl' }, /the engine firecrawl is not served by this Roster/],
      [{ max_results: 0 }, /\/tools\/0\/parameters of openrouter:web_search/],
      [{ allowed_domains: ['a.org'], excluded_domains: ['b.org'] }, /allowed_domains or excluded_domains/],
      ['not an object', /\/tools\/0\/parameters/],
    ] as const) {
      const res = await post({
        model: 'roster-sim/chat',
        input: 'x',
        tools: [{ type: 'openrouter:web_search', parameters }],
      })
      expect(res.status, JSON.stringify(parameters)).toBe(400)
      expect(((await res.json()) as any).error.message).toMatch(message)
    }
  })

  it("holds the model to the entry's max_uses: a call past it is answered with an error, not searched", async () => {
    searches = []
    const res = await answer({
      model: 'roster-sim/chat',
      input: `[sim] call web_search {"query":"one"}\n[sim] call web_search {"query":"two"}\n[sim] say done`,
      tools: [{ type: 'openrouter:web_search', parameters: { max_uses: 1 } }],
    })
    expect(searches).toEqual(['one'])
    const items = res.output.filter((o: any) => o.type === 'openrouter:web_search')
    expect(items).toHaveLength(2)
    expect(JSON.parse(items[1].output).error).toBe('web_search may be called 1 times in one request; it was')
  })
})

describe('openrouter:web_search where the provider runs it (recorded traffic)', () => {
  it("sends the provider's own search and hands on what it recorded: its search calls and the citations on the text (official client)", async () => {
    searches = []
    const res = (await client().responses.send({
      responsesRequest: {
        model: 'roster-rec/web-search',
        input: 'What happened in San Francisco last week?',
        tools: [{ type: 'openrouter:web_search', parameters: { maxResults: 3 } }],
      },
    })) as any
    // OpenAI's own tool went to the endpoint; Roster's search engine was not asked.
    expect((sim.stats.lastBody['/v1/responses'] as any).tools.map((t: any) => t.type)).toEqual(['web_search'])
    expect(searches).toEqual([])
    expect(res.output.map((o: any) => o.type)).toEqual(['web_search_call', 'web_search_call', 'message'])
    const annotations = res.output[2].content[0].annotations
    expect(annotations).toHaveLength(5)
    expect(annotations[0]).toMatchObject({ type: 'url_citation', url: expect.stringContaining('axios.com') })
  })

  it('streams a recorded search as it came, every event parsed by the official client', async () => {
    const stream = await client().responses.send({
      responsesRequest: {
        model: 'roster-rec/web-search-stream',
        input: 'Research the topic',
        stream: true,
        tools: [{ type: 'openrouter:web_search' }],
      },
    })
    const events: any[] = []
    for await (const e of stream as AsyncIterable<any>) events.push(e)
    const done = events.filter((e) => e.type === 'response.output_item.done').map((e) => e.item.type)
    expect(done.filter((t) => t === 'web_search_call')).toHaveLength(4)
    const cited = events.filter((e) => e.type === 'response.output_text.annotation.added')
    expect(cited).toHaveLength(6)
    expect(events.at(-1).type).toBe('response.completed')
  })
})

describe("openrouter:web_search with the workspace's own search key (BYOK)", () => {
  it("searches with the workspace's Tavily key before the operator's SearXNG, and only for callers its allow-list names", async () => {
    const add = await fetch(`${baseURL}/byok`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.tenant.keys.management}`, 'content-type': 'application/json' },
      body: JSON.stringify({ provider: 'tavily', key: 'tvly-workspace-key' }),
    })
    expect(add.status, await add.clone().text()).toBe(201)
    const { data } = (await add.json()) as any
    try {
      tavilyKeys = []
      searches = []
      const res = await answer({
        model: 'roster-sim/chat',
        input: SEARCH_THEN_CITE,
        tools: [{ type: 'openrouter:web_search' }],
      })
      expect(res.output[0].action.sources.map((s: any) => s.url)).toEqual(['https://tavily.example.org/r'])
      expect(tavilyKeys).toEqual(['Bearer tvly-workspace-key'])
      expect(searches).toEqual([])
      // Named by engine too; and a key whose allow-list names no one here is not used.
      const named = await answer({
        model: 'roster-sim/chat',
        input: SEARCH_THEN_CITE,
        tools: [{ type: 'openrouter:web_search', parameters: { engine: 'tavily' } }],
      })
      expect(named.output[0].action.sources).toHaveLength(1)
      const colleague = await makeUserKey(env.t.db, env.tenant.workspaceId)
      const patch = await fetch(`${baseURL}/byok/${data.id}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${env.tenant.keys.management}`, 'content-type': 'application/json' },
        body: JSON.stringify({ allowed_user_ids: [colleague.userId] }),
      })
      expect(patch.status, await patch.clone().text()).toBe(200)
      tavilyKeys = []
      searches = []
      const notMine = await answer({
        model: 'roster-sim/chat',
        input: SEARCH_THEN_CITE,
        tools: [{ type: 'openrouter:web_search' }],
      })
      expect(notMine.output[0].action.sources.map((s: any) => s.url)).toEqual(RESULTS.map((r) => r.url))
      expect(tavilyKeys).toEqual([])
      // The member it names searches with it (its cached credentials forgotten on the change).
      const theirs = await answer(
        { model: 'roster-sim/chat', input: SEARCH_THEN_CITE, tools: [{ type: 'openrouter:web_search' }] },
        colleague.key,
      )
      expect(theirs.output[0].action.sources.map((s: any) => s.url)).toEqual(['https://tavily.example.org/r'])
    } finally {
      await fetch(`${baseURL}/byok/${data.id}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${env.tenant.keys.management}` },
      })
    }
    // Without it, the operator's engine again.
    tavilyKeys = []
    await post({ model: 'roster-sim/chat', input: SEARCH_THEN_CITE, tools: [{ type: 'openrouter:web_search' }] })
    expect(tavilyKeys).toEqual([])
  })
})

describe('openrouter:experimental__search_models', () => {
  it('lets the model search the catalogue, its item parsed by the official client', async () => {
    const res = (await client().responses.send({
      responsesRequest: {
        model: 'roster-sim/chat',
        input: '[sim] call search_models {"query":"searching"}\n[sim] say found it',
        tools: [{ type: 'openrouter:experimental__search_models', parameters: { maxResults: 3 } }],
      },
    })) as any
    expect(res.output[0]).toMatchObject({
      type: 'openrouter:experimental__search_models',
      status: 'completed',
      query: 'searching',
    })
    const found = JSON.parse((sim.stats.lastBody['/v1/chat/completions'] as any).messages.at(-1).content)
    expect(found.models.map((m: any) => m.id)).toEqual(['roster-sim/searching'])
    expect(res.outputText).toBe('found it')
  })
})

describe('openrouter:tool_search', () => {
  const weather = {
    type: 'function',
    name: 'get_weather',
    description: 'The weather forecast for a city',
    parameters: { type: 'object', properties: { city: { type: 'string', description: 'City name' } } },
    defer_loading: true,
  }
  const stocks = { ...weather, name: 'get_quote', description: 'A stock quote', parameters: { type: 'object' } }
  const note = { type: 'function', name: 'take_note', parameters: { type: 'object' } }

  it('withholds deferred functions until a search finds them; the one found is then called like any other', async () => {
    const bodies: any[] = []
    const res = (await client().responses.send({
      responsesRequest: {
        model: 'roster-sim/chat',
        input: '[sim] call tool_search {"query":"weather forecast"}\n[sim] call get_weather {"city":"Oslo"}',
        // The official client's own spelling of the field (it sends defer_loading).
        tools: [
          { type: 'openrouter:tool_search' },
          ...[weather, stocks].map(({ defer_loading: _, ...f }) => ({ ...f, deferLoading: true })),
          note,
        ] as any,
      },
    })) as any
    bodies.push(sim.stats.lastBody['/v1/chat/completions'])
    expect(res.output.map((o: any) => o.type)).toEqual(['openrouter:tool_search', 'function_call'])
    expect(res.output[0]).toMatchObject({
      type: 'openrouter:tool_search',
      query: 'weather forecast',
      status: 'completed',
    })
    expect(res.output[1]).toMatchObject({ name: 'get_weather', arguments: '{"city":"Oslo"}' })
    // The turn after the search was offered the function found, and never the other withheld one.
    const offered = bodies[0].tools.map((t: any) => t.function.name).sort()
    expect(offered).toEqual(['get_weather', 'take_note', 'tool_search'])
    const found = JSON.parse(bodies[0].messages.at(-1).content)
    expect(found.tools.map((t: any) => t.name)).toEqual(['get_weather'])
  })

  it('never offers a withheld function before a search, and refuses defer_loading without tool_search', async () => {
    const first = await post({
      model: 'roster-sim/chat',
      input: 'hi',
      tools: [{ type: 'openrouter:tool_search' }, weather, note],
    })
    expect(first.status).toBe(200)
    expect((sim.stats.lastBody['/v1/chat/completions'] as any).tools.map((t: any) => t.function.name).sort()).toEqual([
      'take_note',
      'tool_search',
    ])
    const refused = await post({ model: 'roster-sim/chat', input: 'hi', tools: [weather, note] })
    expect(refused.status).toBe(400)
    expect(((await refused.json()) as any).error.message).toMatch(/defer_loading .* offer that tool too/)
  })
})

describe('openrouter:advisor and openrouter:subagent', () => {
  it('consult another model through the engine: the items parsed by the official client, a failure told to the model', async () => {
    const res = (await client().responses.send({
      responsesRequest: {
        model: 'roster-sim/chat',
        input:
          '[sim] call advisor_reviewer {"prompt":"[sim] say Looks right."}\n[sim] call advisor {"prompt":"x","model":"nobody/none"}\n[sim] say ok',
        tools: [
          { type: 'openrouter:advisor', parameters: { name: 'reviewer', model: 'roster-sim/responses' } },
          { type: 'openrouter:advisor' },
        ],
      },
    })) as any
    expect(res.output.map((o: any) => o.type)).toEqual(['openrouter:advisor', 'openrouter:advisor', 'message'])
    expect(res.output[0]).toMatchObject({
      advice: 'Looks right.',
      model: 'roster-sim/responses',
      instanceName: 'reviewer',
    })
    expect(res.output[1].error).toMatch(/^the consultation failed: /)
  })

  it('gives a subagent the server tools of its entry, and refuses entries that do not read', async () => {
    const res = await post({
      model: 'roster-sim/chat',
      input: '[sim] call subagent {"task":"[sim] call datetime {}\\n[sim] say Time checked."}\n[sim] say ok',
      tools: [{ type: 'openrouter:subagent', parameters: { tools: [{ type: 'openrouter:datetime' }] } }],
    })
    const body = (await res.json()) as any
    expect(res.status, JSON.stringify(body)).toBe(200)
    expect(body.output[0]).toMatchObject({ type: 'openrouter:subagent', outcome: 'Time checked.' })
    for (const parameters of [
      { tools: [{ type: 'openrouter:subagent' }] },
      { tools: [{ type: 'function', name: 'f' }] },
      { inherit_functions: true },
      { name: 'no/slashes' },
    ]) {
      const refused = await post({
        model: 'roster-sim/chat',
        input: 'x',
        tools: [{ type: 'openrouter:subagent', parameters }],
      })
      expect(refused.status, JSON.stringify(parameters)).toBe(400)
    }
    const twice = await post({
      model: 'roster-sim/chat',
      input: 'x',
      tools: [{ type: 'openrouter:advisor' }, { type: 'openrouter:advisor' }],
    })
    expect(twice.status).toBe(400)
  })
})

describe('openrouter:fusion', () => {
  const ANALYSIS = {
    consensus: ['Roster is a gateway'],
    contradictions: [{ topic: 'cost', stances: [{ model: 'roster-sim/chat', stance: 'cheap' }] }],
    blind_spots: ['latency'],
  }
  /** The outer model calls fusion with a question whose panelists (and analyst) answer the analysis as JSON. */
  const FUSE = `[sim] call fusion ${JSON.stringify({ prompt: `[sim] say ${JSON.stringify(ANALYSIS)}` })}\n[sim] say Fused.`
  const fusionTool = (parameters: object) => ({ type: 'openrouter:fusion' as const, parameters })

  it('asks the panel in parallel and the analyst over their answers: analysis, answers and failures on the item (official client)', async () => {
    const res = (await client().responses.send({
      responsesRequest: {
        model: 'roster-sim/chat',
        input: FUSE,
        tools: [fusionTool({ analysisModels: ['roster-sim/chat', 'roster-sim/responses', 'nobody/none'], tools: [] })],
      },
    })) as any
    expect(res.output.map((o: any) => o.type)).toEqual(['openrouter:fusion', 'message'])
    const item = res.output[0]
    expect(item.status).toBe('completed')
    expect(item.analysis).toEqual({
      consensus: ANALYSIS.consensus,
      contradictions: ANALYSIS.contradictions,
      partialCoverage: [],
      uniqueInsights: [],
      blindSpots: ANALYSIS.blind_spots,
    })
    expect(item.responses.map((r: any) => r.model)).toEqual(['roster-sim/chat', 'roster-sim/responses'])
    expect(JSON.parse(item.responses[1].content)).toEqual(ANALYSIS)
    expect(item.failedModels).toHaveLength(1)
    expect(item.failedModels[0].model).toBe('nobody/none')
    expect(item.failedModels[0].statusCode).toBeGreaterThanOrEqual(400)
    expect(res.outputText).toBe('Fused.')
  })

  it('keeps the answers without an analysis when the analyst fails, and fails with a reason when every panelist does', async () => {
    const judged = await answer({
      model: 'roster-sim/chat',
      input: FUSE,
      tools: [fusionTool({ analysis_models: ['roster-sim/chat'], model: 'nobody/none', tools: [] })],
    })
    expect(judged.output[0].analysis).toBeUndefined()
    expect(judged.output[0].responses).toHaveLength(1)
    expect(judged.output[0].error).toBeUndefined()
    const none = await answer({
      model: 'roster-sim/chat',
      input: FUSE,
      tools: [fusionTool({ analysis_models: ['nobody/none', 'nobody/else'], tools: [] })],
    })
    expect(none.output[0]).toMatchObject({ error: 'every model of the panel failed' })
    expect(none.output[0].failure_reason).toMatch(/^(invalid_model|all_panels_failed)$/)
    expect(none.output[0].failed_models).toHaveLength(2)
    // The model read the failure (it answered after it, as scripted).
    expect(none.output_text).toBe('Fused.')
    // Fusion does not recurse: a panelist that is fusion again fails, and so does a consultation past two deep.
    const recursing = await answer({
      model: 'roster-sim/chat',
      input: FUSE,
      tools: [fusionTool({ analysis_models: ['openrouter/fusion', 'roster-sim/chat'], tools: [] })],
    })
    expect(recursing.output[0].failed_models).toEqual([
      expect.objectContaining({ model: 'openrouter/fusion', error: expect.stringMatching(/does not recurse/) }),
    ])
    // A subagent (one deep) runs fusion, whose panelist (two deep) tries an advisor (three deep).
    const panelTask = '[sim] call advisor {"prompt":"x"}\n[sim] say {{result}}'
    const subagentTask = `[sim] call fusion ${JSON.stringify({ prompt: panelTask })}\n[sim] say {{result}}`
    const deep = await answer({
      model: 'roster-sim/chat',
      input: `[sim] call subagent ${JSON.stringify({ task: subagentTask })}\n[sim] say ok`,
      tools: [
        {
          type: 'openrouter:subagent',
          parameters: {
            tools: [
              {
                type: 'openrouter:fusion',
                parameters: { analysis_models: ['roster-sim/chat'], tools: [{ type: 'openrouter:advisor' }] },
              },
            ],
          },
        },
      ],
    })
    expect(deep.output[0].outcome).toMatch(/consultations go at most 2 deep/)
  })

  it("streams the panel and the analysis as the official client's fusion_call events, each parsed by it", async () => {
    const stream = await client().responses.send({
      responsesRequest: {
        model: 'roster-sim/chat',
        input: FUSE,
        stream: true,
        tools: [fusionTool({ analysisModels: ['roster-sim/chat', 'roster-sim/responses'], tools: [] })],
      },
    })
    const events: any[] = []
    for await (const e of stream as AsyncIterable<any>) events.push(e)
    const fusion = events.filter((e) => e.type.startsWith('response.fusion_call'))
    const item = events.find((e) => e.type === 'response.output_item.added').item
    for (const e of fusion) expect(e).toMatchObject({ itemId: item.id, outputIndex: 0 })
    expect(fusion[0].type).toBe('response.fusion_call.in_progress')
    expect(fusion.at(-1).type).toBe('response.fusion_call.completed')
    for (const model of ['roster-sim/chat', 'roster-sim/responses']) {
      const mine = fusion.filter((e) => e.model === model)
      expect(mine[0].type).toBe('response.fusion_call.panel.added')
      const deltas = mine.filter((e) => e.type === 'response.fusion_call.panel.delta')
      // The panelist streamed, in pieces that make its answer.
      expect(deltas.length).toBeGreaterThan(1)
      const completed = mine.find((e) => e.type === 'response.fusion_call.panel.completed')
      expect(deltas.map((e) => e.delta).join('')).toBe(completed.content)
    }
    const analysing = fusion.find((e) => e.type === 'response.fusion_call.analysis.in_progress')
    expect(analysing).toMatchObject({ analystModel: 'roster-sim/chat', judgeModel: 'roster-sim/chat' })
    const analysed = fusion.find((e) => e.type === 'response.fusion_call.analysis.completed')
    expect(analysed.analysis.consensus).toEqual(ANALYSIS.consensus)
    expect(fusion.indexOf(analysing)).toBeGreaterThan(
      fusion.findLastIndex((e) => e.type === 'response.fusion_call.panel.completed'),
    )
    expect(events.at(-1).type).toBe('response.completed')
  })

  it("names its events by Open Responses' extension rule for any other client, every event valid under the schema", async () => {
    const res = await post({
      model: 'roster-sim/chat',
      input: FUSE,
      stream: true,
      tools: [fusionTool({ analysis_models: ['roster-sim/chat'], tools: [] })],
    })
    const events = sseEvents(await res.text()).events.map((e) => e.data)
    expect(invalidEvents(events)).toEqual([])
    const types = events.map((e) => e.type).filter((t: string) => t.includes('fusion_call'))
    expect(types).toEqual([
      'openrouter:fusion_call.in_progress',
      'openrouter:fusion_call.panel.added',
      ...types.filter((t: string) => t === 'openrouter:fusion_call.panel.delta'),
      'openrouter:fusion_call.panel.completed',
      'openrouter:fusion_call.analysis.in_progress',
      'openrouter:fusion_call.analysis.completed',
      'openrouter:fusion_call.completed',
    ])
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i))
  })

  it('gives the panel and the analyst web search and fetch by default, leaving out those the workspace disables', async () => {
    const toolsAsked = async () => {
      const res = await answer({
        model: 'roster-sim/chat',
        input: FUSE,
        tools: [fusionTool({ analysis_models: ['roster-sim/responses'], model: 'roster-sim/responses' })],
      })
      expect(res.output[0].responses).toHaveLength(1)
      // The last call to the Responses protocol was the analyst's.
      return (sim.stats.lastBody['/v1/responses'] as any).tools.map((t: any) => t.name).sort()
    }
    expect(await toolsAsked()).toEqual(['web_fetch', 'web_search'])
    await setDisabled(['openrouter:web_fetch'])
    try {
      expect(await toolsAsked()).toEqual(['web_search'])
    } finally {
      await setDisabled(null)
    }
  })

  it('refuses parameters that do not read (a panel past eight, fusion inside fusion), changing nothing', async () => {
    for (const parameters of [
      { analysis_models: Array.from({ length: 9 }, (_, i) => `m/${i}`) },
      { analysis_models: [] },
      { tools: [{ type: 'openrouter:fusion' }] },
      { max_tool_calls: 17 },
      { preset: 'general-best' },
    ]) {
      const refused = await post({ model: 'roster-sim/chat', input: 'x', tools: [fusionTool(parameters)] })
      expect(refused.status, JSON.stringify(parameters)).toBe(400)
      expect(((await refused.json()) as any).error.message).toMatch(/^\/tools\/0\/parameters/)
    }
  })

  it('is offered by the fusion plugin, and run before the first turn for the model openrouter/fusion', async () => {
    const offered = await answer({
      model: 'roster-sim/chat',
      input: FUSE,
      plugins: [{ id: 'fusion', analysis_models: ['roster-sim/responses'], tools: [] }],
    })
    expect(offered.output.map((o: any) => o.type)).toEqual(['openrouter:fusion', 'message'])
    expect(offered.output[0].responses[0].model).toBe('roster-sim/responses')
    const always = (await client().responses.send({
      responsesRequest: {
        model: 'openrouter/fusion',
        input: `[sim] say ${JSON.stringify(ANALYSIS)}`,
        plugins: [
          {
            id: 'fusion',
            analysisModels: ['roster-sim/chat', 'roster-sim/responses'],
            model: 'roster-sim/responses',
            tools: [],
          },
        ],
      },
    })) as any
    expect(always.output.map((o: any) => o.type)).toEqual(['openrouter:fusion', 'message'])
    expect(always.model).toBe('roster-sim/responses')
    expect(always.output[0].analysis.consensus).toEqual(ANALYSIS.consensus)
    // The answer is written from the analysis (the synthesis read it as an instruction).
    expect(JSON.stringify(sim.stats.lastBody['/v1/responses'])).toContain('A panel of models answered')
    const refused = await post({
      model: 'openrouter/fusion',
      input: 'x',
      plugins: [{ id: 'fusion', analysis_models: [] }],
    })
    expect(refused.status).toBe(400)
  })
})

describe('openrouter:apply_patch', () => {
  const CREATE = { type: 'create_file', path: 'src/hello.ts', diff: '+export const hello = 1\n+export const bye = 2\n' }
  const UPDATE = {
    type: 'update_file',
    path: 'src/hello.ts',
    diff: '@@ export const hello = 1\n-export const bye = 2\n+export const bye = 3\n',
  }
  const patchTool = { type: 'openrouter:apply_patch' as const }

  it("checks the model's patch and hands it to the client as an apply_patch_call, ending the turn (official client)", async () => {
    const res = (await client().responses.send({
      responsesRequest: {
        model: 'roster-sim/chat',
        input: `make the file\n[sim] call apply_patch ${JSON.stringify(CREATE)}\n[sim] say {{result}}`,
        tools: [patchTool],
      },
    })) as any
    expect(res.output.map((o: any) => o.type)).toEqual(['apply_patch_call'])
    expect(res.output[0]).toMatchObject({ status: 'completed', operation: CREATE })
    expect(res.output[0].callId).toMatch(/./)
    // The client applies it and says so: the model reads the outcome on the next turn.
    const next = await answer({
      model: 'roster-sim/chat',
      input: [
        {
          role: 'user',
          content: `make the file\n[sim] call apply_patch ${JSON.stringify(CREATE)}\n[sim] say {{result}}`,
        },
        { type: 'apply_patch_call', call_id: res.output[0].callId, status: 'completed', operation: CREATE },
        {
          type: 'apply_patch_call_output',
          call_id: res.output[0].callId,
          status: 'completed',
          output: 'wrote 2 lines',
        },
      ],
      tools: [patchTool],
    })
    expect(next.output_text).toBe('completed: wrote 2 lines')
    const sent = (sim.stats.lastBody['/v1/chat/completions'] as any).messages
    expect(sent.at(-2).tool_calls[0].function).toEqual({ name: 'apply_patch', arguments: JSON.stringify(CREATE) })
  })

  it('tells the model what is wrong with a patch that does not read, and never hands it over', async () => {
    for (const [bad, problem] of [
      [{ type: 'create_file', path: 'a.ts', diff: 'no plus\n' }, /must start with "\+"/],
      [{ type: 'update_file', path: 'a.ts', diff: '@@\n same\n' }, /changes no line/],
      [{ type: 'update_file', path: 'a.ts', diff: '@@\n*bad\n' }, /must start with/],
      [{ type: 'update_file', path: 'a.ts' }, /diff is required/],
      [{ type: 'create_file', path: ' ', diff: '+x' }, /path is empty/],
      [{ type: 'rename_file', path: 'a.ts' }, /type must be one of/],
    ] as const) {
      const res = await answer({
        model: 'roster-sim/chat',
        input: `[sim] call apply_patch ${JSON.stringify(bad)}\n[sim] say {{result}}`,
        tools: [patchTool],
      })
      expect(
        res.output.map((o: any) => o.type),
        JSON.stringify(bad),
      ).toEqual(['openrouter:apply_patch', 'message'])
      expect(res.output[0].error).toMatch(problem)
      expect(JSON.parse(res.output_text).error).toMatch(problem)
    }
  })

  it("streams the item and its diff as one delta, by the official client's names and by the extension rule for any other", async () => {
    const stream = await client().responses.send({
      responsesRequest: {
        model: 'roster-sim/chat',
        input: `[sim] call apply_patch ${JSON.stringify(UPDATE)}`,
        stream: true,
        tools: [patchTool],
      },
    })
    const events: any[] = []
    for await (const e of stream as AsyncIterable<any>) events.push(e)
    const deltas = events.filter((e) => e.type === 'response.apply_patch_call_operation_diff.delta')
    expect(deltas.map((e) => e.delta)).toEqual([UPDATE.diff])
    expect(events.find((e) => e.type === 'response.apply_patch_call_operation_diff.done').diff).toBe(UPDATE.diff)
    const done = events.find((e) => e.type === 'response.output_item.done')
    expect(done.item).toMatchObject({ type: 'apply_patch_call', operation: UPDATE })
    const raw = await post({
      model: 'roster-sim/chat',
      input: `[sim] call apply_patch ${JSON.stringify({ type: 'delete_file', path: 'old.ts' })}`,
      stream: true,
      tools: [patchTool],
    })
    const sse = sseEvents(await raw.text()).events.map((e) => e.data)
    expect(invalidEvents(sse)).toEqual([])
    const item = sse.find((e) => e.type === 'response.output_item.done').item
    expect(item).toMatchObject({ type: 'openrouter:apply_patch', operation: { type: 'delete_file', path: 'old.ts' } })
    const update = await post({
      model: 'roster-sim/chat',
      input: `[sim] call apply_patch ${JSON.stringify(UPDATE)}`,
      stream: true,
      tools: [patchTool],
    })
    const updated = sseEvents(await update.text()).events.map((e) => e.data)
    expect(invalidEvents(updated)).toEqual([])
    expect(updated.filter((e) => e.type.startsWith('openrouter:apply_patch_call')).map((e) => e.type)).toEqual([
      'openrouter:apply_patch_call_operation_diff.delta',
      'openrouter:apply_patch_call_operation_diff.done',
    ])
  })

  it('is served on /responses only, and refuses an engine it does not know', async () => {
    const chat = await fetch(`${baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'roster-sim/chat',
        messages: [{ role: 'user', content: 'x' }],
        tools: [patchTool],
      }),
    })
    expect(chat.status).toBe(400)
    expect(((await chat.json()) as any).error.message).toMatch(/served on \/responses only/)
    const engine = await post({
      model: 'roster-sim/chat',
      input: 'x',
      tools: [{ ...patchTool, parameters: { engine: 'x' } }],
    })
    expect(engine.status).toBe(400)
  })
})

describe('openrouter:image_generation', () => {
  const DRAW = '[sim] call image_generation {"prompt":"a red fox in snow"}\n[sim] say {{result}}'
  const png = (b64: string) => Buffer.from(b64, 'base64')

  it("has the catalogue's image model make the image: the item carries it, the model reads that it was shown (official client)", async () => {
    const res = (await client().responses.send({
      responsesRequest: {
        model: 'roster-sim/chat',
        input: DRAW,
        tools: [
          {
            type: 'openrouter:image_generation',
            // The official client sends these beside `model`, as the Images API's own parameters.
            parameters: { additionalProperties: { quality: 'low', size: '1024x1024' } },
          },
        ],
      },
    })) as any
    expect(res.output.map((o: any) => o.type)).toEqual(['openrouter:image_generation', 'message'])
    const item = res.output[0]
    expect(item.prompt).toBe('a red fox in snow')
    expect(item.revisedPrompt).toBe('a red fox in snow')
    expect(item.imageB64).toBe(item.result)
    expect(png(item.result).subarray(1, 4).toString()).toBe('PNG')
    // The Images API was asked as OpenAI documents it: the endpoint's model, the prompt, the entry's parameters.
    expect(sim.stats.lastBody['/v1/images/generations']).toEqual({
      model: 'sim-image-1',
      prompt: 'a red fox in snow',
      quality: 'low',
      size: '1024x1024',
    })
    // The model read that the image was made, never its bytes.
    expect(res.outputText).toContain('shown to the user')
    expect(res.outputText).not.toContain(item.result)
  })

  it('makes a different image for a different prompt, and streams the image events, each parsed by the official client', async () => {
    const stream = await client().responses.send({
      responsesRequest: {
        model: 'roster-sim/chat',
        input: '[sim] call image_generation {"prompt":"a blue whale"}\n[sim] say done',
        stream: true,
        tools: [{ type: 'openrouter:image_generation' }],
      },
    })
    const events: any[] = []
    for await (const e of stream as AsyncIterable<any>) events.push(e)
    const item = events.find((e) => e.type === 'response.output_item.added').item
    expect(
      events.filter((e) => e.type.startsWith('response.image_generation_call')).map((e) => [e.type, e.itemId]),
    ).toEqual([
      ['response.image_generation_call.in_progress', item.id],
      ['response.image_generation_call.generating', item.id],
      ['response.image_generation_call.completed', item.id],
    ])
    const done = events.find((e) => e.type === 'response.output_item.done' && e.item.id === item.id).item
    const fox = sim.stats.lastBody['/v1/images/generations'] as any
    expect(fox.prompt).toBe('a blue whale')
    expect(png(done.result).subarray(1, 4).toString()).toBe('PNG')
    const again = await answer({
      model: 'roster-sim/chat',
      input: DRAW,
      tools: [{ type: 'openrouter:image_generation' }],
    })
    expect(again.output[0].result).not.toBe(done.result)
  })

  it('tells the model when the model named makes no images, and refuses parameters that do not read', async () => {
    const res = await answer({
      model: 'roster-sim/chat',
      input: DRAW,
      tools: [{ type: 'openrouter:image_generation', parameters: { model: 'roster-sim/chat' } }],
    })
    expect(res.output[0].error).toMatch(/roster-sim\/chat is not a model of this Roster that generates images/)
    for (const parameters of [{ prompt: 'x' }, { model: '' }, { quality: { deep: { deeper: 1 } } }]) {
      const refused = await post({
        model: 'roster-sim/chat',
        input: 'x',
        tools: [{ type: 'openrouter:image_generation', parameters }],
      })
      expect(refused.status, JSON.stringify(parameters)).toBe(400)
    }
  })

  it('is listed among the models that answer in images, and never chosen for text', async () => {
    const get = (path: string) =>
      fetch(`${baseURL}${path}`, { headers: { authorization: `Bearer ${env.tenant.keys.user}` } })
    const images = (await (await get('/models?output_modalities=image')).json()) as any
    expect(images.data.map((m: any) => m.id)).toEqual(['roster-sim/image'])
    expect(images.data[0].architecture).toMatchObject({ output_modalities: ['image'], modality: 'text->image' })
    const text = (await (await get('/models')).json()) as any
    expect(text.data.map((m: any) => m.id)).not.toContain('roster-sim/image')
  })
})

describe('openrouter:advisor streamed', () => {
  it("shows the advice as it comes, as text deltas of the advisor's item, when the entry asks (stream: true)", async () => {
    const stream = await client().responses.send({
      responsesRequest: {
        model: 'roster-sim/chat',
        input: '[sim] call advisor {"prompt":"[sim] say Use a map of the terrain."}\n[sim] say ok',
        stream: true,
        tools: [{ type: 'openrouter:advisor', parameters: { stream: true } }],
      },
    })
    const events: any[] = []
    for await (const e of stream as AsyncIterable<any>) events.push(e)
    const item = events.find((e) => e.type === 'response.output_item.added').item
    const deltas = events.filter((e) => e.type === 'response.output_text.delta' && e.itemId === item.id)
    expect(deltas.length).toBeGreaterThan(1)
    expect(deltas.map((e) => e.delta).join('')).toBe('Use a map of the terrain.')
    const done = events.find((e) => e.type === 'response.output_item.done' && e.item.id === item.id)
    expect(done.item.advice).toBe('Use a map of the terrain.')
  })
})

describe('the server-tool loop with several tools in play', () => {
  const SCRIPT = [
    '[sim] call datetime {}',
    '[sim] call search_models {"query":"searching"}',
    '[sim] call datetime {}',
    '[sim] call search_models {"query":"chat"}',
    '[sim] say done',
  ].join('\n')
  const TOOLS = [{ type: 'openrouter:datetime' }, { type: 'openrouter:experimental__search_models' }]
  const kinds = async (extra: object) => {
    const res = await answer({ model: 'roster-sim/chat', input: SCRIPT, tools: TOOLS, ...extra })
    return res.output.map((o: any) => o.type.replace('openrouter:', ''))
  }

  it('runs every call to the end without a stop condition, and stops on each condition where it fires', async () => {
    const all = ['datetime', 'experimental__search_models', 'datetime', 'experimental__search_models', 'message']
    expect(await kinds({})).toEqual(all)
    // has_tool_call by type, and by the function name the model calls.
    expect(
      await kinds({
        stop_server_tools_when: [{ type: 'has_tool_call', tool_name: 'openrouter:experimental__search_models' }],
      }),
    ).toEqual(all.slice(0, 2).concat('message'))
    expect(await kinds({ stop_server_tools_when: [{ type: 'has_tool_call', tool_name: 'search_models' }] })).toEqual(
      all.slice(0, 2).concat('message'),
    )
    expect(await kinds({ stop_server_tools_when: [{ type: 'step_count_is', step_count: 3 }] })).toEqual(
      all.slice(0, 3).concat('message'),
    )
    expect(await kinds({ stop_server_tools_when: [{ type: 'max_tokens_used', max_tokens: 1 }] })).toEqual([
      'datetime',
      'message',
    ])
    expect(await kinds({ stop_server_tools_when: [{ type: 'max_cost', max_cost_in_dollars: 1e-12 }] })).toEqual([
      'datetime',
      'message',
    ])
    // finish_reason_is: the model's turns that call tools finish with tool calls.
    expect(await kinds({ stop_server_tools_when: [{ type: 'finish_reason_is', reason: 'tool_calls' }] })).toEqual([
      'datetime',
      'message',
    ])
    // OR: the first to fire ends it; max_tool_calls holds as well.
    expect(
      await kinds({
        stop_server_tools_when: [
          { type: 'step_count_is', step_count: 4 },
          { type: 'has_tool_call', tool_name: 'openrouter:experimental__search_models' },
        ],
      }),
    ).toEqual(all.slice(0, 2).concat('message'))
    expect(await kinds({ max_tool_calls: 1 })).toEqual(['datetime', 'message'])
    // The last turn is made with tools off.
    expect((sim.stats.lastBody['/v1/chat/completions'] as any).tool_choice).toBe('none')
  })
})

describe("a workspace's disabled server tools", () => {
  it('refuse a request offering one with 403, while the others still run', async () => {
    const patch = await fetch(`${baseURL}/workspaces/${env.tenant.workspaceId}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${env.tenant.keys.management}`, 'content-type': 'application/json' },
      body: JSON.stringify({ disabled_server_tools: ['openrouter:web_search', 'openrouter:files'] }),
    })
    expect(patch.status, await patch.clone().text()).toBe(200)
    try {
      const res = await post({ model: 'roster-sim/chat', input: 'x', tools: [{ type: 'openrouter:web_search' }] })
      expect(res.status).toBe(403)
      expect(((await res.json()) as any).error.message).toBe(
        'the server tool openrouter:web_search is disabled in this workspace',
      )
      const other = await post({ model: 'roster-sim/chat', input: 'x', tools: [{ type: 'openrouter:datetime' }] })
      expect(other.status).toBe(200)
    } finally {
      await fetch(`${baseURL}/workspaces/${env.tenant.workspaceId}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${env.tenant.keys.management}`, 'content-type': 'application/json' },
        body: JSON.stringify({ disabled_server_tools: null }),
      })
    }
  })
})

describe('the stream of a server tool call', () => {
  it('is valid SSE with the item before the message (raw)', async () => {
    const res = await post({
      model: 'roster-sim/chat',
      input: SEARCH_THEN_CITE,
      stream: true,
      tools: [{ type: 'openrouter:web_search' }],
    })
    const events = sseEvents(await res.text()).events.map((e) => e.data)
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i))
    expect(events.filter((e) => e.type === 'response.output_item.added').map((e) => e.item.type)).toEqual([
      'openrouter:web_search',
      'message',
    ])
  })
})

// The same search through a real searx server (SearXNG's parent, the same JSON API), its one engine a
// search engine this test stands in for: Roster reads what searx made of the engine's answer.
await describeNeeding(['searx'], 'openrouter:web_search through a real searx server', () => {
  let engine: Server
  let engineQueries: string[] = []
  let searxServer: Searx
  let withSearx: Awaited<ReturnType<typeof buildTestApp>>
  let searxBase: string
  beforeAll(async () => {
    engine = createServer((req, res) => {
      const q = new URL(req.url!, 'http://x').searchParams.get('q') ?? ''
      engineQueries.push(q)
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          items: [
            {
              link: `https://docs.example.org/${q.replace(/\W+/g, '-')}`,
              name: `About ${q}`,
              snippet: `All about ${q}.`,
            },
          ],
        }),
      )
    })
    await new Promise<void>((r) => engine.listen(0, '127.0.0.1', r))
    searxServer = await startSearx({
      searchUrl: `http://127.0.0.1:${(engine.address() as { port: number }).port}/search?q={query}`,
      resultsQuery: 'items',
      urlQuery: 'link',
      titleQuery: 'name',
      contentQuery: 'snippet',
    })
    withSearx = await buildTestApp(
      env.t.db,
      { SEARXNG_URL: searxServer.url },
      {
        models: [simModel('roster-sim/chat', [simEndpoint(sim.url, 'openai-chat')])],
      },
    )
    searxBase = `${await withSearx.listen({ port: 0, host: '127.0.0.1' })}/api/v1`
  }, 60_000)
  afterAll(async () => {
    await withSearx?.closeAll()
    await searxServer?.stop()
    await new Promise<void>((r) => engine?.close(() => r()))
  })

  it('asks searx, which asks its engine; the results, sources and citations are what the engine found', async () => {
    engineQueries = []
    const res = (await new OpenRouter({
      apiKey: env.tenant.keys.user,
      serverURL: searxBase,
      retryConfig: { strategy: 'none' },
    }).responses.send({
      responsesRequest: {
        model: 'roster-sim/chat',
        input:
          '[sim] call web_search {"query":"roster gateway"}\n[sim] say Read https://docs.example.org/roster-gateway now.',
        // Roster's own engine name: the client's type lists OpenRouter's (its enum is open on the wire).
        tools: [{ type: 'openrouter:web_search', parameters: { engine: 'searxng' as 'auto' } }],
      },
    })) as any
    expect(engineQueries).toEqual(['roster gateway'])
    expect(res.output[0].action).toEqual({
      type: 'search',
      query: 'roster gateway',
      sources: [{ type: 'url', url: 'https://docs.example.org/roster-gateway' }],
    })
    const toModel = JSON.parse((sim.stats.lastBody['/v1/chat/completions'] as any).messages.at(-1).content)
    expect(toModel.results).toEqual([
      {
        url: 'https://docs.example.org/roster-gateway',
        title: 'About roster gateway',
        content: 'All about roster gateway.',
      },
    ])
    expect(res.output[1].content[0].annotations.map((a: any) => a.url)).toEqual([
      'https://docs.example.org/roster-gateway',
    ])
  })
})
