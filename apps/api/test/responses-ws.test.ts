import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import OpenAI from 'openai'
import { ResponsesWS } from 'openai/resources/responses/ws'
import { WebSocket } from 'ws'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import { useTestTenant, waitFor } from '@roster/testing'
import { buildTestApp, simEndpoint, simModel, sseEvents } from './helpers.js'
import { invalidEvents, schemaErrors } from './open-responses.js'
import { RESPONSES_BODY_LIMIT } from '../src/routes/responses.js'
import { websocketError } from '../src/app.js'

// The WebSocket transport of /responses: one connection, many requests, each answered with the
// same events as the SSE stream, in order, every event valid under the published schemas; nothing
// kept between requests but the last completed response, which the next may continue.
const env = useTestTenant()
let sim: Simulator
let slow: Simulator
let app: Awaited<ReturnType<typeof buildTestApp>>
let baseURL: string

beforeAll(async () => {
  sim = await startSimulator({ replyTokens: 6 })
  slow = await startSimulator({ replyTokens: 200, tokensPerSecond: 20 })
  app = await buildTestApp(
    env.t.db,
    {},
    {
      models: [
        simModel('roster-sim/chat', [simEndpoint(sim.url)]),
        simModel('roster-sim/slow', [simEndpoint(slow.url)]),
      ],
    },
  )
  baseURL = `${await app.listen({ port: 0, host: '127.0.0.1' })}/api/v1`
})
afterAll(async () => {
  await app?.closeAll()
  await Promise.all([sim?.close(), slow?.close()])
})

const wsUrl = () => `${baseURL.replace(/^http/, 'ws')}/responses`

/** A raw connection that keeps every message it receives. */
async function connect(key = env.tenant.keys.user, headers: Record<string, string> = {}) {
  const socket = new WebSocket(wsUrl(), { headers: { authorization: `Bearer ${key}`, ...headers } })
  const received: any[] = []
  socket.on('message', (data) => received.push(JSON.parse(String(data))))
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve())
    socket.once('error', reject)
  })
  return { socket, received, send: (m: object | string) => socket.send(typeof m === 'string' ? m : JSON.stringify(m)) }
}
const ended = (events: any[], n: number) => () =>
  events.filter((e) => ['response.completed', 'response.failed', 'response.incomplete', 'error'].includes(e.type))
    .length >= n
/** One response's events with what differs between two runs of it (ids, times) taken out. */
const shape = (events: any[]) => events.map((e) => `${e.type}:${e.delta ?? e.text ?? ''}`)

describe('/responses over WebSocket', () => {
  it('answers many requests on one connection, each with the SSE stream’s events in order, through the openai client', async () => {
    const openai = new OpenAI({ apiKey: env.tenant.keys.user, baseURL, maxRetries: 0 })
    const ws = new ResponsesWS(openai)
    const events: any[] = []
    const errors: unknown[] = []
    ws.on('event', (e) => events.push(e))
    ws.on('error', (e) => errors.push(e))
    ws.send({ type: 'response.create', model: 'roster-sim/chat', input: 'hello' })
    ws.send({ type: 'response.create', model: 'roster-sim/chat', input: 'hello again' })
    await waitFor(ended(events, 2), { what: 'two responses' })
    ws.close()
    expect(errors).toEqual([])
    expect(invalidEvents(events)).toEqual([])
    const second = events.findIndex((e, i) => i > 0 && e.type === 'response.created')
    const [a, b] = [events.slice(0, second), events.slice(second)]
    for (const one of [a, b]) {
      expect(one[0].type).toBe('response.created')
      expect(one.at(-1).type).toBe('response.completed')
      expect(one.map((e) => e.sequence_number)).toEqual(one.map((_, i) => i))
    }
    expect(a[0].response.id).not.toBe(b[0].response.id)
    // The same request over SSE: the same events, in the same order.
    const sse = sseEvents(
      await (
        await fetch(`${baseURL}/responses`, {
          method: 'POST',
          headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'roster-sim/chat', input: 'hello', stream: true }),
        })
      ).text(),
    )
    expect(shape(a)).toEqual(shape(sse.events.map((e) => e.data)))
  })

  it('takes the routing-metadata opt-in from the upgrade request, as POST /responses takes it from its headers', async () => {
    const c = await connect(env.tenant.keys.user, { 'x-openrouter-metadata': 'enabled' })
    c.send({ type: 'response.create', model: 'roster-sim/chat', input: 'where did this run?' })
    await waitFor(ended(c.received, 1), { what: 'the response' })
    expect(invalidEvents(c.received)).toEqual([])
    expect(c.received.at(-1).response.openrouter_metadata).toMatchObject({ attempt: 1, strategy: expect.any(String) })
    c.socket.close()
  })

  it('answers a previous_response_id with previous_response_not_found, and stays usable', async () => {
    const c = await connect()
    c.send({ type: 'response.create', model: 'roster-sim/chat', input: 'go on', previous_response_id: 'resp_123' })
    await waitFor(ended(c.received, 1), { what: 'the error event' })
    expect(c.received[0]).toMatchObject({
      type: 'error',
      status: 404,
      error: { code: 'previous_response_not_found', param: 'previous_response_id' },
    })
    expect(schemaErrors('WebSocketErrorEvent', c.received[0])).toEqual([])
    c.send({
      type: 'response.create',
      model: 'roster-sim/chat',
      input: 'the whole history instead',
      previous_response_id: null,
    })
    await waitFor(ended(c.received, 2), { what: 'the next response' })
    expect(c.received.at(-1).type).toBe('response.completed')
    c.socket.close()
  })

  it('continues the last response the connection completed by its id with only the new input, and nothing else', async () => {
    const c = await connect()
    c.send({ type: 'response.create', model: 'roster-sim/chat', input: 'first question', store: false })
    await waitFor(ended(c.received, 1), { what: 'the first response' })
    const first = c.received.at(-1).response
    expect(first.status).toBe('completed')
    const answer = first.output.find((o: any) => o.type === 'message').content[0].text
    c.send({
      type: 'response.create',
      model: 'roster-sim/chat',
      store: false,
      previous_response_id: first.id,
      input: [{ type: 'message', role: 'user', content: 'second question' }],
    })
    await waitFor(ended(c.received, 2), { what: 'the continuation' })
    expect(c.received.at(-1).type).toBe('response.completed')
    expect(invalidEvents(c.received)).toEqual([])
    // The provider was given the conversation: the first question, its answer, the new one.
    const sent = JSON.stringify(sim.stats.lastBody['/v1/chat/completions'])
    const at = (s: string) => sent.indexOf(s)
    expect(at('first question')).toBeGreaterThan(-1)
    expect(at(answer)).toBeGreaterThan(at('first question'))
    expect(at('second question')).toBeGreaterThan(at(answer))
    // A chain: the continuation's own id continues it; the first one, no longer the last, does not.
    const second = c.received.at(-1).response.id
    c.send({ type: 'response.create', model: 'roster-sim/chat', previous_response_id: first.id, input: 'again' })
    await waitFor(ended(c.received, 3), { what: 'the refusal' })
    expect(c.received.at(-1)).toMatchObject({ type: 'error', error: { code: 'previous_response_not_found' } })
    c.send({ type: 'response.create', model: 'roster-sim/chat', previous_response_id: second, input: 'third question' })
    await waitFor(ended(c.received, 4), { what: 'the third response' })
    expect(c.received.at(-1).type).toBe('response.completed')
    expect(JSON.stringify(sim.stats.lastBody['/v1/chat/completions'])).toContain('second question')
    // What is not an id, or an input of no type the request takes, is refused as such (and the held response stays).
    const held = c.received.at(-1).response.id
    c.send({ type: 'response.create', model: 'roster-sim/chat', previous_response_id: 7, input: 'x' })
    await waitFor(ended(c.received, 5), { what: 'the refusal of a number' })
    expect(c.received.at(-1)).toMatchObject({ type: 'error', status: 400, error: { param: 'previous_response_id' } })
    c.send({ type: 'response.create', model: 'roster-sim/chat', previous_response_id: held, input: 42 })
    await waitFor(ended(c.received, 6), { what: 'the refusal of the input' })
    expect(c.received.at(-1)).toMatchObject({ type: 'error', status: 400, error: { code: 'invalid_request' } })
    // A failed request evicts what was held; another connection never had it.
    const third = held
    c.send({ type: 'response.create', model: 'roster-sim/nope', previous_response_id: third, input: 'x' })
    await waitFor(ended(c.received, 7), { what: 'the failure' })
    c.send({ type: 'response.create', model: 'roster-sim/chat', previous_response_id: third, input: 'y' })
    await waitFor(ended(c.received, 8), { what: 'the refusal after the failure' })
    expect(c.received.at(-1)).toMatchObject({ type: 'error', error: { code: 'previous_response_not_found' } })
    const other = await connect()
    other.send({ type: 'response.create', model: 'roster-sim/chat', previous_response_id: second, input: 'z' })
    await waitFor(ended(other.received, 1), { what: "the other connection's refusal" })
    expect(other.received[0]).toMatchObject({ type: 'error', error: { code: 'previous_response_not_found' } })
    c.socket.close()
    other.socket.close()
  })

  it('refuses bad messages with the schema’s error event, each on its own, and goes on', async () => {
    const c = await connect()
    const bad: (object | string)[] = [
      'not json',
      '[1]',
      { type: 'session.update' },
      { type: 'response.create', model: 'roster-sim/chat', input: 'x', stream: true },
      { type: 'response.create', model: 'roster-sim/chat', input: 'x', background: false },
      { type: 'response.create', input: 'no model' },
      { type: 'response.create', model: 'nobody/none', input: 'x' },
      {
        type: 'response.create',
        model: 'roster-sim/chat',
        input: 'x',
        deep: JSON.parse('['.repeat(100) + ']'.repeat(100)),
      },
      '{"type":"response.create","model":"roster-sim/chat","input":"x","__proto__":{"polluted":true}}',
    ]
    for (const m of bad) c.send(m)
    c.socket.send(Buffer.from([1, 2, 3]), { binary: true })
    c.send({ type: 'response.create', model: 'roster-sim/chat', input: 'still here' })
    await waitFor(ended(c.received, bad.length + 2), { what: 'every answer' })
    const errors = c.received.filter((e) => e.type === 'error')
    expect(errors).toHaveLength(bad.length + 1)
    for (const e of errors) expect(schemaErrors('WebSocketErrorEvent', e), JSON.stringify(e)).toEqual([])
    expect(errors.map((e) => e.status)).toEqual([400, 400, 400, 400, 400, 400, 400, 400, 400, 400])
    expect(errors[3].error.param).toBe('stream')
    expect(errors[6].error.message).toMatch(/no model named nobody\/none/)
    expect(c.received.at(-1).type).toBe('response.completed')
    c.socket.close()
  })

  it('keeps at most 16 requests waiting on a connection, refusing the rest with 429', async () => {
    const c = await connect()
    for (let i = 0; i < 20; i++) c.send({ type: 'response.create', model: 'roster-sim/chat', input: `burst ${i}` })
    await waitFor(
      () =>
        c.received.filter((e) => e.type === 'response.completed').length +
          c.received.filter((e) => e.type === 'error').length >=
        20,
      { timeoutMs: 20_000, what: 'every request answered or refused' },
    )
    const refused = c.received.filter((e) => e.type === 'error')
    expect(refused.length).toBeGreaterThan(0)
    for (const e of refused) expect(e).toMatchObject({ status: 429, error: { code: 'rate_limit_exceeded' } })
    expect(c.received.filter((e) => e.type === 'response.completed').length).toBe(20 - refused.length)
    c.socket.close()
  })

  it('closes a connection whose message is over the body limit with 1009, and serves the next connection', async () => {
    const c = await connect()
    const closed = new Promise<number>((resolve) => c.socket.once('close', resolve))
    c.socket.on('error', () => {})
    c.send({ type: 'response.create', model: 'roster-sim/chat', input: 'x'.repeat(RESPONSES_BODY_LIMIT + (8 << 20)) })
    expect(await closed).toBe(1009)
    const next = await connect()
    next.send({ type: 'response.create', model: 'roster-sim/chat', input: 'after the big one' })
    await waitFor(ended(next.received, 1), { what: 'the response' })
    expect(next.received.at(-1).type).toBe('response.completed')
    next.socket.close()
    // In one process the client's bytes are all sent before the close, so the status above read
    // 1009 with @fastify/websocket's own handler too; what differs is this: a protocol error of the
    // client's is logged as such and left to ws to close, anything else is the server's and ends at once.
    const seen: string[] = []
    const request = {
      log: {
        info: (_: object, msg: string) => seen.push(`info: ${msg}`),
        error: (_: object, msg: string) => seen.push(`error: ${msg}`),
      },
    }
    const socket = { terminate: () => seen.push('terminated') }
    websocketError(
      Object.assign(new RangeError('Max payload size exceeded'), { code: 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH' }),
      socket,
      request,
    )
    websocketError(new Error('boom'), socket, request)
    expect(seen).toEqual([
      'info: websocket client broke the protocol; closing',
      'error: websocket connection failed',
      'terminated',
    ])
  })

  it('refuses a connection without a valid key, and cancels the upstream call when the client goes away', async () => {
    await expect(connect('sk-nope')).rejects.toThrow(/401/)
    const plain = await fetch(`${baseURL}/responses`, { headers: { authorization: `Bearer ${env.tenant.keys.user}` } })
    expect(plain.status).toBe(426)
    expect(((await plain.json()) as any).error.message).toMatch(/WebSocket transport/)
    const c = await connect()
    c.send({ type: 'response.create', model: 'roster-sim/slow', input: 'a long one' })
    await waitFor(() => c.received.some((e) => e.type === 'response.output_text.delta'), { what: 'the first delta' })
    const before = slow.stats.cancelled
    c.socket.terminate()
    await waitFor(() => slow.stats.cancelled > before, {
      timeoutMs: 3_000,
      what: 'the upstream stream to be cancelled',
    })
  })
})
