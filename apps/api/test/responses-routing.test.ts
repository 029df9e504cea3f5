import { createServer, type Server } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OpenRouter } from '@openrouter/sdk'
import { countTokens, startSimulator, type Simulator } from '@roster/upstream-sim'
import type { Catalogue } from '@roster/gateway'
import { useTestTenant } from '@roster/testing'
import { buildTestApp, simEndpoint, simModel, sseEvents } from './helpers.js'

// Responses beyond the basic call: each protocol without streaming, prompt caching, routing
// metadata, sticky sessions, server tools and their loop, debug echo and trace propagation.
const env = useTestTenant()
let sim: Simulator
let left: Simulator
let right: Simulator
let looping: Simulator
let app: Awaited<ReturnType<typeof buildTestApp>>
let baseURL: string

beforeAll(async () => {
  sim = await startSimulator({ replyTokens: 4 })
  left = await startSimulator({ replyTokens: 3 })
  right = await startSimulator({ replyTokens: 3 })
  looping = await startSimulator({ replyTokens: 3, repeatToolCalls: true })
  const catalogue: Catalogue = {
    models: [
      simModel('roster-sim/chat', [simEndpoint(sim.url, 'openai-chat')]),
      simModel('roster-sim/responses', [simEndpoint(sim.url, 'openai-responses')]),
      simModel('roster-sim/messages', [simEndpoint(sim.url, 'anthropic-messages')]),
      simModel('roster-sim/pair', [
        simEndpoint(left.url, 'openai-chat', { provider: 'left' }),
        simEndpoint(right.url, 'openai-chat', { provider: 'right' }),
      ]),
      simModel('roster-sim/looping', [simEndpoint(looping.url)]),
    ],
  }
  app = await buildTestApp(env.t.db, {}, catalogue)
  baseURL = `${await app.listen({ port: 0, host: '127.0.0.1' })}/api/v1`
})
afterAll(async () => {
  await app?.closeAll()
  await Promise.all([sim, left, right, looping].map((s) => s?.close()))
})

const post = (body: object, headers: Record<string, string> = {}) =>
  fetch(`${baseURL}/responses`, {
    method: 'POST',
    headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  })
const answer = async (body: object, headers: Record<string, string> = {}) => {
  const res = await post(body, headers)
  const json = await res.json()
  expect(res.status, JSON.stringify(json)).toBe(200)
  return json
}

describe('each provider protocol, whole replies', () => {
  it('OpenAI Responses upstream: text, a tool call, the hashed user as safety_identifier', async () => {
    const text = await answer({ model: 'roster-sim/responses', input: 'hi', user: 'bob' })
    expect(text.output_text.split(' ')).toHaveLength(4)
    const sent = sim.stats.lastBody['/v1/responses'] as any
    expect(sent).toMatchObject({ model: 'sim', store: false, stream: false })
    expect(sent.safety_identifier).toMatch(/^[0-9a-f]{64}$/)
    const call = await answer({
      model: 'roster-sim/responses',
      input: 'hi',
      tools: [
        { type: 'function', name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'integer' } } } },
      ],
    })
    expect(call.output.find((o: any) => o.type === 'function_call')).toMatchObject({
      name: 'lookup',
      arguments: '{"q":1}',
    })
  })

  it('Anthropic Messages upstream: system from instructions, tool results paired, max_tokens, thinking', async () => {
    const res = await answer({
      model: 'roster-sim/messages',
      instructions: 'be brief',
      reasoning: { effort: 'low' },
      max_output_tokens: 4000,
      input: [
        { role: 'user', content: 'weather?' },
        { type: 'function_call', call_id: 'c1', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { type: 'function_call_output', call_id: 'c1', output: 'sunny' },
      ],
      tools: [
        {
          type: 'function',
          name: 'get_weather',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
        },
      ],
    })
    const sent = sim.stats.lastBody['/v1/messages'] as any
    expect(sent.system).toEqual([{ type: 'text', text: 'be brief' }])
    expect(sent.messages.map((m: any) => m.role)).toEqual(['user', 'assistant', 'user'])
    expect(sent.messages[1].content[0]).toEqual({
      type: 'tool_use',
      id: 'c1',
      name: 'get_weather',
      input: { city: 'Paris' },
    })
    expect(sent.messages[2].content[0]).toEqual({ type: 'tool_result', tool_use_id: 'c1', content: 'sunny' })
    // A tool loop with no signed thinking to give back: Anthropic would refuse it with thinking on
    // (the simulator does, in its words), so that turn is asked without it.
    expect(sent.thinking).toBeUndefined()
    expect(sent.max_tokens).toBe(4000)
    expect(res.output.map((o: any) => o.type)).toEqual(['message'])
    // With nothing to give back, thinking is asked as the request says.
    await answer({ model: 'roster-sim/messages', reasoning: { effort: 'low' }, max_output_tokens: 4000, input: 'hi' })
    expect((sim.stats.lastBody['/v1/messages'] as any).thinking).toEqual({ type: 'enabled', budget_tokens: 2048 })
  })

  it('cache_control: a breakpoint on the last block, cached tokens reported on the repeat; explicit mode places none', async () => {
    const body = {
      model: 'roster-sim/messages',
      input: 'a long stable prefix worth caching',
      cache_control: { type: 'ephemeral' },
    }
    const first = await answer(body)
    const sent = sim.stats.lastBody['/v1/messages'] as any
    expect(sent.messages[0].content.at(-1).cache_control).toEqual({ type: 'ephemeral' })
    expect(first.usage.input_tokens_details).toMatchObject({
      cached_tokens: 0,
      cache_write_tokens: first.usage.input_tokens,
    })
    const second = await answer(body)
    expect(second.usage.input_tokens_details.cached_tokens).toBe(second.usage.input_tokens)
    expect(second.usage.cost).toBeLessThan(first.usage.cost)

    await answer({ ...body, input: 'another prompt', prompt_cache_options: { mode: 'explicit' } })
    expect(JSON.stringify(sim.stats.lastBody['/v1/messages'])).not.toContain('cache_control')
    await answer({
      model: 'roster-sim/messages',
      prompt_cache_options: { mode: 'explicit' },
      input: [
        {
          role: 'user',
          content: [{ type: 'input_text', text: 'marked', cache_control: { type: 'ephemeral', ttl: '1h' } }],
        },
      ],
    })
    expect((sim.stats.lastBody['/v1/messages'] as any).messages[0].content[0].cache_control).toEqual({
      type: 'ephemeral',
      ttl: '1h',
    })
  })
})

describe('formats and images', () => {
  const schema = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] }
  it('sends a JSON schema as each protocol names it', async () => {
    const text = { format: { type: 'json_schema', name: 'reply', schema, strict: true } }
    await answer({ model: 'roster-sim/chat', input: 'x', text })
    expect((sim.stats.lastBody['/v1/chat/completions'] as any).response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'reply', schema, strict: true },
    })
    await answer({ model: 'roster-sim/messages', input: 'x', text })
    // Anthropic's structured outputs, as its client's MessageCreateParams names them.
    expect((sim.stats.lastBody['/v1/messages'] as any).output_config).toEqual({
      format: { type: 'json_schema', schema },
    })
    await answer({ model: 'roster-sim/responses', input: 'x', text })
    expect((sim.stats.lastBody['/v1/responses'] as any).text).toEqual(text)
  })

  it('sends images: a data URL as Anthropic base64, a URL as each protocol’s image part; refuses image output', async () => {
    const content = [
      { type: 'input_text', text: 'what is this?' },
      { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=' },
      { type: 'input_image', image_url: 'https://example.com/cat.jpg', detail: 'low' },
    ]
    await answer({ model: 'roster-sim/messages', input: [{ role: 'user', content }] })
    expect((sim.stats.lastBody['/v1/messages'] as any).messages[0].content.slice(1)).toEqual([
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
      { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
    ])
    await answer({ model: 'roster-sim/chat', input: [{ role: 'user', content }] })
    expect((sim.stats.lastBody['/v1/chat/completions'] as any).messages[0].content[2]).toEqual({
      type: 'image_url',
      image_url: { url: 'https://example.com/cat.jpg', detail: 'low' },
    })
    const refused = await post({ model: 'roster-sim/chat', input: 'draw', modalities: ['text', 'image'] })
    expect(refused.status).toBe(400)
    const file = await post({
      model: 'roster-sim/chat',
      input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'f' }] }],
    })
    expect((await file.json()).error.message).toMatch(/input_file/)
  })
})

describe('routing metadata, only when asked for', () => {
  it('is absent by default, service_metadata for the legacy header, both names for the client’s header', async () => {
    const plain = await answer({ model: 'roster-sim/chat', input: 'x' })
    expect(plain).not.toHaveProperty('service_metadata')
    expect(plain).not.toHaveProperty('openrouter_metadata')
    const legacy = await answer(
      { model: 'roster-sim/chat', input: 'x' },
      { 'X-Service-Experimental-Metadata': 'enabled' },
    )
    expect(legacy.service_metadata).toMatchObject({
      attempt: 1,
      endpoints: { available: [{ model: 'roster-sim/chat', provider: 'upstream-sim', selected: true }], total: 1 },
      is_byok: false,
      region: null,
      requested: 'roster-sim/chat',
    })
    expect(legacy.service_metadata.generation_time).toBeGreaterThanOrEqual(0)
    expect(legacy).not.toHaveProperty('openrouter_metadata')
    const disabled = await answer({ model: 'roster-sim/chat', input: 'x' }, { 'X-OpenRouter-Metadata': 'disabled' })
    expect(disabled).not.toHaveProperty('service_metadata')
  })

  it('parses in @openrouter/sdk when its own header opts in', async () => {
    const client = new OpenRouter({
      apiKey: env.tenant.keys.user,
      serverURL: baseURL,
      retryConfig: { strategy: 'none' },
    })
    const res = await client.responses.send({
      responsesRequest: { model: 'roster-sim/chat', input: 'x' },
      xOpenRouterMetadata: 'enabled',
    })
    expect((res as any).openrouterMetadata).toMatchObject({ attempt: 1, requested: 'roster-sim/chat', isByok: false })
  })
})

describe('sticky sessions', () => {
  const served = () => [
    left.stats.requests['/v1/chat/completions'] ?? 0,
    right.stats.requests['/v1/chat/completions'] ?? 0,
  ]
  const delta = async (times: number, body: object, headers: Record<string, string> = {}) => {
    const before = served()
    for (let i = 0; i < times; i++) await answer({ model: 'roster-sim/pair', input: 'x', ...body }, headers)
    const after = served()
    return [after[0]! - before[0]!, after[1]! - before[1]!]
  }

  it('keeps a session on one endpoint; without one, requests spread; the body session_id beats the header', async () => {
    const one = await delta(6, { session_id: 'conversation-1' })
    expect(one.sort()).toEqual([0, 6])
    expect((await delta(6, {})).every((n) => n > 0)).toBe(true)
    const byBody = await delta(4, { session_id: 'body-wins' })
    const withHeader = await delta(4, { session_id: 'body-wins' }, { 'x-session-id': 'some-other-session' })
    expect(withHeader).toEqual(byBody)
    const header = await delta(4, {}, { 'x-session-id': 'header-only' })
    expect(header.sort()).toEqual([0, 4])
  })
})

describe('server tools and the loop', () => {
  it('runs datetime between turns: its item carries the result, then the model answers', async () => {
    const res = await answer({
      model: 'roster-sim/chat',
      input: 'what time is it?',
      tools: [{ type: 'openrouter:datetime' }],
    })
    expect(res.output.map((o: any) => o.type)).toEqual(['openrouter:datetime', 'message'])
    const out = JSON.parse(res.output[0].output)
    expect(Math.abs(Date.parse(out.datetime) - Date.now())).toBeLessThan(10_000)
    const second = sim.stats.lastBody['/v1/chat/completions'] as any
    expect(second.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: res.output[0].call_id })
    expect(res.usage.input_tokens).toBeGreaterThan(0)
  })

  it("follows a model's script: two tool calls in turn, then the scripted answer", async () => {
    const input =
      'plan:\n[sim] call datetime {"timezone":"Europe/Oslo"}\n[sim] call datetime {"timezone":"Asia/Tokyo"}\n[sim] say Oslo and Tokyo, both known.'
    const res = await answer({ model: 'roster-sim/responses', input, tools: [{ type: 'openrouter:datetime' }] })
    expect(res.output.map((o: any) => o.type)).toEqual(['openrouter:datetime', 'openrouter:datetime', 'message'])
    expect(res.output.slice(0, 2).map((o: any) => JSON.parse(o.output).timezone)).toEqual(['Europe/Oslo', 'Asia/Tokyo'])
    expect(res.output_text).toBe('Oslo and Tokyo, both known.')
  })

  it('web_fetch refuses loopback addresses by default, and the model is told so', async () => {
    const res = await answer({
      model: 'roster-sim/messages',
      input: 'fetch it',
      tools: [{ type: 'openrouter:web_fetch' }],
    })
    const item = res.output.find((o: any) => o.type === 'openrouter:web_fetch')
    // The simulator fills a `format: uri` argument with a loopback URL.
    expect(JSON.parse(item.arguments)).toEqual({ url: 'http://127.0.0.1/' })
    expect(JSON.parse(item.output).error).toBe('refused: 127.0.0.1 is a private or loopback address')
  })

  it('a stop condition makes one last turn with tools disabled; streamed, the tool item is in the event sequence', async () => {
    await answer({
      model: 'roster-sim/chat',
      input: 'time?',
      tools: [{ type: 'openrouter:datetime' }],
      stop_server_tools_when: [{ type: 'step_count_is', step_count: 1 }],
    })
    expect((sim.stats.lastBody['/v1/chat/completions'] as any).tool_choice).toBe('none')
    const res = await post({
      model: 'roster-sim/responses',
      input: 'time?',
      stream: true,
      tools: [{ type: 'openrouter:datetime' }],
    })
    const events = sseEvents(await res.text()).events.map((e) => e.data)
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i))
    const added = events.filter((e) => e.type === 'response.output_item.added').map((e) => e.item.type)
    expect(added).toEqual(['openrouter:datetime', 'message'])
    expect(events.some((e) => e.type === 'response.function_call_arguments.delta')).toBe(false)
    expect(events.at(-1).response.output.map((o: any) => o.type)).toEqual(['openrouter:datetime', 'message'])
  })

  it('a model that never stops calling tools is held to max_tool_calls, then answers with tools off', async () => {
    const turns = () => looping.stats.requests['/v1/chat/completions'] ?? 0
    const before = turns()
    const res = await answer(
      { model: 'roster-sim/looping', input: 'loop', tools: [{ type: 'openrouter:datetime' }], max_tool_calls: 3 },
      { 'X-Service-Experimental-Metadata': 'enabled' },
    )
    // Four upstream calls, one choice of endpoint: the first attempt served.
    expect(res.service_metadata.attempt).toBe(1)
    expect(res.output.map((o: any) => o.type)).toEqual([
      'openrouter:datetime',
      'openrouter:datetime',
      'openrouter:datetime',
      'message',
    ])
    expect(turns() - before).toBe(4)
    expect((looping.stats.lastBody['/v1/chat/completions'] as any).tool_choice).toBe('none')
    // Usage adds up every turn: three calls of the tool (the simulator's arguments), then a 3-token answer.
    expect(res.usage.output_tokens).toBe(3 * countTokens(JSON.stringify({ timezone: 'sample' })) + 3)
  })

  it('stop conditions (OR) end the loop: has_tool_call after one step, max_tokens_used, max_cost', async () => {
    const run = async (stop: object[]) =>
      (
        await answer({
          model: 'roster-sim/looping',
          input: 'loop',
          tools: [{ type: 'openrouter:datetime' }],
          stop_server_tools_when: stop,
        })
      ).output.filter((o: any) => o.type === 'openrouter:datetime').length
    expect(await run([{ type: 'has_tool_call', tool_name: 'openrouter:datetime' }])).toBe(1)
    expect(
      await run([
        { type: 'step_count_is', step_count: 5 },
        { type: 'step_count_is', step_count: 2 },
      ]),
    ).toBe(2)
    expect(await run([{ type: 'max_cost', max_cost_in_dollars: 1e-12 }])).toBe(1)
    expect(await run([{ type: 'max_tokens_used', max_tokens: 1 }])).toBe(1)
  })

  it('refuses a server tool it does not run, and a function named like an offered server tool', async () => {
    const res = await post({ model: 'roster-sim/chat', input: 'x', tools: [{ type: 'openrouter:web_search' }] })
    expect(res.status).toBe(400)
    expect((await res.json()).error.message).toMatch(/openrouter:web_search/)
    const clash = await post({
      model: 'roster-sim/chat',
      input: 'x',
      tools: [{ type: 'openrouter:datetime' }, { type: 'function', name: 'datetime', parameters: {} }],
    })
    expect(clash.status).toBe(400)
  })
})

describe('debug echo and trace', () => {
  it('streams a response.debug event with the body sent upstream', async () => {
    const res = await post({
      model: 'roster-sim/chat',
      input: 'echo me',
      stream: true,
      user: 'carol',
      debug: { echo_upstream_body: true },
    })
    const events = sseEvents(await res.text()).events.map((e) => e.data)
    const debug = events.find((e) => e.type === 'response.debug')
    expect(debug.debug.echo_upstream_body).toMatchObject({
      model: 'sim',
      stream: true,
      messages: [{ role: 'user', content: 'echo me' }],
    })
    expect(JSON.stringify(debug)).not.toContain('carol')
    expect((await post({ model: 'roster-sim/chat', input: 'x', debug: { echo_upstream_body: true } })).status).toBe(400)
  })

  it('sends the trace upstream as a W3C traceparent', async () => {
    const traceId = 'a'.repeat(32)
    await answer({
      model: 'roster-sim/chat',
      input: 'x',
      trace: { trace_id: traceId, span_name: 'step', team: 'search' },
    })
    expect(sim.stats.lastHeaders['/v1/chat/completions']!.traceparent).toMatch(
      new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`),
    )
  })
})

describe('web_fetch allowed to reach a private network, on a slow page', () => {
  let page: Server
  let fetching: Simulator
  let lab: Awaited<ReturnType<typeof buildTestApp>>
  let labURL: string
  beforeAll(async () => {
    page = createServer(
      (_req, res) =>
        void setTimeout(() => res.writeHead(200, { 'content-type': 'text/plain' }).end('hello from a slow page'), 300),
    )
    await new Promise<void>((r) => page.listen(0, '127.0.0.1', r))
    const pageUrl = `http://127.0.0.1:${(page.address() as { port: number }).port}/slow`
    fetching = await startSimulator({ replyTokens: 3, sampleUrl: pageUrl })
    lab = await buildTestApp(
      env.t.db,
      { WEB_FETCH_PRIVATE_NETWORKS: 'allow', STREAM_KEEPALIVE_MS: '50' },
      { models: [simModel('roster-sim/fetching', [simEndpoint(fetching.url)])] },
    )
    labURL = `${await lab.listen({ port: 0, host: '127.0.0.1' })}/api/v1`
  })
  afterAll(async () => {
    await lab?.closeAll()
    await fetching?.close()
    await new Promise<void>((r) => page?.close(() => r()))
  })

  it('fetches the page; a stream shows the tool item at once and keeps alive with comments while it runs', async () => {
    const res = await fetch(`${labURL}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'roster-sim/fetching',
        input: 'read it',
        stream: true,
        tools: [{ type: 'openrouter:web_fetch' }],
      }),
    })
    const text = await res.text()
    expect(text).toContain(': running a server tool\n\n')
    const events = sseEvents(text).events.map((e) => e.data)
    const added = events.find((e) => e.type === 'response.output_item.added')
    expect(added.item).toMatchObject({ type: 'openrouter:web_fetch', status: 'in_progress', output: null })
    const done = events.find((e) => e.type === 'response.output_item.done' && e.item.type === 'openrouter:web_fetch')
    expect(JSON.parse(done.item.output)).toMatchObject({
      status: 200,
      content: 'hello from a slow page',
      truncated: false,
    })
    // The comment came between the item's start and its end.
    expect(text.indexOf(': running')).toBeGreaterThan(text.indexOf('"response.output_item.added"'))
    expect(text.indexOf(': running')).toBeLessThan(text.indexOf('"response.output_item.done"'))
    expect(events.at(-1).type).toBe('response.completed')
  })
})
