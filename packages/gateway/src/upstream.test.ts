import { once } from 'node:events'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { Endpoint } from './catalogue.js'
import { openaiChat } from './adapters/openai-chat.js'
import { Cancellation } from './cancellation.js'
import { GatewayError } from './errors.js'
import { Upstream } from './upstream.js'

// A provider on a local socket: each test installs what it answers.
let server: Server
let answer: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end()
let endpoint: Endpoint
const upstream = new Upstream({ SIM_KEY: 'secret-key' })
beforeAll(async () => {
  server = createServer((req, res) => answer(req, res))
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const { port } = server.address() as { port: number }
  endpoint = Endpoint.parse({
    provider: 'local',
    protocol: 'openai-chat',
    base_url: `http://127.0.0.1:${port}/v1`,
    upstream_model: 'm',
    api_key_env: 'SIM_KEY',
    timeout_ms: 300,
  })
})
afterAll(async () => {
  await upstream.close()
  server.closeAllConnections()
  await new Promise<void>((r) => server.close(() => r()))
})

const call = (hooks: Parameters<Upstream['call']>[3] = {}) =>
  upstream.call(endpoint, openaiChat, { hello: 'there' }, hooks)
const failure = (p: Promise<unknown>) =>
  p.then(
    () => Promise.reject(new Error('expected a failure')),
    (err: unknown) => err,
  )

describe('Upstream', () => {
  it('posts the body with the credential from the environment and answers the whole reply', async () => {
    let seen: { url?: string; auth?: string; body?: string } = {}
    answer = async (req, res) => {
      let body = ''
      for await (const c of req) body += c
      seen = { url: req.url, auth: req.headers.authorization, body }
      res.writeHead(200, { 'content-type': 'application/json' })
      res.write('{"a":')
      setTimeout(() => res.end('1}'), 5)
    }
    let started = 0
    const whole = await call({ onStart: () => started++ })
    expect(JSON.parse(whole!.toString())).toEqual({ a: 1 })
    expect(seen).toEqual({ url: '/v1/chat/completions', auth: 'Bearer secret-key', body: '{"hello":"there"}' })
    expect(started).toBe(1)
  })

  it('answers an error status as the canonical error, keeping Retry-After', async () => {
    answer = (_req, res) =>
      res
        .writeHead(429, { 'retry-after': '7', 'content-type': 'application/json' })
        .end('{"error":{"message":"slow down"}}')
    const err = (await failure(call())) as GatewayError
    expect(err).toBeInstanceOf(GatewayError)
    expect([err.status, err.errorType, err.retryAfter]).toEqual([429, 'rate_limit_exceeded', '7'])
    expect(err.message).toContain('slow down')
  })

  it('hands each streamed chunk over as it arrives', async () => {
    // The provider writes its next part only once the last one was handed over: a client that held
    // chunks back until the end would never be sent the second (and the test would time out).
    let handedOver: () => void = () => {}
    answer = async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      for (const part of ['one ', 'two ', 'three']) {
        const next = new Promise<void>((r) => (handedOver = r))
        res.write(part)
        await next
      }
      res.end()
    }
    const arrivals: string[] = []
    const body = await call({
      onChunk: (c) => {
        arrivals.push(c.toString())
        handedOver()
      },
    })
    expect(body).toBeUndefined()
    expect(arrivals).toEqual(['one ', 'two ', 'three'])
  })

  it('stops reading the provider while the consumer is not keeping up, and resumes after', async () => {
    // Far more than the two sockets can buffer between them (~4 MiB here).
    const total = 64 * 1024 * 1024
    let written = 0
    let heldBack = false
    answer = async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      const block = Buffer.alloc(64 * 1024, 120)
      while (written < total) {
        written += block.length
        if (res.write(block)) continue
        heldBack = true
        await once(res, 'drain')
        heldBack = false
      }
      res.end()
    }
    let received = 0
    let release!: () => void
    const paused = new Promise<void>((r) => (release = r))
    const done = call({
      onChunk: (c) => {
        const first = received === 0
        received += c.length
        if (first) return paused
      },
    })
    // The provider is held back by the sockets' buffers, far short of the whole body: its writes wait
    // for a drain that does not come (however long the buffers take to fill on this machine).
    let before = -1
    await vi.waitFor(
      () => {
        const settled = heldBack && written === before
        before = written
        expect(settled).toBe(true)
      },
      { timeout: 10_000, interval: 25 },
    )
    const writtenWhilePaused = written
    expect(writtenWhilePaused).toBeLessThan(total / 4)
    // And stays held back while the consumer is paused (a window: nothing should happen in it).
    await new Promise((r) => setTimeout(r, 100))
    expect(written).toBe(writtenWhilePaused)
    release()
    await done
    expect(received).toBe(total)
  })

  it('a consumer that throws ends the call with its error and drops the connection', async () => {
    let closed!: Promise<unknown>
    answer = (req, res) => {
      closed = once(res, 'close')
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write('data: not json\n\n')
      // Never ends: only our side can end this call.
    }
    const boom = new GatewayError(502, 'provider_unavailable', 'local sent an event that is not JSON')
    expect(
      await failure(
        call({
          onChunk: () => {
            throw boom
          },
        }),
      ),
    ).toBe(boom)
    await closed
  })

  it('a cancellation aborts the call in flight, and one made before sending never sends', async () => {
    let requests = 0
    let closed!: Promise<unknown>
    answer = (_req, res) => {
      requests++
      closed = once(res, 'close')
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write('data: {}\n\n')
    }
    const cancel = new Cancellation()
    const err = failure(call({ cancel, onChunk: () => cancel.cancel() }))
    expect(((await err) as Error).name).toBe('AbortError')
    await closed
    expect(cancel.listening).toBe(0)

    const before = new Cancellation()
    before.cancel()
    expect(((await failure(call({ cancel: before }))) as Error).name).toBe('AbortError')
    expect(requests).toBe(1)
  })

  it('a provider that does not answer in time is a timeout; one that cannot be reached is unavailable', async () => {
    answer = () => {}
    const slow = (await failure(call())) as GatewayError
    expect([slow.status, slow.errorType]).toEqual([504, 'timeout'])

    const nowhere = Endpoint.parse({ ...endpoint, base_url: 'http://127.0.0.1:1/v1' })
    const down = (await failure(upstream.call(nowhere, openaiChat, {}, {}))) as GatewayError
    expect([down.status, down.errorType]).toEqual([502, 'provider_unavailable'])
    expect(down.message).not.toContain('secret-key')
  })
})
