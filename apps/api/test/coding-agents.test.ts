import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import OpenAI from 'openai'
import Anthropic from '@anthropic-ai/sdk'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import type { Catalogue, Protocol } from '@roster/gateway'
import { useTestTenant } from '@roster/testing'
import { buildTestApp, SIM_PATHS, SIM_PROTOCOLS, simEndpoint, simModel } from './helpers.js'
import { invalidEvents, responseErrors } from './open-responses.js'

// What coding agents send (Claude Code on /messages, Codex on /responses), through the clients
// they are built on, each over every upstream protocol: system messages inside the conversation
// and the beta header that names them, images in tool results, namespace tools and the tool kinds
// Roster cannot offer, the provider's own model names, the base URL's warm-up.
const env = useTestTenant()
let sim: Simulator
let app: Awaited<ReturnType<typeof buildTestApp>>
let baseURL: string

const modelOf = (p: Protocol) => `roster-sim/${SIM_PATHS[p]}`
const UPSTREAM_PATH: Record<Protocol, string> = {
  'openai-chat': '/v1/chat/completions',
  'openai-responses': '/v1/responses',
  'anthropic-messages': '/v1/messages',
}
const SEARCHING = ['openai-responses', 'anthropic-messages'] as const
const searchModelOf = (p: Protocol) => `roster-sim/search-${SIM_PATHS[p]}`
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=='
const HAIKU = 'claude-haiku-4-5-20251001'

beforeAll(async () => {
  sim = await startSimulator({ replyTokens: 4 })
  const catalogue: Catalogue = {
    models: [
      ...SIM_PROTOCOLS.map((p) => ({
        ...simModel(modelOf(p), [simEndpoint(sim.url, p)]),
        // Anthropic's name for the Anthropic-protocol model, OpenAI's for the Responses one.
        ...(p === 'anthropic-messages' ? { aliases: { anthropic: [HAIKU] } } : {}),
        ...(p === 'openai-responses' ? { aliases: { openai: ['gpt-5-codex'] } } : {}),
      })),
      // Endpoints whose providers search the web themselves (catalogue web_search).
      ...SEARCHING.map((p) => simModel(searchModelOf(p), [simEndpoint(sim.url, p, { web_search: true })])),
      // One model, two providers: one without a search, listed first, one with.
      simModel('roster-sim/search-routed', [
        simEndpoint(sim.url, 'openai-chat', { provider: 'plain' }),
        simEndpoint(sim.url, 'openai-responses', { provider: 'searching', web_search: true }),
      ]),
    ],
  }
  app = await buildTestApp(env.t.db, {}, catalogue)
  baseURL = `${await app.listen({ port: 0, host: '127.0.0.1' })}/api/v1`
})
afterAll(async () => {
  await app?.closeAll()
  await sim?.close()
})

const anthropic = (headers: Record<string, string> = {}) =>
  new Anthropic({
    apiKey: env.tenant.keys.user,
    baseURL: baseURL.replace(/\/v1$/, ''),
    maxRetries: 0,
    defaultHeaders: headers,
  })
const openai = () => new OpenAI({ apiKey: env.tenant.keys.user, baseURL, maxRetries: 0 })
const upstreamBody = (p: Protocol) => JSON.stringify(sim.stats.lastBody[UPSTREAM_PATH[p]])
const IMAGE_BLOCK = {
  type: 'image' as const,
  source: { type: 'base64' as const, media_type: 'image/png' as const, data: PNG },
}
/** A conversation in which a screenshot tool returned `content`. */
const screenshotTaken = (content: Anthropic.ToolResultBlockParam['content']): Anthropic.MessageParam[] => [
  { role: 'user', content: 'look' },
  { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'screenshot', input: {} }] },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content }] },
]

describe('Claude Code on /messages', () => {
  it.each(SIM_PROTOCOLS)(
    'takes a system message inside the conversation, with the beta that names it, to %s',
    async (p) => {
      const reply = await anthropic({
        'anthropic-beta': 'claude-code-20250219,mid-conversation-system-2026-04-07,interleaved-thinking-2025-05-14',
      }).messages.create({
        model: modelOf(p),
        max_tokens: 64,
        system: 'You are a coding agent.',
        messages: [
          { role: 'user', content: 'hello' },
          { role: 'assistant', content: 'Hi.' },
          // The SDK types it as BetaSystemMessageParam; the standard type has no system role.
          { role: 'system', content: [{ type: 'text', text: 'Reminder: the repository is clean.' }] } as never,
          { role: 'user', content: 'go on' },
        ],
      })
      expect(reply.type).toBe('message')
      // It reached the provider as an instruction, in its place or folded into the system prompt.
      const sent = JSON.parse(upstreamBody(p))
      if (p === 'anthropic-messages') {
        expect(sent.system.map((b: { text: string }) => b.text)).toEqual([
          'You are a coding agent.',
          'Reminder: the repository is clean.',
        ])
        expect(JSON.stringify(sent.messages)).not.toContain('Reminder')
      } else {
        const turns: { role: string; content: unknown }[] = p === 'openai-chat' ? sent.messages : sent.input
        expect(turns.map((t) => t.role)).toEqual(['system', 'user', 'assistant', 'system', 'user'])
        expect(JSON.stringify(turns[3]!.content)).toContain('Reminder: the repository is clean.')
      }
    },
  )

  // What @ai-sdk/anthropic (with tools on a provider/model slug) and an older Claude Code (2.1.197) send.
  const BETAS =
    'claude-code-20250219,structured-outputs-2025-11-13,thinking-token-count-2026-05-13,context-management-2025-06-27,prompt-caching-scope-2026-01-05,effort-2025-11-24,made-up-2099-01-01'

  it.each(SIM_PROTOCOLS)('takes any beta name: passed on as sent to Anthropic endpoints, dropped for %s', async (p) => {
    const reply = await anthropic({ 'anthropic-beta': BETAS }).messages.create({
      model: modelOf(p),
      max_tokens: 8,
      tools: [{ name: 'read', input_schema: { type: 'object', properties: {} } }],
      messages: [{ role: 'user', content: 'hi' }],
    })
    expect(reply.type).toBe('message')
    const headers = sim.stats.lastHeaders[UPSTREAM_PATH[p]]!
    if (p === 'anthropic-messages') expect(headers['anthropic-beta']).toBe(BETAS)
    else expect(headers['anthropic-beta']).toBeUndefined()
  })

  it("carries a beta's feature where every protocol can (structured output, effort), and refuses by name one only Anthropic serves where no Anthropic endpoint is", async () => {
    const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] }
    const client = anthropic({ 'anthropic-beta': 'structured-outputs-2025-11-13,mcp-client-2025-04-04' })
    // The beta's field (output_format) and the GA one (output_config) reach a Chat Completions provider as its own.
    for (const field of [
      { output_format: { type: 'json_schema', schema } },
      { output_config: { format: { type: 'json_schema', schema }, effort: 'high' } },
    ]) {
      const reply = await client.messages.create({
        model: modelOf('openai-chat'),
        max_tokens: 8,
        messages: [{ role: 'user', content: 'a number' }],
        ...(field as object),
      })
      expect(reply.type).toBe('message')
      const sent = JSON.parse(upstreamBody('openai-chat'))
      expect(sent.response_format).toEqual({
        type: 'json_schema',
        json_schema: { name: 'output', schema, strict: true },
      })
      if ('output_config' in field) expect(sent.reasoning_effort).toBe('high')
    }
    const mcp = { mcp_servers: [{ type: 'url', url: 'https://mcp.example/sse', name: 'docs' }] }
    const before = sim.stats.requests[UPSTREAM_PATH['openai-chat']] ?? 0
    const err = await client.messages
      .create({
        model: modelOf('openai-chat'),
        max_tokens: 8,
        messages: [{ role: 'user', content: 'hi' }],
        ...mcp,
      } as never)
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(Anthropic.BadRequestError)
    const message = (err as InstanceType<typeof Anthropic.BadRequestError>).message
    expect(message).toMatch(/MCP connector \(mcp_servers\) is served only by Anthropic endpoints/)
    expect(message).not.toMatch(/anthropic-beta/)
    expect(sim.stats.requests[UPSTREAM_PATH['openai-chat']] ?? 0).toBe(before)
    // To an Anthropic endpoint it goes as it came, with the beta that names it.
    const served = await client.messages.create({
      model: modelOf('anthropic-messages'),
      max_tokens: 8,
      messages: [{ role: 'user', content: 'hi' }],
      ...mcp,
    } as never)
    expect(served.type).toBe('message')
    expect(JSON.parse(upstreamBody('anthropic-messages')).mcp_servers).toEqual(mcp.mcp_servers)
    expect(sim.stats.lastHeaders[UPSTREAM_PATH['anthropic-messages']]!['anthropic-beta']).toBe(
      'structured-outputs-2025-11-13,mcp-client-2025-04-04',
    )
  })

  it.each(['openai-responses', 'anthropic-messages'] as Protocol[])(
    'carries an image a tool returned to %s as an image',
    async (p) => {
      const reply = await anthropic().messages.create({
        model: modelOf(p),
        max_tokens: 16,
        tools: [{ name: 'screenshot', input_schema: { type: 'object', properties: {} } }],
        messages: screenshotTaken([{ type: 'text', text: 'the screen:' }, IMAGE_BLOCK]),
      })
      expect(reply.type).toBe('message')
      const sent = JSON.parse(upstreamBody(p))
      if (p === 'anthropic-messages') {
        const result = sent.messages.at(-1).content[0]
        expect(result).toMatchObject({
          type: 'tool_result',
          tool_use_id: 'toolu_1',
          content: [
            { type: 'text', text: 'the screen:' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
          ],
        })
      } else {
        const output = sent.input.find((i: { type?: string }) => i.type === 'function_call_output')
        expect(output.output).toEqual([
          { type: 'input_text', text: 'the screen:' },
          { type: 'input_image', image_url: `data:image/png;base64,${PNG}`, detail: 'auto' },
        ])
      }
    },
  )

  it('says, naming the model, that a Chat Completions endpoint cannot take an image in a tool result', async () => {
    const before = sim.stats.requests['/v1/chat/completions'] ?? 0
    const err = await anthropic()
      .messages.create({
        model: modelOf('openai-chat'),
        max_tokens: 16,
        messages: screenshotTaken([IMAGE_BLOCK]),
      })
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(Anthropic.BadRequestError)
    expect((err as Error).message).toMatch(/roster-sim\/chat.*images in tool results/)
    expect(sim.stats.requests['/v1/chat/completions'] ?? 0).toBe(before)
  })

  it("answers Anthropic's own model names the catalogue gives as aliases, and an unknown model 404 as Anthropic does", async () => {
    const reply = await anthropic().messages.create({
      model: HAIKU,
      max_tokens: 8,
      messages: [{ role: 'user', content: 'a title for this session' }],
    })
    expect(reply.model).toBe(modelOf('anthropic-messages'))
    const counted = await anthropic().messages.countTokens({
      model: HAIKU,
      messages: [{ role: 'user', content: 'hi' }],
    })
    expect(counted.input_tokens).toBeGreaterThan(0)
    for (const call of [
      () =>
        anthropic().messages.create({
          model: 'claude-opus-9',
          max_tokens: 8,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      () => anthropic().messages.countTokens({ model: 'claude-opus-9', messages: [{ role: 'user', content: 'hi' }] }),
    ]) {
      const err = await call().catch((e: unknown) => e)
      expect(err).toBeInstanceOf(Anthropic.NotFoundError)
      expect((err as InstanceType<typeof Anthropic.NotFoundError>).error).toMatchObject({
        type: 'error',
        error: { type: 'not_found_error', message: 'model: claude-opus-9' },
      })
    }
    // An alias is the door's provider's name: Anthropic's are not OpenAI's.
    const elsewhere = await openai()
      .chat.completions.create({ model: HAIKU, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e)
    expect(elsewhere).toBeInstanceOf(OpenAI.BadRequestError)
  })

  it('answers the warm-up request agents make on the base URL', async () => {
    for (const url of [baseURL.replace(/\/v1$/, ''), baseURL]) {
      const res = await fetch(url, { method: 'HEAD' })
      expect(res.status, url).toBe(200)
    }
  })
})

describe('Codex on /responses', () => {
  const VIEWED = [
    { type: 'input_text', text: 'the picture:' },
    { type: 'input_image', image_url: `data:image/png;base64,${PNG}` },
  ]
  const viewImage = (model: string) =>
    openai().responses.create({
      model,
      input: [
        { role: 'user', content: 'look at the picture' },
        { type: 'function_call', call_id: 'call_1', name: 'view_image', arguments: '{"path":"a.png"}' },
        { type: 'function_call_output', call_id: 'call_1', output: VIEWED as never },
      ],
      tools: [{ type: 'function', name: 'view_image', parameters: { type: 'object', properties: {} }, strict: false }],
    })

  it.each(['openai-responses', 'anthropic-messages'] as Protocol[])(
    'carries an image in a function call output to %s as an image, never as text',
    async (p) => {
      expect((await viewImage(modelOf(p))).status).toBe('completed')
      const sent = JSON.parse(upstreamBody(p))
      if (p === 'openai-responses') {
        const output = sent.input.find((i: { type?: string }) => i.type === 'function_call_output')
        expect(output.output).toEqual([
          { type: 'input_text', text: 'the picture:' },
          { type: 'input_image', image_url: `data:image/png;base64,${PNG}`, detail: 'auto' },
        ])
      } else {
        expect(sent.messages.at(-1).content[0].content).toEqual([
          { type: 'text', text: 'the picture:' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
        ])
      }
    },
  )

  it('refuses an image in a function call output where the model is served only over Chat Completions', async () => {
    const err = await viewImage(modelOf('openai-chat')).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(OpenAI.BadRequestError)
    expect((err as Error).message).toMatch(/roster-sim\/chat: no endpoint takes images in tool results/)
  })

  it.each(SIM_PROTOCOLS)(
    'offers namespace tools to %s, and a call comes back as the client named it; other kinds are left out, with a warning',
    async (p) => {
      const tools = [
        {
          type: 'namespace',
          name: 'crm',
          description: 'the CRM',
          tools: [
            {
              type: 'function',
              name: 'lookup',
              parameters: { type: 'object', properties: { id: { type: 'string' } } },
            },
          ],
        },
        { type: 'web_search', external_web_access: false },
        { type: 'function', name: 'shell', parameters: { type: 'object', properties: {} } },
      ]
      const res = await fetch(`${baseURL}/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: modelOf(p), input: '[sim] call crm__lookup {"id":"7"}', tools }),
      })
      expect(res.status).toBe(200)
      expect(res.headers.get('warning')).toMatch(/^299 roster ".*web_search.*"$/)
      const body = (await res.json()) as {
        output: { type: string; name?: string; namespace?: string; call_id?: string }[]
      }
      const call = body.output.find((o) => o.type === 'function_call')!
      expect(call).toMatchObject({ name: 'lookup', namespace: 'crm', arguments: '{"id":"7"}' })
      expect(responseErrors(body)).toEqual([])
      // Streamed, through the openai client: every event valid, the call as the client named it.
      const events: { type: string; item?: { type: string; name?: string; namespace?: string } }[] = []
      const stream = await openai().responses.create({
        model: modelOf(p),
        input: '[sim] call crm__lookup {"id":"7"}',
        tools: tools as never,
        stream: true,
      })
      for await (const e of stream) events.push(e as (typeof events)[number])
      expect(invalidEvents(events)).toEqual([])
      const done = events.filter((e) => e.type === 'response.output_item.done' && e.item?.type === 'function_call')
      expect(done.map((e) => [e.item!.namespace, e.item!.name])).toEqual([['crm', 'lookup']])
      // The provider was offered the group's function under one flat name, and nothing of web_search.
      const offered = upstreamBody(p)
      expect(offered).toContain('crm__lookup')
      expect(offered).not.toContain('web_search')

      // The call given back, namespace and all, with its output: answered.
      const next = await openai().responses.create({
        model: modelOf(p),
        input: [
          { role: 'user', content: 'look up 7' },
          {
            type: 'function_call',
            call_id: call.call_id!,
            name: 'lookup',
            namespace: 'crm',
            arguments: '{"id":"7"}',
          } as never,
          { type: 'function_call_output', call_id: call.call_id!, output: 'found' },
        ],
        tools: tools as never,
      })
      expect(next.status).toBe('completed')
      expect(upstreamBody(p)).toContain('crm__lookup')
    },
  )

  it('refuses what it cannot carry, naming it, and sends nothing upstream', async () => {
    const upstream = () => Object.values(sim.stats.requests).reduce((a, b) => a + b, 0)
    const before = upstream()
    const cases: [object, RegExp][] = [
      [{ tools: [{ type: 'namespace', name: 'bad name!', tools: [] }] }, /namespace tool needs a name/],
      [{ tools: [{ type: 'namespace', name: 'crm', tools: 'lookup' }] }, /namespace crm needs tools/],
      // Its functions are checked as function tools are (a name of 1 to 64 characters).
      [
        { tools: [{ type: 'namespace', name: 'crm', tools: [{ type: 'function', name: 'x'.repeat(65) }] }] },
        /namespace crm's tools\/0: name: Too big/,
      ],
      [
        {
          tools: [
            { type: 'namespace', name: 'crm', tools: [{ type: 'function', name: 'lookup' }] },
            { type: 'function', name: 'crm__lookup' },
          ],
        },
        /crm__lookup takes the name a namespace's function/,
      ],
      [
        {
          tools: [
            { type: 'function', name: 'crm__lookup' },
            { type: 'namespace', name: 'crm', tools: [{ type: 'function', name: 'lookup' }] },
          ],
        },
        /lookup in namespace crm is offered upstream as crm__lookup, a name another tool takes/,
      ],
      [
        {
          tools: [
            {
              type: 'namespace',
              name: 'crm',
              tools: Array.from({ length: 129 }, (_, i) => ({ type: 'function', name: `f${i}` })),
            },
          ],
        },
        /at most 128/,
      ],
      [
        {
          input: [
            { type: 'function_call', call_id: 'c', name: 'read', arguments: '{}' },
            { type: 'function_call_output', call_id: 'c', output: [{ type: 'input_file', file_id: 'file_1' }] },
          ],
        },
        /files in tool outputs are not served/,
      ],
    ]
    for (const [body, message] of cases) {
      const err = await openai()
        .responses.create({ model: modelOf('openai-responses'), input: 'x', ...body } as never)
        .catch((e: unknown) => e)
      expect(err, JSON.stringify(body).slice(0, 100)).toBeInstanceOf(OpenAI.BadRequestError)
      expect((err as Error).message).toMatch(message)
    }
    const system = await anthropic()
      .messages.create({
        model: modelOf('anthropic-messages'),
        max_tokens: 8,
        messages: [{ role: 'system', content: [IMAGE_BLOCK] } as never, { role: 'user', content: 'hi' }],
      })
      .catch((e: unknown) => e)
    expect(system).toBeInstanceOf(Anthropic.BadRequestError)
    expect((system as Error).message).toMatch(/a system message holds text blocks only/)
    expect(upstream()).toBe(before)
  })
})

describe("a client's web search, to the provider's own", () => {
  const sentTools = (p: Protocol) => (JSON.parse(upstreamBody(p)) as { tools?: { type?: string }[] }).tools ?? []
  const responses = (model: string, tool: object) =>
    fetch(`${baseURL}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, input: '[sim] say Searched.', tools: [tool] }),
    })
  const messages = (model: string, tool: object) =>
    anthropic()
      .messages.create({
        model,
        max_tokens: 16,
        messages: [{ role: 'user', content: '[sim] say Searched.' }],
        tools: [tool as never],
      })
      .withResponse()
  const codexSearch = {
    type: 'web_search',
    filters: { allowed_domains: ['example.com'] },
    user_location: { type: 'approximate', country: 'NO', city: 'Oslo' },
  }
  const crmOnly = { type: 'function', name: 'lookup', parameters: { type: 'object', properties: {} } }
  const claudeSearch = {
    type: 'web_search_20250305',
    name: 'web_search',
    max_uses: 3,
    allowed_domains: ['example.com'],
  }

  it('sends a Responses web_search as it came to a Responses provider, and as web_search_20250305 to Anthropic', async () => {
    const same = await responses(searchModelOf('openai-responses'), codexSearch)
    expect(same.status).toBe(200)
    expect(same.headers.get('warning')).toBeNull()
    expect(sentTools('openai-responses')).toEqual([codexSearch])
    expect(responseErrors(await same.json())).toEqual([])

    const other = await responses(searchModelOf('anthropic-messages'), codexSearch)
    expect(other.status).toBe(200)
    expect(other.headers.get('warning')).toBeNull()
    expect(sentTools('anthropic-messages')).toEqual([
      {
        type: 'web_search_20250305',
        name: 'web_search',
        allowed_domains: ['example.com'],
        user_location: { type: 'approximate', country: 'NO', city: 'Oslo' },
      },
    ])
    expect((await other.json()).output.at(-1).content[0].text).toBe('Searched.')
  })

  it("sends Claude Code's web_search_20250305 as it came to Anthropic, and as web_search capped by max_tool_calls to a Responses provider", async () => {
    const same = await messages(searchModelOf('anthropic-messages'), claudeSearch)
    expect(same.response.headers.get('warning')).toBeNull()
    expect(sentTools('anthropic-messages')).toEqual([claudeSearch])
    expect(same.data.content).toEqual([expect.objectContaining({ type: 'text', text: 'Searched.' })])

    const other = await messages(searchModelOf('openai-responses'), claudeSearch)
    expect(other.response.headers.get('warning')).toBeNull()
    const sent = JSON.parse(upstreamBody('openai-responses'))
    expect(sent.tools).toEqual([{ type: 'web_search', filters: { allowed_domains: ['example.com'] } }])
    expect(sent.max_tool_calls).toBe(3)
  })

  it("leaves the search out, with a warning, where the provider has none or cannot honour the client's limits", async () => {
    const cases: [string, object, Protocol][] = [
      // No web search on the endpoint (the catalogue does not say it has one).
      [modelOf('openai-responses'), codexSearch, 'openai-responses'],
      [modelOf('anthropic-messages'), claudeSearch, 'anthropic-messages'],
      // Chat Completions has no such tool.
      [searchModelOf('openai-responses').replace('search-responses', 'chat'), codexSearch, 'openai-chat'],
      // Codex's cached-only search cannot be Anthropic's live one.
      [searchModelOf('anthropic-messages'), { type: 'web_search', external_web_access: false }, 'anthropic-messages'],
      // OpenAI's tool has no blocked domains.
      [searchModelOf('openai-responses'), { ...claudeSearch, blocked_domains: ['evil.example'] }, 'openai-responses'],
    ]
    for (const [model, tool, p] of cases) {
      const res = await responses(model, tool)
      expect(res.status, `${model} ${JSON.stringify(tool)}`).toBe(200)
      expect(res.headers.get('warning')).toMatch(/^299 roster "tools not offered to the model: web_search.*runs none"$/)
      expect(JSON.stringify(sentTools(p))).not.toContain('web_search')
      expect(responseErrors(await res.json())).toEqual([])
    }
  })

  it('routes a request with web search to the provider that searches, and one without as usual', async () => {
    const count = (path: string) => sim.stats.requests[path] ?? 0
    const before = { chat: count('/v1/chat/completions'), responses: count('/v1/responses') }
    for (let i = 0; i < 4; i++) {
      const res = await responses('roster-sim/search-routed', codexSearch)
      expect(res.status).toBe(200)
      expect(res.headers.get('warning')).toBeNull()
    }
    expect(count('/v1/responses')).toBe(before.responses + 4)
    expect(count('/v1/chat/completions')).toBe(before.chat)
    // Without a search, the two take turns.
    for (let i = 0; i < 4; i++) expect((await responses('roster-sim/search-routed', crmOnly)).status).toBe(200)
    expect(count('/v1/chat/completions')).toBe(before.chat + 2)
  })

  it('maps tool_choice naming a namespace function to its flat name, and refuses one naming the web search', async () => {
    const crm = {
      type: 'namespace',
      name: 'crm',
      tools: [{ type: 'function', name: 'lookup', parameters: { type: 'object', properties: {} } }],
    }
    const res = await fetch(`${baseURL}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: modelOf('openai-responses'),
        input: 'look it up',
        tools: [crm],
        tool_choice: { type: 'function', name: 'lookup', namespace: 'crm' },
      }),
    })
    expect(res.status).toBe(200)
    expect(JSON.parse(upstreamBody('openai-responses')).tool_choice).toEqual({ type: 'function', name: 'crm__lookup' })
    const refused = await fetch(`${baseURL}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: searchModelOf('openai-responses'),
        input: 'x',
        tools: [codexSearch],
        tool_choice: { type: 'web_search' },
      }),
    })
    expect(refused.status).toBe(400)
    expect((await refused.json()).error.message).toMatch(/tool_choice of type web_search is not served/)
  })
})
