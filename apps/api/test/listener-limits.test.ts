import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connect, type Socket } from 'node:net'
import { readdirSync } from 'node:fs'
import { Pool } from 'undici'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import { simulatorCatalogue } from '@roster/gateway'
import {
  catalogueFile,
  freePort,
  metricValue,
  runtimeCredential,
  scrape,
  startApi,
  startStack,
  useTestTenant,
  waitFor,
  type ApiProcess,
  type Stack,
} from '@roster/testing'

// Clients that hold a connection without finishing a request: silent connections, headers or a
// body that stop arriving, and a flood of connections. Every listener cuts them in seconds (the
// API, the runtime host, the metrics and health ports), the cut is counted, and a client whose
// requests do arrive is served throughout. Loopback only, counts and times bounded.
const env = useTestTenant()
let sim: Simulator
let stack: Stack
let healthPort = 0
const LIMITS = { HEADERS_TIMEOUT_MS: '1000', BODY_IDLE_TIMEOUT_MS: '1000', REQUEST_TIMEOUT_MS: '6000' }

beforeAll(async () => {
  sim = await startSimulator({ replyTokens: 3 })
  healthPort = await freePort()
  stack = await startStack({
    databaseUrl: env.t.url,
    metrics: true,
    env: { MODEL_CATALOGUE: catalogueFile(simulatorCatalogue(sim.url)), ...LIMITS },
    workerEnv: { HEALTH_PORT: String(healthPort) },
  })
})
afterAll(async () => {
  await stack?.stop()
  await sim?.close()
})

const portOf = (url: string) => Number(new URL(url).port)

/** A raw connection; resolves with what came back and how long it stayed open once `send` was written. */
function hold(port: number, send: (socket: Socket) => void = () => {}): Promise<{ ms: number; received: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let received = ''
    let started = 0
    socket.on('connect', () => {
      started = performance.now()
      send(socket)
    })
    socket.on('data', (d) => (received += d))
    socket.on('error', () => {})
    socket.on('close', () => resolve({ ms: performance.now() - started, received }))
    setTimeout(() => {
      socket.destroy()
      reject(new Error(`port ${port} kept the connection open for 15 s`))
    }, 15_000).unref()
  })
}

describe('every listener', () => {
  it('closes a connection that sends nothing within its headers timeout: API, runtime host, metrics and health ports', async () => {
    const ports = {
      api: portOf(stack.apiUrl),
      runtime: portOf(stack.runtimeUrl),
      apiMetrics: stack.metricsPorts.api!,
      runtimeMetrics: stack.metricsPorts.runtime!,
      workerMetrics: stack.metricsPorts.workers[0]!,
      workerHealth: healthPort,
    }
    const held = await Promise.all(
      Object.entries(ports).map(async ([name, port]) => [name, (await hold(port)).ms] as const),
    )
    // The timeout, plus Node's check of it once a second, plus slack for a busy machine.
    for (const [name, ms] of held) expect(ms, name).toBeLessThan(1_000 + 1_000 + 1_500)
    for (const [name, ms] of held) expect(ms, name).toBeGreaterThan(900)
  })

  it('cuts headers that trickle in (slowloris) at the headers timeout, with a 408', async () => {
    const { ms, received } = await hold(portOf(stack.apiUrl), (socket) => {
      socket.write('GET /api/v1/models HTTP/1.1\r\nHost: x\r\n')
      const trickle = setInterval(() => socket.writable && socket.write(`X-Pad-${Date.now()}: 1\r\n`), 300)
      socket.on('close', () => clearInterval(trickle))
    })
    expect(ms).toBeLessThan(3_500)
    expect(received).toMatch(/^HTTP\/1\.1 408 /)
  })

  it('cuts a body that stops arriving, on the API and on the runtime host, answering 408 and counting it', async () => {
    const stalled = (port: number, path: string, auth: string) =>
      hold(port, (socket) =>
        socket.write(
          `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"model":"`,
        ),
      )
    const [api, runtime] = await Promise.all([
      stalled(portOf(stack.apiUrl), '/api/v1/responses', `Bearer ${env.tenant.keys.user}`),
      stalled(
        portOf(stack.runtimeUrl),
        '/v1/interns/00000000-0000-4000-8000-000000000000',
        `Bearer ${await runtimeCredential(env.t.url, stack.runtimes[0]!.id)}`,
      ),
    ])
    for (const cut of [api, runtime]) {
      expect(cut.ms).toBeLessThan(1_000 + 2_000)
      expect(cut.received).toMatch(/^HTTP\/1\.1 408 /)
    }
    expect(
      metricValue(await scrape(stack.metricsPorts.api!), 'roster_http_connections_cut_total', { reason: 'body_idle' }),
    ).toBe(1)
    expect(
      metricValue(await scrape(stack.metricsPorts.runtime!), 'roster_http_connections_cut_total', {
        reason: 'body_idle',
      }),
    ).toBe(1)
  })

  it('takes a body that arrives slowly but steadily', async () => {
    const body = JSON.stringify({ model: 'roster-sim/chat', input: 'slowly', max_output_tokens: 2 })
    const { received } = await hold(portOf(stack.apiUrl), (socket) => {
      socket.write(
        `POST /api/v1/responses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${env.tenant.keys.user}\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: ${body.length}\r\n\r\n`,
      )
      let at = 0
      // Eight pieces, 400 ms apart: 2.8 s in all, longer than the idle timeout, never idle that long.
      const piece = Math.ceil(body.length / 8)
      const next = setInterval(() => {
        socket.write(body.slice(at, (at += piece)))
        if (at >= body.length) clearInterval(next)
      }, 400)
    })
    expect(received).toMatch(/^HTTP\/1\.1 200 /)
  })
})

describe('connections past MAX_CONNECTIONS', () => {
  let api: ApiProcess
  beforeAll(async () => {
    api = await startApi({
      databaseUrl: env.t.url,
      metrics: true,
      env: {
        MODEL_CATALOGUE: catalogueFile(simulatorCatalogue(sim.url)),
        MAX_CONNECTIONS: '50',
        HEADERS_TIMEOUT_MS: '2000',
      },
    })
  })
  afterAll(async () => api?.stop())

  it('are refused at once or take a silent one’s place: the process keeps its descriptors, clients old and new are served', async () => {
    const victim = new Pool(`http://127.0.0.1:${api.port}`, { connections: 1 })
    const ask = async () => {
      const res = await victim.request({
        path: '/api/v1/models',
        method: 'GET',
        headers: { authorization: `Bearer ${env.tenant.keys.user}` },
      })
      await res.body.dump()
      return res.statusCode
    }
    expect(await ask()).toBe(200)
    const sockets: Socket[] = []
    const closed: number[] = []
    for (let i = 0; i < 500; i++) {
      const s = connect(api.port, '127.0.0.1')
      const opened = performance.now()
      s.on('error', () => {})
      // Read what comes (a 408): a socket with unread data never reports its close.
      s.resume()
      s.on('close', () => closed.push(performance.now() - opened))
      sockets.push(s)
    }
    try {
      // Past the 50, closed at once (as fast as this process opens them); the victim's connection still carries its requests.
      await waitFor(() => closed.length > 400, {
        timeoutMs: 10_000,
        what: 'the connections past the ceiling to be closed',
      })
      for (let i = 0; i < 5; i++) expect(await ask()).toBe(200)
      // A newcomer takes the place of the connection idle longest (a silent one), and is served.
      for (let i = 0; i < 5; i++) {
        const newcomer = new Pool(`http://127.0.0.1:${api.port}`, { connections: 1 })
        const res = await newcomer.request({
          path: '/api/v1/models',
          method: 'GET',
          headers: { authorization: `Bearer ${env.tenant.keys.user}` },
        })
        expect(res.statusCode).toBe(200)
        await res.body.dump()
        await newcomer.close()
      }
      const descriptors = readdirSync(`/proc/${api.process.child!.pid}/fd`).length
      expect(descriptors).toBeLessThan(50 + 200)
      expect(
        metricValue(await scrape(api.metricsPort!), 'roster_http_connections_cut_total', { reason: 'max_connections' }),
      ).toBeGreaterThan(400)
      // The silent ones that got in are cut at the headers timeout; then newcomers are served again.
      await waitFor(() => closed.length === 500, { timeoutMs: 15_000, what: 'the silent connections to be cut' })
      const fresh = await fetch(`http://127.0.0.1:${api.port}/api/v1/models`, {
        headers: { authorization: `Bearer ${env.tenant.keys.user}` },
      })
      expect(fresh.status).toBe(200)
    } finally {
      for (const s of sockets) s.destroy()
      await victim.close()
    }
  })
})
