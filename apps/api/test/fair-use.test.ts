import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import { Agent, request } from 'undici'
import OpenAI from 'openai'
import { buildTestApp } from './helpers.js'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import { simulatorCatalogue } from '@roster/gateway'
import {
  catalogueFile,
  makeIntern,
  makeInternKey,
  makeTenant,
  makeUserKey,
  metricValue,
  scrape,
  startApi,
  useTestTenant,
  waitFor,
  type ApiProcess,
} from '@roster/testing'

// One key against everyone else, with real API processes over the loopback: its streams, its floods
// and its wrong keys. Each attack is bounded (a count and a time), and each asserts what the others
// see: the API lives, another key's requests succeed. (How fast they stay is a benchmark's figure:
// bench/fair-use.mjs, recorded in bench/RESULTS.md.)
const env = useTestTenant()
let sim: Simulator
let catalogue: string
const agent = new Agent({ connections: 1_000, pipelining: 1 })
const apis: ApiProcess[] = []

beforeAll(async () => {
  // Slow streams: 100 tokens at 10 a second, 10 s each.
  sim = await startSimulator({ replyTokens: 100, tokensPerSecond: 10 })
  catalogue = catalogueFile(simulatorCatalogue(sim.url))
})
afterAll(async () => {
  await Promise.all(apis.map((a) => a.stop()))
  await sim?.close()
  await agent.close()
})

async function api(extra: Record<string, string>) {
  const started = await startApi({
    databaseUrl: env.t.url,
    metrics: true,
    env: { MODEL_CATALOGUE: catalogue, ...extra },
  })
  apis.push(started)
  return started
}

const post = (base: string, path: string, key: string, body: object, signal?: AbortSignal) =>
  request(`${base}${path}`, {
    method: 'POST',
    dispatcher: agent,
    signal,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
const quick = { model: 'roster-sim/chat', input: 'hi', max_output_tokens: 1 }
/** Reads a stream until it ends or is aborted. */
async function drain(res: Awaited<ReturnType<typeof request>>) {
  try {
    for await (const _ of res.body);
  } catch {
    // Aborted: the test is done with it.
  }
}

describe('fair shares', () => {
  it("holds one key's long streams to its share of the provider's connections: another key's calls go straight through", async () => {
    const a = await api({
      UPSTREAM_CONNECTIONS: '16',
      UPSTREAM_CONNECTIONS_PER_KEY: '4',
      KEY_CONCURRENCY: '0',
      KEY_CONCURRENCY_UNDER_LOAD: '0',
      WORKSPACE_CONCURRENCY: '0',
    })
    const other = await makeUserKey(env.t.db, env.tenant.workspaceId)
    const stop = new AbortController()
    // 80 streams of 10 s from one key: past the 16 connections, were they all its.
    const streams = Array.from({ length: 80 }, () =>
      post(
        a.url,
        '/responses',
        env.tenant.keys.user,
        { model: 'roster-sim/chat', input: 'tell me a long story', stream: true },
        stop.signal,
      ).then(drain, () => {}),
    )
    try {
      await waitFor(async () => metricValue(await scrape(a.metricsPort!), 'roster_gateway_upstream_waiting') > 50, {
        what: 'the greedy key’s calls to wait for its share',
      })
      for (let i = 0; i < 5; i++) {
        const started = performance.now()
        const res = await post(a.url, '/responses', other.key, quick)
        expect(res.statusCode).toBe(200)
        await res.body.json()
        // Not behind the greedy key's streams (each 10 s long).
        expect(performance.now() - started).toBeLessThan(3_000)
      }
    } finally {
      stop.abort()
      await Promise.all(streams)
    }
  })

  it("answers a key past its open requests with 429 and Retry-After, in each door's shape, while another key is served", async () => {
    const a = await api({ KEY_CONCURRENCY: '8' })
    const other = await makeUserKey(env.t.db, env.tenant.workspaceId)
    const stop = new AbortController()
    const opened = Array.from({ length: 8 }, () =>
      post(
        a.url,
        '/responses',
        env.tenant.keys.user,
        { model: 'roster-sim/chat', input: 'long', stream: true },
        stop.signal,
      ),
    )
    const held = opened.map((r) => r.then(drain, () => {}))
    try {
      // Every stream answered: each holds its place until it ends.
      await Promise.all(opened)
      const responses = await post(a.url, '/responses', env.tenant.keys.user, quick)
      expect([responses.statusCode, responses.headers['retry-after']]).toEqual([429, '1'])
      expect(await responses.body.json()).toMatchObject({
        error: {
          code: 429,
          message: expect.stringMatching(/KEY_CONCURRENCY/),
          metadata: { error_type: 'rate_limit_exceeded' },
        },
      })
      const chat = await post(a.url, '/chat/completions', env.tenant.keys.user, {
        model: 'roster-sim/chat',
        messages: [{ role: 'user', content: 'hi' }],
      })
      expect([chat.statusCode, ((await chat.body.json()) as any).error.metadata.error_type]).toEqual([
        429,
        'rate_limit_exceeded',
      ])
      const messages = await request(`${a.url}/messages`, {
        method: 'POST',
        dispatcher: agent,
        headers: {
          'x-api-key': env.tenant.keys.user,
          'anthropic-version': '2023-06-01',
          'content-type': 'application/json',
        },
        body: JSON.stringify({ model: 'roster-sim/chat', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }),
      })
      expect([messages.statusCode, messages.headers['retry-after'], await messages.body.json()]).toEqual([
        429,
        '1',
        { type: 'error', error: { type: 'rate_limit_error', message: expect.stringMatching(/KEY_CONCURRENCY/) } },
      ])
      const served = await post(a.url, '/responses', other.key, quick)
      expect(served.statusCode).toBe(200)
      await served.body.dump()
      expect(
        metricValue(await scrape(a.metricsPort!), 'roster_fair_use_refusals_total', { limit: 'key_concurrency' }),
      ).toBe(3)
    } finally {
      stop.abort()
      await Promise.all(held)
    }
    // Ended (the server sees its clients go), the share is free again.
    await waitFor(
      async () => {
        const again = await post(a.url, '/responses', env.tenant.keys.user, quick)
        await again.body.dump()
        return again.statusCode === 200
      },
      { timeoutMs: 5_000, what: "the key's share to be free again" },
    )
  })

  it('refuses a flood from one key with 429 while every request of another key succeeds', async () => {
    const a = await api({ KEY_CONCURRENCY: '16' })
    const other = await makeUserKey(env.t.db, env.tenant.workspaceId)
    const statuses: Record<number, number> = {}
    let next = 0
    const flood = Array.from({ length: 64 }, async () => {
      while (next++ < 1_000) {
        const res = await post(a.url, '/responses', env.tenant.keys.user, { ...quick, max_output_tokens: 3 })
        statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1
        await res.body.dump()
      }
    })
    const victim: number[] = []
    const served = (async () => {
      for (let i = 0; i < 50; i++) {
        const res = await post(a.url, '/responses', other.key, quick)
        victim.push(res.statusCode)
        await res.body.dump()
      }
    })()
    await Promise.all([...flood, served])
    expect(statuses[429]).toBeGreaterThan(0)
    expect(Object.keys(statuses).sort()).toEqual(['200', '429'])
    expect(victim.every((s) => s === 200)).toBe(true)
  })

  it("admits a lone client's first burst whole while the process reads as loaded (a cold start: the compliance suite's 17 at once)", async () => {
    const app = await buildTestApp(
      env.t.db,
      { KEY_CONCURRENCY: '17', KEY_CONCURRENCY_UNDER_LOAD: '1' },
      simulatorCatalogue(sim.url),
    )
    try {
      // The loop read as busy twice, as while a process warms up: the share falls to its floor (1).
      app.deps.admission.adjust(0.99)
      app.deps.admission.adjust(0.99)
      expect(app.deps.admission.share).toBe(1)
      const openai = new OpenAI({
        apiKey: env.tenant.keys.user,
        baseURL: `${await app.listen({ port: 0, host: '127.0.0.1' })}/api/v1`,
        maxRetries: 0,
      })
      const burst = await Promise.allSettled(
        Array.from({ length: 17 }, (_, i) =>
          openai.responses.create({ model: 'roster-sim/chat', input: `test ${i}`, max_output_tokens: 3 }),
        ),
      )
      // Squeezing is for other keys: with none there, the lone client keeps KEY_CONCURRENCY.
      expect(
        burst.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason)),
      ).toEqual([])
    } finally {
      await app.closeAll()
    }
  })

  it("never squeezes a user's chats for the interns they wait on, and squeezes another workspace's flood", async () => {
    const app = await buildTestApp(
      env.t.db,
      { KEY_CONCURRENCY: '64', KEY_CONCURRENCY_UNDER_LOAD: '4', REFUSAL_DELAY_MS: '0' },
      simulatorCatalogue(sim.url),
    )
    const held: AbortController[] = []
    try {
      const base = `${await app.listen({ port: 0, host: '127.0.0.1' })}/api/v1`
      // A request whose body never ends holds its admission (taken as its headers arrive): whether it
      // was admitted (no answer yet) or refused (429 at once).
      const hold = async (path: string, key: string): Promise<'held' | number> => {
        const stop = new AbortController()
        held.push(stop)
        let release!: () => void
        const never = new Promise<void>((r) => (release = r))
        stop.signal.addEventListener('abort', () => release())
        const answered = request(`${base}${path}`, {
          method: 'POST',
          dispatcher: agent,
          signal: stop.signal,
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          // undici sends an async iterable's chunks as they come (its types name Node's Readable only).
          body: Readable.from(
            (async function* () {
              yield Buffer.from('{"model":')
              await never
            })(),
          ),
        }).then(
          async (res) => {
            await res.body.dump().catch(() => undefined)
            return res.statusCode
          },
          () => 0,
        )
        return Promise.race([answered, new Promise<'held'>((r) => setTimeout(() => r('held'), 1_500))])
      }
      // The process reads as loaded (its own readings stopped, so that it stays so): every key's
      // share falls to the floor (4).
      app.deps.admission.close()
      app.deps.admission.adjust(0.99)
      app.deps.admission.adjust(0.99)
      expect(app.deps.admission.share).toBe(4)
      // Six interns of the tenant's workspace are calling their model, each with its own key…
      const interns = await Promise.all(
        Array.from({ length: 6 }, async () => {
          const intern = await makeIntern(env.t.db, env.tenant, { status: 'running' })
          return { id: intern.id, key: await makeInternKey(env.t.db, env.tenant.workspaceId, intern.id) }
        }),
      )
      const calls = await Promise.all(interns.map((i) => hold('/responses', i.key)))
      expect(calls).toEqual(interns.map(() => 'held'))
      // …while their user chats with all of them, and more: its chats wait on the interns' hosts.
      const chats = await Promise.all(
        Array.from({ length: 10 }, (_, k) =>
          hold(`/interns/${interns[k % interns.length]!.id}/chat/completions`, env.tenant.keys.user),
        ),
      )
      expect(chats).toEqual(chats.map(() => 'held'))
      // Another workspace's key flooding the doors meanwhile is held to the share.
      const stranger = await makeTenant(env.t.db)
      const flood = await Promise.all(Array.from({ length: 8 }, () => hold('/responses', stranger.keys.user)))
      expect(flood.filter((f) => f === 'held')).toHaveLength(4)
      expect(flood.filter((f) => f === 429)).toHaveLength(4)
    } finally {
      for (const stop of held) stop.abort()
      await app.closeAll()
    }
  })

  it('counts a key’s requests per minute across API processes', async () => {
    // One Redis prefix: the processes of one deployment.
    const limits = { KEY_REQUESTS_PER_MINUTE: '40', QUEUE_PREFIX: `{t-rpm-${Date.now()}}` }
    const [one, two] = [await api(limits), await api(limits)]
    const key = (await makeUserKey(env.t.db, env.tenant.workspaceId)).key
    // The limit is per minute (a fixed window): start where this run cannot straddle two.
    const left = 60_000 - (Date.now() % 60_000)
    if (left < 10_000) await new Promise((r) => setTimeout(r, left + 100))
    const codes: number[] = []
    for (let i = 0; i < 60; i++) {
      const res = await request(`${(i % 2 ? one : two).url}/models`, {
        dispatcher: agent,
        headers: { authorization: `Bearer ${key}` },
      })
      codes.push(res.statusCode)
      if (res.statusCode === 429) expect(Number(res.headers['retry-after'])).toBeGreaterThan(0)
      await res.body.dump()
      // Paced, so the processes' counts meet in Redis (they sync every 200 ms).
      await new Promise((r) => setTimeout(r, 25))
    }
    const admitted = codes.filter((c) => c === 200).length
    // The limit, give or take what the other process admitted between two syncs.
    expect(admitted).toBeGreaterThanOrEqual(40)
    expect(admitted).toBeLessThanOrEqual(46)
    expect(codes.at(-1)).toBe(429)
  }, 30_000)
})

describe('unknown keys', () => {
  it('cost the others nothing: a flood of random keys is throttled per address, its refusals held back, looked up a few at a time, and a known key is always served', async () => {
    const a = await api({
      UNKNOWN_KEYS_PER_MINUTE: '100',
      AUTH_CACHE_MS: '200',
      AUTH_CACHE_ENTRIES: '100',
      REFUSAL_DELAY_MS: '200',
    })
    const known = (await makeUserKey(env.t.db, env.tenant.workspaceId)).key
    expect(
      (await request(`${a.url}/models`, { dispatcher: agent, headers: { authorization: `Bearer ${known}` } }))
        .statusCode,
    ).toBe(200)
    const statuses: Record<number, number> = {}
    const refusedAfter: number[] = []
    let sent = 0
    const flood = Array.from({ length: 32 }, async () => {
      while (sent++ < 1_000) {
        const started = performance.now()
        const res = await request(`${a.url}/models`, {
          dispatcher: agent,
          headers: { authorization: `Bearer sk-roster-v1-${randomBytes(24).toString('hex')}` },
        })
        statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1
        if (res.statusCode === 429) refusedAfter.push(performance.now() - started)
        await res.body.dump()
      }
    })
    const victim: number[] = []
    const served = (async () => {
      for (let i = 0; i < 40; i++) {
        // Past AUTH_CACHE_MS: looked up again, ahead of the strangers.
        await new Promise((r) => setTimeout(r, 50))
        const res = await request(`${a.url}/models`, {
          dispatcher: agent,
          headers: { authorization: `Bearer ${known}` },
        })
        victim.push(res.statusCode)
        await res.body.dump()
      }
    })()
    await Promise.all([...flood, served])
    expect(victim.every((s) => s === 200)).toBe(true)
    const metrics = await scrape(a.metricsPort!)
    // A lookup for each 401, none for a 429: the address's budget (100 a minute, plus the requests
    // already waiting for a lookup slot when it ran out; twice that if the run straddles a minute).
    expect(metricValue(metrics, 'roster_auth_lookups_total', { outcome: 'unknown' })).toBe(statuses[401])
    expect(statuses[401]).toBeGreaterThanOrEqual(100)
    expect(statuses[401]).toBeLessThanOrEqual(2 * (100 + 32))
    expect(statuses[429]).toBeGreaterThan(600)
    // Each refusal waited about REFUSAL_DELAY_MS (half to one and a half times it), so that a flood
    // that sends again at once cannot make its refusals a load on the others.
    expect(Math.min(...refusedAfter)).toBeGreaterThanOrEqual(95)
    expect(metricValue(metrics, 'roster_fair_use_refusals_total', { limit: 'unknown_keys' })).toBe(statuses[429])
  })
})
