import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import OpenAI from 'openai'
import { OpenRouter } from '@openrouter/sdk'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import type { Catalogue, Endpoint } from '@roster/gateway'
import { useTestTenant } from '@roster/testing'
import { buildTestApp, simEndpoint, simModel, whole } from './helpers.js'

// POST /responses (non-streaming) through both official clients, against the upstream simulator.
const env = useTestTenant()
let sim: Simulator
let limited: Simulator
let app: Awaited<ReturnType<typeof buildTestApp>>
let baseURL: string

const model = (id: string, url: string, extra: Partial<Endpoint> = {}) =>
  simModel(id, [simEndpoint(url, 'openai-chat', extra)])

beforeAll(async () => {
  sim = await startSimulator({ replyTokens: 5, apiKey: 'sk-sim-secret' })
  limited = await startSimulator({ fault: '429' })
  const catalogue: Catalogue = {
    models: [
      model('roster-sim/chat', sim.url, { api_key_env: 'SIM_KEY', tiers: ['default', 'priority'] }),
      model('roster-sim/limited', limited.url),
    ],
  }
  app = await buildTestApp(env.t.db, {}, catalogue, { SIM_KEY: 'sk-sim-secret' })
  const address = await app.listen({ port: 0, host: '127.0.0.1' })
  baseURL = `${address}/api/v1`
})
afterAll(async () => {
  await app?.closeAll()
  await sim?.close()
  await limited?.close()
})

describe('POST /api/v1/responses with the openai client', () => {
  it('answers text with usage and cost', async () => {
    const client = new OpenAI({ apiKey: env.tenant.keys.user, baseURL, maxRetries: 0 })
    const res = await client.responses.create({
      model: 'roster-sim/chat',
      input: 'hello there',
      metadata: { run: 'one' },
    })
    expect(res.status).toBe('completed')
    expect(res.output_text.split(' ')).toHaveLength(5)
    expect(res.metadata).toEqual({ run: 'one' })
    expect(res.usage).toMatchObject({
      input_tokens: 2,
      output_tokens: 5,
      total_tokens: 7,
      input_tokens_details: { cached_tokens: 0 },
    })
    // Exactly: tokens times the catalogue's decimal prices, without binary noise (0.000011999999999999999).
    expect((res.usage as any).cost).toBe(0.000012)
    expect((res.usage as any).cost_details).toEqual({
      upstream_inference_cost: 0.000012,
      upstream_inference_input_cost: 0.000002,
      upstream_inference_output_cost: 0.00001,
    })
  })

  it('echoes the settings it ran with: fast as priority, a text format beside a verbosity given alone', async () => {
    const client = new OpenAI({ apiKey: env.tenant.keys.user, baseURL, maxRetries: 0 })
    const res = await client.responses.create({
      model: 'roster-sim/chat',
      input: 'hi',
      text: { verbosity: 'low' },
      service_tier: 'fast' as 'priority',
      temperature: 0.3,
    })
    expect(res.text).toEqual({ format: { type: 'text' }, verbosity: 'low' })
    expect(res.service_tier).toBe('priority')
    expect(res.temperature).toBe(0.3)
    // Left out, a setting reports the value in force, never null; the tier is the one served.
    const plain = await client.responses.create({ model: 'roster-sim/chat', input: 'hi' })
    expect(plain).toMatchObject({
      service_tier: 'default',
      temperature: 1,
      top_p: 1,
      presence_penalty: 0,
      frequency_penalty: 0,
      top_logprobs: 0,
      truncation: 'disabled',
      background: false,
      safety_identifier: null,
    })
  })

  it('returns a function call for an offered tool, with arguments valid for its schema', async () => {
    const client = new OpenAI({ apiKey: env.tenant.keys.user, baseURL, maxRetries: 0 })
    const res = await client.responses.create({
      model: 'roster-sim/chat',
      input: 'weather in Paris?',
      tools: [
        {
          type: 'function',
          name: 'get_weather',
          strict: true,
          parameters: {
            type: 'object',
            properties: { city: { type: 'string' } },
            required: ['city'],
            additionalProperties: false,
          },
        },
      ],
    })
    const call = res.output.find((o) => o.type === 'function_call') as any
    expect(call.name).toBe('get_weather')
    expect(JSON.parse(call.arguments)).toEqual({ city: 'sample' })
  })

  it('holds the model to allowed_tools: a tool not named there is not offered to it', async () => {
    const client = new OpenAI({ apiKey: env.tenant.keys.user, baseURL, maxRetries: 0 })
    const tool = (name: string) => ({
      type: 'function' as const,
      name,
      strict: false,
      parameters: { type: 'object', properties: {} },
    })
    // The simulator calls the first tool it is offered.
    const res = await client.responses.create({
      model: 'roster-sim/chat',
      input: 'do something',
      tools: [tool('forbidden'), tool('allowed')],
      tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [{ type: 'function', name: 'allowed' }] },
    })
    expect(res.output.filter((o) => o.type === 'function_call').map((o: any) => o.name)).toEqual(['allowed'])
    // The Response still lists every tool the request gave, and the choice as it was made.
    expect(res.tools.map((t: any) => t.name)).toEqual(['forbidden', 'allowed'])
    expect(res.tool_choice).toEqual({
      type: 'allowed_tools',
      mode: 'auto',
      tools: [{ type: 'function', name: 'allowed' }],
    })
  })
})

describe('POST /api/v1/responses with @openrouter/sdk', () => {
  const client = () =>
    new OpenRouter({ apiKey: env.tenant.keys.user, serverURL: baseURL, retryConfig: { strategy: 'none' } })

  it('parses as the client’s Response, every required key present', async () => {
    const res = await client().responses.send({
      responsesRequest: { model: 'roster-sim/chat', input: 'Say hi', maxOutputTokens: 32 },
    })
    expect(res).toMatchObject({ object: 'response', status: 'completed', model: 'roster-sim/chat', store: false })
    expect((res as any).outputText.length).toBeGreaterThan(0)
  })

  it('falls back to the next model on a retryable failure, and answers 429 with Retry-After when none is left', async () => {
    const res = whole(
      await client().responses.send({
        responsesRequest: { models: ['roster-sim/limited', 'roster-sim/chat'], input: 'x' },
        xOpenRouterMetadata: 'enabled',
      }),
    )
    expect(res.model).toBe('roster-sim/chat')
    expect((res as any).openrouterMetadata).toMatchObject({
      attempt: 2,
      endpoints: {
        total: 2,
        available: [
          { model: 'roster-sim/limited', selected: false },
          { model: 'roster-sim/chat', selected: true },
        ],
      },
      strategy: 'fallback',
    })
    const raw = await fetch(`${baseURL}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'roster-sim/limited', input: 'x' }),
    })
    expect(raw.status).toBe(429)
    expect(raw.headers.get('retry-after')).toBe('2')
    expect(await raw.json()).toMatchObject({ error: { code: 429, metadata: { error_type: 'rate_limit_exceeded' } } })
  })
})

describe('what goes upstream, and what is refused', () => {
  const post = (body: object) =>
    fetch(`${baseURL}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })

  it('sends the credential named by the catalogue and a keyed hash of user, never user itself', async () => {
    expect((await post({ model: 'roster-sim/chat', input: 'x', user: 'alice@example.com' })).status).toBe(200)
    const sent = sim.stats.lastBody['/v1/chat/completions'] as any
    expect(sent.user).toMatch(/^[0-9a-f]{64}$/)
    expect(JSON.stringify(sent)).not.toContain('alice')
    expect(sim.stats.lastHeaders['/v1/chat/completions']!.authorization).toBe('Bearer sk-sim-secret')
  })

  it('refuses a previous_response_id, unknown models, unknown server tools and plugins, naming them', async () => {
    // A tool kind Roster cannot offer (a provider's own) is left out with a warning (coding-agents.test.ts);
    // one of Roster's own server tools that does not exist is refused.
    const left = await post({ model: 'roster-sim/chat', input: 'x', tools: [{ type: 'web_search_preview' }] })
    expect(left.status).toBe(200)
    expect(left.headers.get('warning')).toMatch(/web_search_preview/)
    const cases: [object, number, RegExp][] = [
      [{ model: 'roster-sim/chat', input: 'x', previous_response_id: 'resp_1' }, 400, /not stored/],
      [{ model: 'nobody/none', input: 'x' }, 400, /nobody\/none/],
      [{ model: 'roster-sim/chat', input: 'x', tools: [{ type: 'openrouter:nope' }] }, 400, /openrouter:nope/],
      [{ model: 'roster-sim/chat', input: 'x', plugins: [{ id: 'moderation' }] }, 400, /moderation/],
      [
        { model: 'roster-sim/chat', input: 'x', metadata: { 'a[b]': 'c' } },
        400,
        /metadata\/a\[b\] invalid key: metadata keys may not contain brackets/,
      ],
      [
        { model: 'roster-sim/chat', input: 'x', stop: ['a', 'b', 'c', 'd', 'e'] },
        400,
        /\/stop at most 4 stop sequences/,
      ],
    ]
    for (const [body, status, message] of cases) {
      const res = await post(body)
      expect(res.status).toBe(status)
      const json = await res.json()
      expect(json.error.code).toBe(status)
      expect(json.error.message).toMatch(message)
      expect(json.error.metadata.error_type).toBe('invalid_request')
    }
    const noKey = await fetch(`${baseURL}/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"model":"roster-sim/chat","input":"x"}',
    })
    expect(noKey.status).toBe(401)
    expect((await noKey.json()).error.metadata).toEqual({ error_type: 'authentication' })
  })

  it('names the HTTP layer’s refusals by the canonical error type too', async () => {
    const send = (contentType: string, body: string) =>
      fetch(`${baseURL}/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': contentType },
        body,
      })
    const cases: [Response, number, string][] = [
      [await send('application/json', '{"model":'), 400, 'invalid_request'],
      [await send('text/plain', 'hello'), 415, 'invalid_request'],
      [
        await send(
          'application/json',
          JSON.stringify({ model: 'roster-sim/chat', input: 'x'.repeat(21 * 1024 * 1024) }),
        ),
        413,
        'payload_too_large',
      ],
    ]
    for (const [res, status, errorType] of cases) {
      expect(res.status).toBe(status)
      expect((await res.json()).error).toMatchObject({ code: status, metadata: { error_type: errorType } })
    }
  })
})
