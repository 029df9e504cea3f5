import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  connectRedis,
  generationsStream,
  limitPeriod,
  spendCounter,
  spendEventsChannel,
  type GenerationRecord,
} from '@roster/shared'
import { createTestDatabase, generationRecord, redisUrl, waitFor, type TestDatabase } from '@roster/testing'
import { StreamGenerationLedger } from './generation-ledger.js'

// The ledger's group commit, against a real Redis: appends that come while one is under way go
// together as one stream entry, each request still answered, and the limits' counters raised by
// exactly what each request's records count.
const redis = connectRedis({ REDIS_URL: redisUrl() })
const prefix = `{t-ledger-${Date.now()}}`
let t: TestDatabase
const silent = { warn() {}, error() {} }
beforeAll(async () => {
  t = await createTestDatabase(2)
})
afterAll(async () => {
  redis.disconnect()
  await t?.drop()
})

describe('StreamGenerationLedger', () => {
  it('appends a turn’s requests as one entry, and those that came while one was under way together, each answered', async () => {
    await redis.ping()
    const ledger = new StreamGenerationLedger(redis, prefix, t.db, silent)
    const stream = generationsStream(prefix)
    const keyId = '00000000-0000-4000-8000-00000000000a'
    const limit = { owner: keyId, of: 'key' as const, pico: 10n ** 15n, reset: 'daily' as const, includeByok: false }
    const requests = Array.from({ length: 50 }, (_, i) => [
      generationRecord({ id: `g-${i}`, key_id: keyId, cost_pico: String(1_000 + i) }),
      ...(i % 5 === 0 ? [generationRecord({ id: `g-${i}-2`, key_id: keyId, cost_pico: '7', is_byok: true })] : []),
    ])
    // All in one turn of the event loop: one entry for the 50.
    await Promise.all(requests.map((records, i) => ledger.append(records, i % 2 === 0 ? [limit] : [])))
    const entries = await redis.xrange(stream, '-', '+')
    expect(entries).toHaveLength(1)
    const appended = entries.flatMap(([, fields]) => JSON.parse(fields[1]!) as GenerationRecord[])
    expect(appended.map((r) => r.id).sort()).toEqual(
      requests
        .flat()
        .map((r) => r.id)
        .sort(),
    )
    // The counter rose by what the limited requests' records count (BYOK not, for this limit).
    const expected = requests
      .filter((_, i) => i % 2 === 0)
      .flat()
      .reduce((sum, r) => sum + (r.is_byok ? 0n : BigInt(r.cost_pico)), 0n)
    const counter = await redis.get(spendCounter(prefix, limit, limitPeriod(limit, new Date())))
    expect(BigInt(counter!)).toBe(expected)

    // One under way: those that come meanwhile wait for it, and go together.
    const first = ledger.append([generationRecord({ id: 'first' })])
    await new Promise((r) => setImmediate(r))
    await Promise.all([first, ...['then-1', 'then-2', 'then-3'].map((id) => ledger.append([generationRecord({ id })]))])
    const later = (await redis.xrange(stream, '-', '+'))
      .slice(1)
      .map(([, f]) => JSON.parse(f[1]!) as GenerationRecord[])
    expect(later.map((records) => records.map((r) => r.id))).toEqual([['first'], ['then-1', 'then-2', 'then-3']])
    await redis.del(stream, spendCounter(prefix, limit, limitPeriod(limit, new Date())))
  })

  it('gives a counter its window’s TTL when an append makes it, and tells each append that reaches the limit', async () => {
    const told: [string, bigint][] = []
    const ledger = new StreamGenerationLedger(redis, prefix, t.db, silent, {
      onCounted: (counter, value) => told.push([counter, value]),
    })
    const owner = '00000000-0000-4000-8000-00000000000c'
    const limit = { owner, of: 'key' as const, pico: 100n, reset: 'daily' as const, includeByok: false }
    const counter = spendCounter(prefix, limit, limitPeriod(limit, new Date()))
    const spend = (id: string, cost: number) =>
      ledger.append([generationRecord({ id, key_id: owner, cost_pico: String(cost) })], [limit])
    try {
      await spend('ttl-1', 40)
      expect(await redis.get(counter)).toBe('40')
      const made = await redis.ttl(counter)
      expect(made).toBeGreaterThan(3 * 86_400 - 60)
      expect(made).toBeLessThanOrEqual(3 * 86_400)
      // Set when the counter was made, not pushed back by each append.
      await redis.expire(counter, 1_000)
      await spend('ttl-2', 59)
      expect(await redis.ttl(counter)).toBeLessThanOrEqual(1_000)
      expect(told).toEqual([])
      await spend('ttl-3', 1)
      await spend('ttl-4', 1)
      expect(told).toEqual([
        [counter, 100n],
        [counter, 101n],
      ])
    } finally {
      await redis.del(counter)
    }
  })

  it('publishes a counter with its new value when it reaches the lowest limit of it, compared exactly past 2^53', async () => {
    const events = connectRedis({ REDIS_URL: redisUrl() })
    const heard: string[] = []
    events.on('message', (_channel: string, message: string) => heard.push(message))
    await events.subscribe(spendEventsChannel(prefix))
    const told: [string, bigint][] = []
    const ledger = new StreamGenerationLedger(redis, prefix, t.db, silent, {
      onCounted: (counter, value) => told.push([counter, value]),
    })
    const owner = '00000000-0000-4000-8000-00000000000b'
    // Two limits on one counter (a key's own and its guardrail's): the lower one counts. 10^18 + 1
    // is no double: Lua's numbers would take it for 10^18.
    const big = 10n ** 18n
    const lower = { owner, of: 'key' as const, pico: big + 1n, reset: null, includeByok: false }
    const higher = { ...lower, of: 'guardrail' as const, pico: big * 2n }
    const counter = spendCounter(prefix, lower, limitPeriod(lower, new Date()))
    try {
      await ledger.append([generationRecord({ id: 'big-1', key_id: owner, cost_pico: String(big) })], [higher, lower])
      expect(await redis.get(counter)).toBe(String(big))
      expect(told).toEqual([])
      await ledger.append([generationRecord({ id: 'big-2', key_id: owner, cost_pico: '1' })], [lower, higher])
      expect(told).toEqual([[counter, big + 1n]])
      // Written to every subscriber by the time the append is answered (plugins/change-events.ts):
      // Redis wrote it before its last answer; this process reads the two sockets in the order the
      // kernel lists them ready, which under load may put the answer first, so its own read is
      // waited for, briefly.
      await waitFor(() => heard.length > 0, { timeoutMs: 500, intervalMs: 1, what: 'the published counter' })
      expect(heard).toEqual([JSON.stringify([counter, String(big + 1n)])])
    } finally {
      events.disconnect()
      await redis.del(counter)
    }
  })
})
