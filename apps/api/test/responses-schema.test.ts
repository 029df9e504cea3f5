import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import { simulatorCatalogue, type Catalogue } from '@roster/gateway'
import { useTestTenant } from '@roster/testing'
import { buildTestApp, SIM_PATHS as PATHS, SIM_PROTOCOLS, simEndpoint, simModel, sseEvents } from './helpers.js'
import { invalidEvents, responseErrors } from './open-responses.js'

// Every Response object and every streamed event Roster produces, validated against the published
// Open Responses schema (open-responses.ts): each simulator protocol, streamed and not, over the
// kinds of output and ending there are.
const env = useTestTenant()
let sim: Simulator
let cut: Simulator
let app: Awaited<ReturnType<typeof buildTestApp>>

const PROTOCOLS = SIM_PROTOCOLS

beforeAll(async () => {
  sim = await startSimulator({ replyTokens: 6 })
  cut = await startSimulator({ replyTokens: 20, tokensPerSecond: 200, fault: 'cut' })
  const catalogue: Catalogue = {
    models: [
      ...PROTOCOLS.map((p) => simModel(`roster-sim/${PATHS[p]}`, [simEndpoint(sim.url, p)])),
      ...PROTOCOLS.map((p) => simModel(`roster-sim/cut-${PATHS[p]}`, [simEndpoint(cut.url, p)])),
    ],
  }
  app = await buildTestApp(env.t.db, {}, catalogue)
})
afterAll(async () => {
  await app?.closeAll()
  await Promise.all([sim, cut].map((s) => s?.close()))
})

const weather = {
  type: 'function',
  name: 'get_weather',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
}

/** Requests that between them make every kind of output item and ending Roster has. */
const CASES: Record<string, Record<string, unknown>> = {
  text: { input: 'tell me something' },
  'every setting echoed': {
    input: [{ role: 'user', content: 'hi' }],
    instructions: 'be brief',
    temperature: 0.2,
    top_p: 0.9,
    presence_penalty: 0.1,
    frequency_penalty: 0.1,
    top_logprobs: 2,
    truncation: 'auto',
    service_tier: 'priority',
    metadata: { run: 'schema' },
    safety_identifier: 'user-1',
    prompt_cache_key: 'k1',
    max_output_tokens: 400,
    max_tool_calls: 5,
    parallel_tool_calls: false,
    store: false,
    background: false,
    text: { verbosity: 'max' },
    reasoning: { effort: 'minimal' },
  },
  'log probabilities asked for': { input: 'hello there', include: ['message.output_text.logprobs'], top_logprobs: 3 },
  'reasoning and a function call': {
    input: 'weather?',
    reasoning: { effort: 'max', summary: 'auto' },
    tools: [weather],
    tool_choice: 'auto',
  },
  'a function tool without a description or strict': {
    input: 'weather?',
    tools: [{ type: 'function', name: 'f', parameters: null }],
    tool_choice: { type: 'function', name: 'f' },
  },
  'a function result sent back': {
    input: [
      { role: 'user', content: 'weather in Paris?' },
      { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
      { type: 'function_call_output', call_id: 'call_1', output: '{"temp":18}' },
    ],
    tools: [weather],
    tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [{ type: 'function', name: 'get_weather' }] },
  },
  'a server tool': { input: 'what time is it?', tools: [{ type: 'openrouter:datetime' }] },
  'an image': {
    input: [
      {
        role: 'user',
        content: [
          { type: 'input_text', text: 'what is this?' },
          { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'auto' },
        ],
      },
    ],
  },
  'text.format json_schema': {
    input: 'a city as JSON',
    text: {
      format: {
        type: 'json_schema',
        name: 'city',
        schema: { type: 'object', properties: { name: { type: 'string' } } },
        strict: true,
      },
    },
  },
  'text.format json_object': { input: 'JSON please', text: { format: { type: 'json_object' } } },
  'incomplete (max_output_tokens)': { input: 'a long story', max_output_tokens: 3 },
}

async function post(body: object, headers: Record<string, string> = {}) {
  return app.inject({
    method: 'POST',
    url: '/api/v1/responses',
    headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json', ...headers },
    payload: body,
  })
}

describe('every Response is a valid Open Responses ResponseResource', () => {
  for (const protocol of PROTOCOLS) {
    for (const [name, body] of Object.entries(CASES)) {
      it(`${protocol}: ${name}`, async () => {
        const res = await post({ model: `roster-sim/${PATHS[protocol]}`, ...body })
        expect(res.statusCode, res.body).toBe(200)
        expect(responseErrors(res.json())).toEqual([])
      })
    }
  }

  it("with the output text's log probabilities from the endpoints that give them", async () => {
    for (const protocol of ['openai-chat', 'openai-responses'] as const) {
      const body = (
        await post({
          model: `roster-sim/${PATHS[protocol]}`,
          input: 'hello there',
          include: ['message.output_text.logprobs'],
          top_logprobs: 3,
        })
      ).json()
      const part = body.output[0].content[0]
      expect(part.logprobs.map((l: { token: string }) => l.token).join(''), protocol).toBe(part.text)
      expect(
        part.logprobs.every((l: { top_logprobs: unknown[] }) => l.top_logprobs.length === 3),
        protocol,
      ).toBe(true)
      const { events } = sseEvents(
        (
          await post({
            model: `roster-sim/${PATHS[protocol]}`,
            input: 'hello there',
            stream: true,
            include: ['message.output_text.logprobs'],
            top_logprobs: 3,
          })
        ).body,
      )
      const deltas = events.filter((e) => e.data.type === 'response.output_text.delta').flatMap((e) => e.data.logprobs)
      expect(deltas, protocol).toEqual(part.logprobs)
      expect(events.find((e) => e.data.type === 'response.output_text.done')!.data.logprobs, protocol).toEqual(
        part.logprobs,
      )
    }
  })

  it('with the routing metadata the opt-in adds (service_metadata and openrouter_metadata)', async () => {
    const res = await post({ model: 'roster-sim/chat', input: 'hi' }, { 'x-openrouter-metadata': 'enabled' })
    const body = res.json()
    expect(body.service_metadata).toBeDefined()
    expect(body.openrouter_metadata).toBeDefined()
    expect(responseErrors(body)).toEqual([])
  })
})

describe('every streamed event is a valid Open Responses streaming event', () => {
  for (const protocol of PROTOCOLS) {
    for (const [name, body] of Object.entries(CASES)) {
      it(`${protocol}: ${name}`, async () => {
        const res = await post({ model: `roster-sim/${PATHS[protocol]}`, stream: true, ...body })
        expect(res.statusCode, res.body).toBe(200)
        const { events, done } = sseEvents(res.body)
        expect(done).toBe(true)
        expect(events.length).toBeGreaterThan(3)
        expect(invalidEvents(events.map((e) => e.data))).toEqual([])
      })
    }

    it(`${protocol}: a stream that fails mid-way (error, then response.failed)`, async () => {
      const res = await post({ model: `roster-sim/cut-${PATHS[protocol]}`, stream: true, input: 'go on' })
      const { events, done } = sseEvents(res.body)
      expect(done).toBe(true)
      const types = events.map((e) => e.data.type)
      expect(types.slice(-2)).toEqual(['error', 'response.failed'])
      expect(invalidEvents(events.map((e) => e.data))).toEqual([])
    })
  }

  it('with routing metadata and the debug echo of the upstream body', async () => {
    const res = await post(
      { model: 'roster-sim/messages', stream: true, input: 'hi', debug: { echo_upstream_body: true } },
      { 'x-openrouter-metadata': 'enabled' },
    )
    const { events } = sseEvents(res.body)
    expect(events.map((e) => e.data.type)).toContain('response.debug')
    expect(events.at(-1)!.data.response.openrouter_metadata).toBeDefined()
    expect(invalidEvents(events.map((e) => e.data))).toEqual([])
  })
})

describe('the demo catalogue npm start serves', () => {
  it('takes image input on each simulator model, as the simulator does', async () => {
    const demo = await buildTestApp(env.t.db, {}, simulatorCatalogue(sim.url))
    try {
      for (const model of ['roster-sim/chat', 'roster-sim/responses', 'roster-sim/messages']) {
        const res = await demo.inject({
          method: 'POST',
          url: '/api/v1/responses',
          headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' },
          payload: { model, input: CASES['an image']!.input },
        })
        expect(res.statusCode, `${model}: ${res.body}`).toBe(200)
        expect(responseErrors(res.json())).toEqual([])
      }
    } finally {
      await demo.closeAll()
    }
  })
})
