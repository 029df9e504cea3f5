import { createServer, request as httpRequest, type Server } from 'node:http'
import type { Socket } from 'node:net'
import { once } from 'node:events'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import OpenAI from 'openai'
import { OpenRouter } from '@openrouter/sdk'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import type { Catalogue, Protocol } from '@roster/gateway'
import { useTestTenant, waitFor } from '@roster/testing'
import { buildTestApp, leaveMidStream, SIM_PATHS as PATHS, simEndpoint, simModel, sseEvents } from './helpers.js'

// Streaming POST /responses over each provider protocol, through both official clients and raw
// SSE, against the upstream simulator; faults, fallbacks and a client that goes away.
const env = useTestTenant()
let sim: Simulator
let slow: Simulator
let cut: Simulator
let limited: Simulator
let cutEarly: Simulator
let late: Simulator
let truncating: Simulator
// A provider whose stream is not JSON (the simulator always speaks correctly); counts open streams.
let garbage: Server
let garbageOpen = 0
// A provider whose whole reply arrives at once: each event its own HTTP chunk, all in one write.
let burst: Server
const BURST_TOKENS = 12
let app: Awaited<ReturnType<typeof buildTestApp>>
let baseURL: string

const model = (id: string, url: string, protocol: Protocol = 'openai-chat') =>
  simModel(id, [simEndpoint(url, protocol)])

beforeAll(async () => {
  sim = await startSimulator({ replyTokens: 6 })
  slow = await startSimulator({ replyTokens: 200, tokensPerSecond: 20 })
  cut = await startSimulator({ replyTokens: 20, tokensPerSecond: 200, fault: 'cut' })
  limited = await startSimulator({ fault: '429' })
  cutEarly = await startSimulator({ fault: 'cut' })
  late = await startSimulator({ latencyMs: 3_000 })
  truncating = await startSimulator({ replyTokens: 20, tokensPerSecond: 200, fault: 'truncate' })
  garbage = createServer((_req, res) => {
    garbageOpen++
    res.once('close', () => garbageOpen--)
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    res.write('data: {this is not json\n\n')
  })
  garbage.listen(0, '127.0.0.1')
  await once(garbage, 'listening')
  burst = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      const event = (chunk: object) =>
        `data: ${JSON.stringify({ id: 'burst', object: 'chat.completion.chunk', ...chunk })}\n\n`
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.cork()
      // Under /bom the stream starts with a byte-order mark, which is not part of the first event.
      if (req.url!.startsWith('/bom/')) res.write('\uFEFF')
      for (let i = 0; i < BURST_TOKENS; i++) res.write(event({ choices: [{ index: 0, delta: { content: `w${i} ` } }] }))
      res.write(
        event({
          choices: [{ index: 0, delta: {}, finish_reason: 'stop' }],
          usage: { prompt_tokens: 3, completion_tokens: BURST_TOKENS, total_tokens: 3 + BURST_TOKENS },
        }),
      )
      res.write('data: [DONE]\n\n')
      res.end()
    })
  })
  burst.listen(0, '127.0.0.1')
  await once(burst, 'listening')
  const burstUrl = `http://127.0.0.1:${(burst.address() as { port: number }).port}`
  const garbageUrl = `http://127.0.0.1:${(garbage.address() as { port: number }).port}/v1`
  const catalogue: Catalogue = {
    models: [
      ...(Object.keys(PATHS) as Protocol[]).map((p) => model(`roster-sim/${PATHS[p]}`, sim.url, p)),
      model('roster-sim/slow', slow.url),
      model('roster-sim/cut', cut.url),
      model('roster-sim/limited', limited.url),
      model('roster-sim/cut-early', cutEarly.url),
      model('roster-sim/late', late.url),
      model('roster-sim/truncating', truncating.url),
      model('test/garbage', garbageUrl),
      model('test/burst', burstUrl),
      model('test/bom', `${burstUrl}/bom`),
    ],
  }
  app = await buildTestApp(env.t.db, {}, catalogue)
  baseURL = `${await app.listen({ port: 0, host: '127.0.0.1' })}/api/v1`
})
afterAll(async () => {
  await app?.closeAll()
  await Promise.all([sim, slow, cut, limited, cutEarly, late, truncating].map((s) => s?.close()))
  garbage?.closeAllConnections()
  garbage?.close()
  burst?.close()
})

/** Raw SSE: each event's `event:` name and parsed `data:`, and whether it ended with [DONE]. */
async function rawStream(body: object, headers: Record<string, string> = {}) {
  const res = await fetch(`${baseURL}/responses`, {
    method: 'POST',
    headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ stream: true, ...body }),
  })
  const text = await res.text()
  if (!res.headers.get('content-type')?.startsWith('text/event-stream')) return { res, events: [], done: false, text }
  return { res, ...sseEvents(text), text }
}

const types = (events: { data: any }[]) => events.map((e) => e.data.type)

describe('streaming, event by event', () => {
  for (const protocol of Object.keys(PATHS) as Protocol[]) {
    it(`translates ${protocol} into Open Responses events: lifecycle, sequence, [DONE]`, async () => {
      const { res, events, done } = await rawStream({
        model: `roster-sim/${PATHS[protocol]}`,
        input: 'tell me something',
      })
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/)
      expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
      expect(done).toBe(true)
      expect(events.map((e) => e.data.sequence_number)).toEqual(events.map((_, i) => i))
      for (const e of events) expect(e.name).toBe(e.data.type)
      const t = types(events)
      expect(t.slice(0, 4)).toEqual([
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.content_part.added',
      ])
      expect(t.slice(-4)).toEqual([
        'response.output_text.done',
        'response.content_part.done',
        'response.output_item.done',
        'response.completed',
      ])
      const deltas = events.filter((e) => e.data.type === 'response.output_text.delta')
      expect(deltas).toHaveLength(6)
      for (const d of deltas) expect(d.data.logprobs).toEqual([])
      const created = events[0]!.data.response
      expect(created).toMatchObject({ status: 'in_progress', completed_at: null, output: [] })
      const final = events.at(-1)!.data.response
      expect(final.status).toBe('completed')
      expect(final.output_text).toBe(deltas.map((d) => d.data.delta).join(''))
      expect(final.output[0].content[0].text).toBe(final.output_text)
      expect(final.usage).toMatchObject({
        output_tokens: 6,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens_details: { reasoning_tokens: 0 },
      })
      expect(final.usage.cost).toBeGreaterThan(0)
    })

    it(`streams ${protocol} function calls with argument deltas, and reasoning`, async () => {
      const { events } = await rawStream({
        model: `roster-sim/${PATHS[protocol]}`,
        input: 'weather?',
        reasoning: { effort: 'low' },
        tools: [
          {
            type: 'function',
            name: 'get_weather',
            parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
          },
        ],
      })
      const t = types(events)
      expect(t).toContain('response.reasoning_summary_text.delta')
      expect(t).toContain('response.function_call_arguments.delta')
      const done = events.find((e) => e.data.type === 'response.function_call_arguments.done')!.data
      expect(done.name).toBe('get_weather')
      expect(JSON.parse(done.arguments)).toEqual({ city: 'sample' })
      const args = events
        .filter((e) => e.data.type === 'response.function_call_arguments.delta')
        .map((e) => e.data.delta)
        .join('')
      expect(args).toBe(done.arguments)
      const final = events.at(-1)!.data.response
      expect(final.output.map((o: any) => o.type)).toEqual(['reasoning', 'function_call'])
      expect(final.output[0].summary[0].text.length).toBeGreaterThan(0)
      // Each protocol reports them its own way (Anthropic as output_tokens_details.thinking_tokens).
      expect(final.usage.output_tokens_details.reasoning_tokens).toBe(8)
    })
  }
})

describe('writes to the client', () => {
  it('events that arrive together leave together: a burst costs a few writes, not one per event', async () => {
    // Counts the writes Roster's side of a new connection makes (each one a system call).
    let writes = 0
    app.server.once(
      'connection',
      (socket: Socket & { _write: (...args: unknown[]) => unknown; _writev: (...args: unknown[]) => unknown }) => {
        const { _write: write, _writev: writev } = socket
        socket._write = function (this: Socket, ...args: unknown[]) {
          writes++
          return write.apply(this, args)
        }
        socket._writev = function (this: Socket, ...args: unknown[]) {
          writes++
          return writev.apply(this, args)
        }
      },
    )
    const body = JSON.stringify({ model: 'test/burst', input: 'all at once', stream: true })
    const text = await new Promise<string>((resolve, reject) => {
      const req = httpRequest(
        `${baseURL}/responses`,
        {
          method: 'POST',
          agent: false,
          headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' },
        },
        (res) => {
          let all = ''
          res.setEncoding('utf8')
          res.on('data', (c: string) => (all += c))
          res.on('end', () => resolve(all))
        },
      )
      req.on('error', reject)
      req.end(body)
    })
    const { events, done } = sseEvents(text)
    expect(done).toBe(true)
    const deltas = events.filter((e) => e.data.type === 'response.output_text.delta').map((e) => e.data.delta)
    expect(deltas).toEqual(Array.from({ length: BURST_TOKENS }, (_, i) => `w${i} `))
    expect(events.at(-1)!.data.response.status).toBe('completed')
    // The first event at once; the rest of the burst; the end. One write per event would be 12+.
    expect(writes).toBeGreaterThan(0)
    expect(writes).toBeLessThanOrEqual(3)
  })

  it('a byte-order mark before the first upstream event is dropped, not read as part of it', async () => {
    const { events, done } = await rawStream({ model: 'test/bom', input: 'bom' })
    expect(done).toBe(true)
    const deltas = events.filter((e) => e.data.type === 'response.output_text.delta').map((e) => e.data.delta)
    expect(deltas[0]).toBe('w0 ')
    expect(deltas).toHaveLength(BURST_TOKENS)
  })
})

describe('the official clients, streaming', () => {
  it('openai: responses.stream and create({stream:true}) give the text and the final response', async () => {
    const client = new OpenAI({ apiKey: env.tenant.keys.user, baseURL, maxRetries: 0 })
    const stream = client.responses.stream({ model: 'roster-sim/messages', input: 'hello' })
    let text = ''
    stream.on('response.output_text.delta', (e) => (text += e.delta))
    const final = await stream.finalResponse()
    expect(final.output_text).toBe(text)
    expect(text.split(' ')).toHaveLength(6)

    const seen: string[] = []
    for await (const event of await client.responses.create({
      model: 'roster-sim/responses',
      input: 'hello',
      stream: true,
    }))
      seen.push(event.type)
    expect(seen[0]).toBe('response.created')
    expect(seen.at(-1)).toBe('response.completed')
  })

  it('@openrouter/sdk: responses.send with stream parses every event', async () => {
    const client = new OpenRouter({
      apiKey: env.tenant.keys.user,
      serverURL: baseURL,
      retryConfig: { strategy: 'none' },
    })
    const stream = await client.responses.send({
      responsesRequest: { model: 'roster-sim/chat', input: 'hello', stream: true },
    })
    const seen: any[] = []
    for await (const event of stream as AsyncIterable<any>) seen.push(event)
    expect(seen.map((e) => e.type)).toContain('response.output_text.delta')
    expect(seen.every((e) => typeof e.type === 'string' && typeof e.sequenceNumber === 'number')).toBe(true)
    expect(seen.at(-1).type).toBe('response.completed')
    expect(seen.at(-1).response.outputText.length).toBeGreaterThan(0)
  })
})

describe('failures while streaming', () => {
  it('a stream cut upstream ends with an error event, then response.failed, then [DONE]', async () => {
    const { res, events, done } = await rawStream({ model: 'roster-sim/cut', input: 'x' })
    expect(res.status).toBe(200)
    expect(done).toBe(true)
    const t = types(events)
    expect(t.slice(-2)).toEqual(['error', 'response.failed'])
    expect(events.at(-2)!.data).toMatchObject({ code: 'provider_unavailable', param: null })
    expect(events.at(-1)!.data.response).toMatchObject({ status: 'failed', error: { code: 'provider_unavailable' } })
  })

  it('a stream that ends cleanly but unfinished is a failure too, not a short success', async () => {
    const { events, done } = await rawStream({ model: 'roster-sim/truncating', input: 'x' })
    expect(done).toBe(true)
    expect(types(events).slice(-2)).toEqual(['error', 'response.failed'])
    expect(events.at(-2)!.data.message).toMatch(/ended the stream before the reply was finished/)
  })

  it('moves on to the next model before the first byte, and answers an HTTP error when none is left', async () => {
    const ok = await rawStream({ models: ['roster-sim/limited', 'roster-sim/chat'], input: 'x' })
    expect(ok.events.at(-1)!.data.response.model).toBe('roster-sim/chat')
    // A stream that breaks before its first event has shown nothing either: the next model takes over.
    const early = await rawStream({ models: ['roster-sim/cut-early', 'roster-sim/chat'], input: 'x' })
    expect(early.events.at(-1)!.data.response).toMatchObject({ model: 'roster-sim/chat', status: 'completed' })
    const failed = await rawStream({ model: 'roster-sim/limited', input: 'x' })
    expect(failed.res.status).toBe(429)
    expect(failed.res.headers.get('retry-after')).toBe('2')
    expect(JSON.parse(failed.text)).toMatchObject({
      error: { code: 429, metadata: { error_type: 'rate_limit_exceeded' } },
    })
  })

  it('a provider event that is not JSON fails that endpoint: the next one serves, or a 502 names it', async () => {
    const next = await rawStream({ models: ['test/garbage', 'roster-sim/chat'], input: 'x' })
    expect(next.events.at(-1)!.data.response).toMatchObject({ model: 'roster-sim/chat', status: 'completed' })
    const alone = await rawStream({ model: 'test/garbage', input: 'x' })
    expect(alone.res.status).toBe(502)
    expect(JSON.parse(alone.text).error.message).toMatch(/sent an event that is not JSON/)
    // The provider's stream never ends by itself: Roster dropped it.
    await waitFor(() => garbageOpen === 0)
  })

  it('a client that goes away cancels the upstream request', async () => {
    await leaveMidStream(
      `${baseURL}/responses`,
      {
        headers: { authorization: `Bearer ${env.tenant.keys.user}` },
        body: { model: 'roster-sim/slow', input: 'a long one', stream: true },
      },
      'response.output_text.delta',
      slow,
    )
  })

  it('a client that goes away cancels a whole-reply request too, and a stream before its first event', async () => {
    /** Sends a request to the slow-to-start model, and goes away once it has reached upstream. */
    const abandon = async (body: object) => {
      const seen = late.stats.requests['/v1/chat/completions'] ?? 0
      const abort = new AbortController()
      const pending = fetch(`${baseURL}/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'roster-sim/late', input: 'slow to start', ...body }),
        signal: abort.signal,
      }).catch((err: Error) => err)
      await waitFor(() => (late.stats.requests['/v1/chat/completions'] ?? 0) > seen, { what: 'the upstream request' })
      abort.abort()
      expect(await pending).toBeInstanceOf(Error)
    }
    await abandon({})
    await waitFor(() => late.stats.cancelled === 1, { timeoutMs: 2_000, what: 'the upstream request to be cancelled' })
    // Before a stream's first event nothing was sent yet; the upstream call ends all the same.
    await abandon({ stream: true })
    await waitFor(() => late.stats.cancelled === 2, {
      timeoutMs: 2_000,
      what: 'the streamed upstream request to be cancelled',
    })
  })

  it('streams each upstream token as it arrives, not buffered', async () => {
    const res = await fetch(`${baseURL}/responses`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${env.tenant.keys.user}`,
        'content-type': 'application/json',
        'x-request-id': 'pace-check',
      },
      body: JSON.stringify({ model: 'roster-sim/slow', input: 'pace', stream: true, max_output_tokens: 8 }),
    })
    const reader = res.body!.getReader()
    const arrivals: number[] = []
    for (;;) {
      const { value, done } = await reader.read()
      if (done) break
      const text = new TextDecoder().decode(value)
      for (const _ of text.matchAll(/"type":"response.output_text.delta"/g)) arrivals.push(performance.now())
    }
    // 20 tokens/s upstream: deltas arrive spread over time, not all at the end.
    expect(arrivals.length).toBe(8)
    expect(arrivals.at(-1)! - arrivals[0]!).toBeGreaterThan(200)
  })
})
