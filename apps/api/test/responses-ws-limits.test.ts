import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readFileSync } from 'node:fs'
import { WebSocket } from 'ws'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import { simulatorCatalogue } from '@roster/gateway'
import {
  catalogueFile,
  makeUserKey,
  metricValue,
  scrape,
  startApi,
  useTestTenant,
  waitFor,
  type ApiProcess,
} from '@roster/testing'

// The WebSocket transport under one greedy key, against a real API process: connections per key,
// the bytes of waiting requests across all connections, idle connections and connections that
// stop answering pings. The process's memory stays bounded and another key is served throughout.
const env = useTestTenant()
let sim: Simulator
let api: ApiProcess
const MIB = 1024 * 1024

beforeAll(async () => {
  // Slow: each request streams for 5 s, so what is sent behind it waits.
  sim = await startSimulator({ replyTokens: 50, tokensPerSecond: 10 })
  api = await startApi({
    databaseUrl: env.t.url,
    metrics: true,
    env: {
      MODEL_CATALOGUE: catalogueFile(simulatorCatalogue(sim.url)),
      WS_CONNECTIONS_PER_KEY: '4',
      WS_WAITING_BYTES: String(8 * MIB),
      // Pings far apart enough that a connection sending megabytes to a loaded process is not taken for deaf.
      WS_IDLE_TIMEOUT_MS: '8000',
      WS_PING_MS: '1500',
    },
  })
})
afterAll(async () => {
  await api?.stop()
  await sim?.close()
})

const wsUrl = () => `ws://127.0.0.1:${api.port}/api/v1/responses`
/** A connection that keeps what it is sent; `refused` holds the HTTP status of a refused upgrade. */
function open(key: string, options: { autoPong?: boolean } = {}) {
  const socket = new WebSocket(wsUrl(), {
    headers: { authorization: `Bearer ${key}` },
    autoPong: options.autoPong ?? true,
    maxPayload: 64 * MIB,
  })
  const received: any[] = []
  const state = { refused: 0, closed: undefined as number | undefined }
  socket.on('message', (data) => received.push(JSON.parse(String(data))))
  socket.on('unexpected-response', (_req, res) => {
    state.refused = res.statusCode ?? 0
    socket.terminate()
  })
  socket.on('error', () => {})
  socket.on('close', (code) => (state.closed = code))
  const ready = new Promise<void>((resolve) => {
    socket.once('open', () => resolve())
    socket.once('close', () => resolve())
  })
  return { socket, received, state, ready }
}
const rss = () =>
  Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${api.process.child!.pid}/status`, 'utf8'))![1]) * 1024

describe('WebSocket limits', () => {
  it('refuses a key its fifth connection before the upgrade, while another key connects', async () => {
    const mine = Array.from({ length: 5 }, () => open(env.tenant.keys.user))
    await Promise.all(mine.map((c) => c.ready))
    expect(mine.map((c) => c.state.refused).sort()).toEqual([0, 0, 0, 0, 429])
    const other = open((await makeUserKey(env.t.db, env.tenant.workspaceId)).key)
    await other.ready
    expect(other.socket.readyState).toBe(WebSocket.OPEN)
    for (const c of [...mine, other]) c.socket.close()
    await waitFor(() => [...mine, other].every((c) => c.state.closed !== undefined), {
      what: 'the connections to close',
    })
  })

  it('holds the bytes of waiting requests across all connections: the rest are refused, memory stays bounded, another key is served', async () => {
    const before = rss()
    const greedy = Array.from({ length: 4 }, () => open(env.tenant.keys.user))
    await Promise.all(greedy.map((g) => g.ready))
    const big = JSON.stringify({ type: 'response.create', model: 'roster-sim/chat', input: 'x'.repeat(3 * MIB) })
    for (const g of greedy) {
      g.socket.send(JSON.stringify({ type: 'response.create', model: 'roster-sim/chat', input: 'a slow one' }))
      for (let i = 0; i < 8; i++) g.socket.send(big)
    }
    // 4 × 8 requests of 3 MiB wait (96 MiB); 8 MiB may: two, then the rest are refused at once.
    const refused = () => greedy.reduce((n, g) => n + g.received.filter((e) => e.type === 'error').length, 0)
    await waitFor(() => refused() >= 30, { timeoutMs: 30_000, what: 'the refusals' }).catch((err) => {
      throw new Error(
        `${err.message}: ${refused()} refused; per connection ${greedy.map((g) => `${g.received.map((e) => e.type).join(',') || 'nothing'} (closed ${g.state.closed})`).join(' | ')}`,
      )
    })
    const refusals = greedy.flatMap((g) => g.received.filter((e) => e.type === 'error'))
    expect(refusals[0]).toMatchObject({
      type: 'error',
      status: 503,
      error: { code: 'server', message: expect.stringMatching(/WS_WAITING_BYTES/) },
    })
    const metrics = await scrape(api.metricsPort!)
    expect(metricValue(metrics, 'roster_ws_waiting_bytes')).toBeLessThanOrEqual(8 * MIB)
    // The bytes in flight, parsed and queued: far below the 96 MiB a queue without a ceiling would hold (and its copies).
    expect(rss() - before).toBeLessThan(150 * MIB)
    const other = open((await makeUserKey(env.t.db, env.tenant.workspaceId)).key)
    await other.ready
    other.socket.send(
      JSON.stringify({ type: 'response.create', model: 'roster-sim/chat', input: 'quick', max_output_tokens: 1 }),
    )
    // One token asked for: the answer ends `incomplete` (max_output_tokens), at once.
    await waitFor(() => other.received.some((e) => e.type === 'response.incomplete'), {
      timeoutMs: 5_000,
      what: "the other key's answer",
    })
    for (const c of [...greedy, other]) c.socket.terminate()
  })

  it('closes an idle connection, and ends one that stops answering pings', async () => {
    const idle = open(env.tenant.keys.user)
    const deaf = open(env.tenant.keys.user, { autoPong: false })
    await Promise.all([idle.ready, deaf.ready])
    const started = performance.now()
    await waitFor(() => deaf.state.closed !== undefined, { timeoutMs: 7_000, what: 'the deaf connection to be ended' })
    // Ended without a close frame: it was not listening.
    expect(deaf.state.closed).toBe(1006)
    expect(idle.state.closed).toBeUndefined()
    await waitFor(() => idle.state.closed !== undefined, {
      timeoutMs: 12_000,
      what: 'the idle connection to be closed',
    })
    expect(idle.state.closed).toBe(1000)
    expect(performance.now() - started).toBeGreaterThan(7_000)
  })
})
