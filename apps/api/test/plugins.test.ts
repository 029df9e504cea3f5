import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OpenRouter } from '@openrouter/sdk'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import type { Catalogue } from '@roster/gateway'
import { useTestTenant } from '@roster/testing'
import { buildTestApp, simEndpoint, simModel } from './helpers.js'

// The official client's plugins on a real API, the simulator as the model: a JSON reply repaired,
// a search and a fetch run before the model's first turn (a SearXNG stand-in answering as its JSON
// API documents, and a page server), `openrouter/auto` chosen by a router's rule, and an input too
// long for its model fitted to it.
const env = useTestTenant()
let sim: Simulator
let web: Server
let webUrl: string
let searches: string[] = []
let app: Awaited<ReturnType<typeof buildTestApp>>
let baseURL: string

beforeAll(async () => {
  web = createServer((req, res) => {
    const url = new URL(req.url!, 'http://x')
    if (url.pathname === '/search') {
      searches.push(url.searchParams.get('q') ?? '')
      return res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          results: [
            { url: 'https://docs.example.org/roster', title: 'Roster docs', content: 'Roster serves plugins.' },
          ],
        }),
      )
    }
    if (url.pathname === '/page') return res.writeHead(200, { 'content-type': 'text/plain' }).end('The page says 7.')
    if (url.pathname === '/v1/moderations' && req.method === 'POST') return moderate(req, res)
    res.writeHead(404).end()
  })
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', r))
  webUrl = `http://127.0.0.1:${(web.address() as { port: number }).port}`
  sim = await startSimulator({ replyTokens: 4 })
  const priced = (id: string, input: string) => ({
    ...simModel(id, [simEndpoint(sim.url, 'openai-chat')]),
    pricing: { input, output: input },
  })
  const catalogue: Catalogue = {
    models: [
      simModel('roster-sim/chat', [simEndpoint(sim.url, 'openai-chat')]),
      priced('roster-sim/dear', '0.00002'),
      priced('roster-sim/cheap', '0.0000001'),
      {
        ...simModel('roster-sim/small', [simEndpoint(sim.url, 'openai-chat')]),
        context_length: 600,
        max_output_tokens: 100,
      },
      simModel('roster-sim/searching', [simEndpoint(sim.url, 'openai-responses', { web_search: true })]),
    ],
  }
  app = await buildTestApp(
    env.t.db,
    {
      SEARXNG_URL: webUrl,
      WEB_FETCH_PRIVATE_NETWORKS: 'allow',
      MODERATION_URL: `${webUrl}/v1`,
      MODERATION_API_KEY: 'mod-key',
    },
    catalogue,
  )
  baseURL = `${await app.listen({ port: 0, host: '127.0.0.1' })}/api/v1`
})
afterAll(async () => {
  await app?.closeAll()
  await sim?.close()
  await new Promise<void>((r) => web?.close(() => r()))
})

const client = () =>
  new OpenRouter({ apiKey: env.tenant.keys.user, serverURL: baseURL, retryConfig: { strategy: 'none' } })
const post = async (path: string, body: object) => {
  const res = await fetch(`${baseURL}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  return { status: res.status, body: (await res.json()) as any }
}
/** What the moderation stand-in was asked, and how it answers (as OpenAI's moderations API documents it). */
let moderations: { authorization?: string; body: any }[] = []
function moderate(req: IncomingMessage, res: ServerResponse) {
  let raw = ''
  req.on('data', (c) => (raw += c))
  req.on('end', () => {
    const body = JSON.parse(raw)
    moderations.push({ authorization: req.headers.authorization, body })
    if (req.headers.authorization !== 'Bearer mod-key') return res.writeHead(401).end('{"error":{"message":"bad key"}}')
    const texts: string[] = body.input.map((i: any) => (typeof i === 'string' ? i : (i.text ?? '')))
    if (texts.some((t) => t.includes('break the moderator'))) return res.writeHead(500).end('{"error":"down"}')
    const results = texts.map((t) => ({
      flagged: t.includes('forbidden'),
      categories: { violence: t.includes('forbidden'), hate: false, 'self-harm': t.includes('forbidden harm') },
      category_scores: { violence: t.includes('forbidden') ? 0.9 : 0.01, hate: 0.01, 'self-harm': 0.01 },
    }))
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ id: 'modr-1', model: body.model, results }))
  })
}

const BROKEN = "[sim] say Here it is: {name: 'Eve', age: 40,}"
const lastChatBody = () => sim.stats.lastBody['/v1/chat/completions'] as any

describe('response-healing', () => {
  it('repairs a whole reply asked to be JSON (official client), and leaves it alone without the plugin', async () => {
    const healed = (await client().responses.send({
      responsesRequest: {
        model: 'roster-sim/chat',
        input: BROKEN,
        text: { format: { type: 'json_object' } },
        plugins: [{ id: 'response-healing' }],
      },
    })) as any
    expect(JSON.parse(healed.outputText)).toEqual({ name: 'Eve', age: 40 })
    const raw = await post('/responses', {
      model: 'roster-sim/chat',
      input: BROKEN,
      text: { format: { type: 'json_object' } },
    })
    expect(raw.body.output_text).toBe("Here it is: {name: 'Eve', age: 40,}")
  })

  it('works on /chat/completions with response_format; a reply not asked to be JSON is never touched', async () => {
    const chat = await post('/chat/completions', {
      model: 'roster-sim/chat',
      messages: [{ role: 'user', content: BROKEN }],
      response_format: { type: 'json_object' },
      plugins: [{ id: 'response-healing' }],
    })
    expect(chat.status, JSON.stringify(chat.body)).toBe(200)
    expect(JSON.parse(chat.body.choices[0].message.content)).toEqual({ name: 'Eve', age: 40 })
    const text = await post('/responses', {
      model: 'roster-sim/chat',
      input: BROKEN,
      plugins: [{ id: 'response-healing' }],
    })
    expect(text.body.output_text).toBe("Here it is: {name: 'Eve', age: 40,}")
  })
})

describe('web and web-fetch', () => {
  it('web: searches for the latest message before the first turn, shows the search, and the model reads the results', async () => {
    searches = []
    const res = (await client().responses.send({
      responsesRequest: {
        model: 'roster-sim/chat',
        input: 'what does roster serve?\n[sim] say It serves plugins: https://docs.example.org/roster',
        plugins: [{ id: 'web', maxResults: 1 }],
      },
    })) as any
    expect(searches).toHaveLength(1)
    expect(searches[0]).toMatch(/^what does roster serve\?/)
    expect(res.output.map((o: any) => o.type)).toEqual(['openrouter:web_search', 'message'])
    expect(res.output[0].action.sources).toEqual([{ type: 'url', url: 'https://docs.example.org/roster' }])
    const system = lastChatBody().messages.filter((m: any) => m.role === 'system' || m.role === 'developer')
    expect(JSON.stringify(system)).toContain('Roster serves plugins.')
    expect(res.output[1].content[0].annotations.map((a: any) => a.url)).toEqual(['https://docs.example.org/roster'])
  })

  it("web: gives the model its endpoint's own search where it has one, and runs none of Roster's", async () => {
    searches = []
    const res = await post('/responses', {
      model: 'roster-sim/searching',
      input: 'anything new?',
      plugins: [{ id: 'web', include_domains: ['example.org'] }],
    })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect((sim.stats.lastBody['/v1/responses'] as any).tools).toEqual([
      { type: 'web_search', filters: { allowed_domains: ['example.org'] } },
    ])
    expect(searches).toEqual([])
    expect(res.body.output.some((o: any) => o.type === 'openrouter:web_search')).toBe(false)
    const native = await post('/responses', {
      model: 'roster-sim/chat',
      input: 'x',
      plugins: [{ id: 'web', engine: 'native' }],
    })
    expect(native.status).toBe(400)
    expect(native.body.error.message).toMatch(/engine native, but the endpoint chosen has no web search/)
  })

  it('web-fetch: fetches the pages the latest message links to before the first turn', async () => {
    const res = await post('/responses', {
      model: 'roster-sim/chat',
      input: `read ${webUrl}/page and tell me the number`,
      plugins: [{ id: 'web-fetch' }],
    })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    const item = res.body.output.find((o: any) => o.type === 'openrouter:web_fetch')
    expect(item).toMatchObject({ url: `${webUrl}/page`, httpStatus: 200, status: 'completed' })
    expect(JSON.stringify(lastChatBody().messages)).toContain('The page says 7.')
  })

  it('refuses a plugin it cannot serve or parameters that do not read, before anything runs', async () => {
    for (const [plugins, message] of [
      [[{ id: 'web', include_domains: ['a.org'], exclude_domains: ['b.org'] }], /allowed_domains or excluded_domains/],
      [[{ id: 'web', engine: 'tavily' }], /the engine tavily is not configured/],
      [[{ id: 'auto-router', cost_tier: 'cheap' }], /\/plugins\/0 auto-router/],
    ] as const) {
      searches = []
      const res = await post('/responses', { model: 'roster-sim/chat', input: 'x', plugins })
      expect(res.status, JSON.stringify(plugins)).toBe(400)
      expect(res.body.error.message).toMatch(message)
      expect(searches).toEqual([])
    }
  })
})

describe('moderation', () => {
  const requestsToModels = () => Object.values(sim.stats.requests).reduce((a, b) => a + b, 0)

  it("refuses input the moderation service flags with 403 and OpenRouter's metadata, before any model is asked", async () => {
    moderations = []
    const before = requestsToModels()
    const chat = await post('/chat/completions', {
      model: 'roster-sim/chat',
      messages: [
        { role: 'system', content: 'Be kind.' },
        { role: 'user', content: 'something forbidden harm here' },
      ],
      plugins: [{ id: 'moderation' }],
    })
    expect(chat.status).toBe(403)
    expect(chat.body.error.message).toBe('the input was flagged by moderation (violence, self-harm)')
    expect(chat.body.error.metadata).toMatchObject({
      reasons: ['violence', 'self-harm'],
      flagged_input: 'something forbidden harm here',
      provider_name: 'upstream-sim',
      model_slug: 'roster-sim/chat',
      error_type: 'permission_denied',
    })
    expect(requestsToModels()).toBe(before)
    // The service was asked with its key, the configured model, each message of the caller's.
    expect(moderations).toEqual([
      {
        authorization: 'Bearer mod-key',
        body: { model: 'omni-moderation-latest', input: ['Be kind.', 'something forbidden harm here'] },
      },
    ])
    // The official client reads the refusal as a 403 (streamed too: refused before the stream opens).
    const err = await client()
      .responses.send({
        responsesRequest: {
          model: 'roster-sim/chat',
          input: 'forbidden',
          stream: true,
          plugins: [{ id: 'moderation' }],
        },
      })
      .catch((e) => e)
    expect(err.statusCode).toBe(403)
    expect(requestsToModels()).toBe(before)
  })

  it('lets input it does not flag through, images included, and refuses with 502 when the service fails', async () => {
    moderations = []
    const ok = (await client().responses.send({
      responsesRequest: {
        model: 'roster-sim/chat',
        input: [
          {
            role: 'user',
            content: [
              { type: 'input_text', text: '[sim] say fine' },
              { type: 'input_image', imageUrl: 'https://img.example.org/cat.png', detail: 'auto' },
            ],
          },
        ],
        plugins: [{ id: 'moderation' }],
      },
    })) as any
    expect(ok.outputText).toBe('fine')
    expect(moderations[0]!.body.input).toEqual([
      { type: 'text', text: '[sim] say fine' },
      { type: 'image_url', image_url: { url: 'https://img.example.org/cat.png' } },
    ])
    const before = requestsToModels()
    const down = await post('/responses', {
      model: 'roster-sim/chat',
      input: 'please break the moderator',
      plugins: [{ id: 'moderation' }],
    })
    expect(down.status).toBe(502)
    expect(down.body.error.message).toMatch(/^the moderation service could not be asked: it answered 500/)
    expect(requestsToModels()).toBe(before)
  })
})

/** A one-page PDF holding `lines`, built as the format lays it out (objects, cross-reference table, trailer). */
function tinyPdf(lines: string[]): Buffer {
  const text = lines
    .map((l, i) => `BT /F1 12 Tf 72 ${720 - i * 16} Td (${l.replace(/[()\\]/g, (c) => `\\${c}`)}) Tj ET`)
    .join('\n')
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${Buffer.byteLength(text)} >>\nstream\n${text}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ]
  let out = '%PDF-1.4\n'
  const offsets: number[] = []
  objects.forEach((o, i) => {
    offsets.push(Buffer.byteLength(out))
    out += `${i + 1} 0 obj\n${o}\nendobj\n`
  })
  const xref = Buffer.byteLength(out)
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`
  return Buffer.from(out)
}

describe('file-parser', () => {
  it('reads a PDF in the input into text the model is given (official client), and refuses one it cannot read', async () => {
    const pdf = tinyPdf(['Quarterly revenue: 42 units', 'Signed (by the board)'])
    const res = (await client().responses.send({
      responsesRequest: {
        model: 'roster-sim/chat',
        input: [
          {
            type: 'message',
            role: 'user',
            content: [
              { type: 'input_text', text: 'What was the revenue?' },
              {
                type: 'input_file',
                filename: 'report.pdf',
                fileData: `data:application/pdf;base64,${pdf.toString('base64')}`,
              },
            ],
          },
        ],
        plugins: [{ id: 'file-parser', pdf: { engine: 'pdf-text' } }],
      },
    })) as any
    expect(res.status).toBe('completed')
    const sent = JSON.stringify(lastChatBody().messages)
    expect(sent).toContain('[report.pdf]')
    expect(sent).toContain('Quarterly revenue: 42 units')
    expect(sent).toContain('Signed (by the board)')
    const broken = await post('/responses', {
      model: 'roster-sim/chat',
      input: [
        {
          role: 'user',
          content: [{ type: 'input_file', filename: 'bad.pdf', file_data: 'data:application/pdf;base64,JVBERi0x' }],
        },
      ],
      plugins: [{ id: 'file-parser' }],
    })
    expect(broken.status).toBe(400)
    expect(broken.body.error.message).toMatch(/bad\.pdf is not a PDF that can be read/)
  })
})

describe('the routers', () => {
  it("choose openrouter/auto's model by their rule, and the answer names it", async () => {
    const allowed = ['roster-sim/dear', 'roster-sim/cheap']
    const dear = (await client().responses.send({
      responsesRequest: {
        model: 'openrouter/auto',
        input: 'hi',
        plugins: [{ id: 'auto-router', allowedModels: allowed, costTier: 'max' }],
      },
    })) as any
    expect(dear.model).toBe('roster-sim/dear')
    const cheap = await post('/responses', {
      model: 'openrouter/auto',
      input: 'hi',
      plugins: [{ id: 'auto-router', allowed_models: allowed, cost_tier: 'low' }],
    })
    expect(cheap.body.model).toBe('roster-sim/cheap')
    const pareto = await post('/responses', {
      model: 'openrouter/auto',
      input: 'hi',
      plugins: [{ id: 'pareto-router', max_price: 1 }],
    })
    expect(pareto.body.model).toBe('roster-sim/chat')
    const none = await post('/responses', {
      model: 'openrouter/auto',
      input: 'hi',
      plugins: [{ id: 'auto-router', allowed_models: ['nobody/*'] }],
    })
    expect(none.status).toBe(400)
    expect(none.body.error.message).toMatch(/auto-router: no model it may choose/)
  })
})

describe('context-compression', () => {
  it("fits an input longer than the model's context by leaving out its middle, the first and latest kept", async () => {
    const input = Array.from({ length: 12 }, (_, i) => ({
      role: i % 2 ? 'assistant' : 'user',
      content: `turn ${i}: ${'words '.repeat(40)}`,
    }))
    input.push({ role: 'user', content: 'the latest question' })
    const res = await post('/responses', {
      model: 'roster-sim/small',
      input,
      plugins: [{ id: 'context-compression', engine: 'middle-out' }],
    })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    const sent = lastChatBody().messages.map((m: any) => String(m.content))
    expect(sent.length).toBeLessThan(input.length)
    expect(sent[0]).toMatch(/^turn 0:/)
    expect(sent.at(-1)).toBe('the latest question')
    const whole = await post('/responses', { model: 'roster-sim/small', input })
    expect(whole.status).toBe(200)
    expect(lastChatBody().messages).toHaveLength(input.length)
  })
})
