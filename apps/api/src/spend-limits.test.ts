import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { randomUUID } from 'node:crypto'
import { connectRedis, limitPeriod, spendCounter, spendEventsChannel, type SpendLimit } from '@roster/shared'
import { createTestDatabase, generationRecord, redisProxy, redisUrl, type TestDatabase } from '@roster/testing'
import { GatewayError } from '@roster/gateway'
import { SpendLimits } from './spend-limits.js'
import { StreamGenerationLedger } from './generation-ledger.js'
import { InternWatch } from './plugins/intern-watch.js'

// The spend check's reads against a real Redis and Postgres: checks asked for while one MGET is in
// flight share the next, and each still gets its own owners' counters.
const redis = connectRedis({ REDIS_URL: redisUrl() })
let t: TestDatabase
beforeAll(async () => {
  t = await createTestDatabase(2)
})
afterAll(async () => {
  redis.disconnect()
  await t?.drop()
})

describe('SpendLimits', () => {
  it('reads the counters of checks that came during one MGET in the next, each answered by its own', async () => {
    await redis.ping()
    const prefix = `{t-spend-${randomUUID().slice(0, 8)}}`
    const spend = new SpendLimits(redis, prefix, t.db)
    const limitOf = (i: number): SpendLimit => ({
      owner: randomUUID(),
      of: 'key',
      pico: 1_000n,
      reset: i % 2 ? 'daily' : null,
      includeByok: false,
    })
    const limits = Array.from({ length: 40 }, (_, i) => limitOf(i))
    // Every third owner has spent its limit (the counter at it), the others have not.
    const period = (l: SpendLimit) => limitPeriod(l, new Date())
    for (const [i, l] of limits.entries()) await redis.set(spendCounter(prefix, l, period(l)), i % 3 ? '999' : '1000')
    // Warm the Postgres side (each owner's ledger is read once a second), so the reads race alone.
    await Promise.allSettled(limits.map((l) => spend.check([l])))

    const mget = vi.spyOn(redis, 'mget')
    try {
      const outcomes = await Promise.allSettled(limits.map((l) => spend.check([l])))
      outcomes.forEach((o, i) => {
        if (i % 3) expect(o.status, `owner ${i}`).toBe('fulfilled')
        else {
          expect(o.status, `owner ${i}`).toBe('rejected')
          expect((o as PromiseRejectedResult).reason).toBeInstanceOf(GatewayError)
          expect(((o as PromiseRejectedResult).reason as GatewayError).status).toBe(402)
        }
      })
      // The first left at once; the 39 asked for while it was in flight went together.
      expect(mget).toHaveBeenCalledTimes(2)
      expect(mget.mock.calls.map((c) => (c[0] as unknown as string[]).length)).toEqual([1, 39])
      // Alone, a check reads at once.
      mget.mockClear()
      await expect(spend.check([limits[1]!])).resolves.toBeUndefined()
      expect(mget).toHaveBeenCalledTimes(1)
    } finally {
      mget.mockRestore()
    }
  })

  it('reads the ledger sums a check needs in one statement, shared by the checks that come meanwhile, kept a second', async () => {
    const prefix = `{t-spend-${randomUUID().slice(0, 8)}}`
    let now = Date.parse('2026-11-26T12:00:00Z')
    const spend = new SpendLimits(redis, prefix, t.db, () => now)
    const owners = Array.from({ length: 4 }, () => randomUUID())
    const limits: SpendLimit[] = owners.map((owner, i) => ({
      owner,
      of: i === 3 ? 'workspace' : 'key',
      pico: 1_000n,
      reset: i % 2 ? 'monthly' : null,
      includeByok: i === 3,
    }))
    const period = (l: SpendLimit) => limitPeriod(l, new Date(now))
    // Nothing in Redis: the ledger alone says the last owner spent its limit, through its own keys
    // (BYOK counts for it), and the others are under theirs (the first spent BYOK, not counted).
    const row = (l: SpendLimit, credits: number, byok: number) =>
      t.db.$executeRaw`INSERT INTO spend (owner_id, period, credits_pico, byok_pico)
        VALUES (${l.owner}::uuid, ${period(l)}, ${credits}, ${byok})`
    await row(limits[0]!, 10, 5_000)
    await row(limits[3]!, 400, 600)
    const reads = vi.spyOn(t.db, '$queryRaw')
    try {
      const first = await Promise.allSettled([spend.check(limits), spend.check(limits.slice(0, 3))])
      expect(first.map((o) => o.status)).toEqual(['rejected', 'fulfilled'])
      expect(((first[0] as PromiseRejectedResult).reason as GatewayError).message).toMatch(/workspace has reached/)
      // One statement for the four sums; the second check, under way meanwhile, shared it.
      expect(reads).toHaveBeenCalledTimes(1)
      now += 500
      await expect(spend.check(limits.slice(0, 3))).resolves.toBeUndefined()
      expect(reads).toHaveBeenCalledTimes(1)
      // A second on, they are read again: spend the ledger took meanwhile counts.
      await row(limits[1]!, 1_000, 0)
      now += 600
      await expect(spend.check(limits.slice(0, 3))).rejects.toThrow(/spent its limit/)
      expect(reads).toHaveBeenCalledTimes(2)
    } finally {
      reads.mockRestore()
    }
  })

  // CI's find: a budget changed to count BYOK was checked against a ledger sum read before the
  // BYOK call was written (kept its second), and let the next request through.
  it('reads the ledger afresh once limits changed (forget): a changed limit never meets a sum read before', async () => {
    const prefix = `{t-spend-${randomUUID().slice(0, 8)}}`
    const now = Date.parse('2026-11-26T12:00:00Z')
    const spend = new SpendLimits(redis, prefix, t.db, () => now)
    const excluding: SpendLimit = {
      owner: randomUUID(),
      of: 'workspace',
      pico: 1_000n,
      reset: 'daily',
      includeByok: false,
    }
    await expect(spend.check([excluding])).resolves.toBeUndefined()
    // Spent through the workspace's own key meanwhile, then the budget counts BYOK.
    await t.db.$executeRaw`INSERT INTO spend (owner_id, period, credits_pico, byok_pico)
      VALUES (${excluding.owner}::uuid, ${limitPeriod(excluding, new Date(now))}, 0, 5000)`
    spend.forget()
    await expect(spend.check([{ ...excluding, includeByok: true }])).rejects.toThrow(/workspace has reached/)
  })

  it('reads the sums checks used, half through their second, with the one that is due: one statement for them', async () => {
    const prefix = `{t-spend-${randomUUID().slice(0, 8)}}`
    let now = Date.parse('2026-11-26T12:00:00Z')
    const spend = new SpendLimits(redis, prefix, t.db, () => now)
    const [a, b, c] = Array.from({ length: 3 }, (): SpendLimit => ({
      owner: randomUUID(),
      of: 'key',
      pico: 1_000n,
      reset: null,
      includeByok: false,
    }))
    const reads = vi.spyOn(t.db, '$queryRaw')
    const owners = () => reads.mock.calls.map((call) => (call[1] as string[]).length)
    try {
      await spend.check([a!]) // A read at 0
      now += 600
      await spend.check([b!]) // B read at 600
      await spend.check([c!]) // C read at 600 too
      now += 200
      await spend.check([b!]) // B used at 800; C not used since its read
      expect(owners()).toEqual([1, 1, 1])
      // B's owner spends its limit in the ledger; A falls due at 1,100 and B, half through its
      // second and used, goes in the same statement (C, unused since, does not).
      await t.db.$executeRaw`INSERT INTO spend (owner_id, period, credits_pico, byok_pico)
        VALUES (${b!.owner}::uuid, ${limitPeriod(b!, new Date(now))}, ${1_000}, ${0})`
      now += 300
      await spend.check([a!])
      expect(owners()).toEqual([1, 1, 1, 2])
      // At 1,650 B's own second (from 600) would be up; read at 1,100, it is not, and it knows.
      now += 550
      await expect(spend.check([b!])).rejects.toThrow(/spent its limit/)
      expect(owners()).toHaveLength(4)
    } finally {
      reads.mockRestore()
    }
  })

  it('answers every waiting check when Redis fails the read under way: the ledger counts alone', async () => {
    // A real failure: the connection is killed from another one while reads are in flight.
    const doomed = connectRedis(
      { REDIS_URL: redisUrl() },
      { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false },
    )
    await doomed.connect()
    const spend = new SpendLimits(doomed, `{t-spend-${randomUUID().slice(0, 8)}}`, t.db)
    const limit: SpendLimit = { owner: randomUUID(), of: 'key', pico: 1_000n, reset: null, includeByok: false }
    await spend.check([limit])
    const id = await doomed.client('ID')
    const mget = vi.spyOn(doomed, 'mget')
    try {
      const checks = Array.from({ length: 5 }, () => spend.check([limit]))
      await redis.client('KILL', 'ID', String(id))
      // Nothing spent in the ledger: every check goes ahead, none hangs.
      const outcomes = await Promise.allSettled(checks)
      expect(outcomes.map((o) => o.status)).toEqual(Array(5).fill('fulfilled'))
      const reads = await Promise.allSettled(mget.mock.results.map((r) => r.value as Promise<unknown>))
      // The kill failed a read under way (the first, or the next one behind it).
      expect(reads.map((r) => r.status)).toContain('rejected')
    } finally {
      mget.mockRestore()
      doomed.disconnect()
    }
  })

  it('trusts a counter it read for a second while it hears events, and hears at once of an append that reaches a limit', async () => {
    const prefix = `{t-spend-${randomUUID().slice(0, 8)}}`
    const silent = { warn() {}, info() {}, error() {} }
    // Two API processes over one Redis and Postgres: A appends (and tells its own check of what
    // reached a limit), B checks, hearing A through its own subscriber connection.
    const spendA = new SpendLimits(redis, prefix, t.db, Date.now, () => true)
    const ledgerA = new StreamGenerationLedger(redis, prefix, t.db, silent, {
      onCounted: (counter, value) => spendA.saw(counter, value),
    })
    const watchB = new InternWatch({ REDIS_URL: redisUrl() }, prefix, silent, {
      interns() {},
      keys: () => spendB.forget(),
      spend: (counter, value) => spendB.saw(counter, value),
      gap: () => spendB.forget(),
    })
    const spendB = new SpendLimits(redis, prefix, t.db, Date.now, () => watchB.live)
    const verdict = (spend: SpendLimits, limits: SpendLimit[]) => {
      try {
        return Promise.resolve(spend.check(limits))
      } catch (err) {
        return Promise.reject(err as Error)
      }
    }
    const owner = randomUUID()
    const limit: SpendLimit = { owner, of: 'key', pico: 1_000n, reset: 'daily', includeByok: false }
    const other: SpendLimit = { owner: randomUUID(), of: 'workspace', pico: 10n ** 18n, reset: null, includeByok: true }
    const mget = vi.spyOn(redis, 'mget')
    try {
      await vi.waitFor(async () =>
        expect(await redis.pubsub('NUMSUB', spendEventsChannel(prefix))).toEqual([spendEventsChannel(prefix), 1]),
      )
      await verdict(spendB, [limit, other])
      expect(mget).toHaveBeenCalledTimes(1)
      // Read once, known for a second: checks need no read and no promise.
      for (let i = 0; i < 20; i++) expect(spendB.check([limit, other])).toBeUndefined()
      // A's spend below the limit publishes nothing, and B goes on without reading.
      await ledgerA.append([generationRecord({ id: randomUUID(), key_id: owner, cost_pico: '600' })], [limit, other])
      expect(await redis.get(spendCounter(prefix, limit, limitPeriod(limit, new Date())))).toBe('600')
      expect(spendB.check([limit, other])).toBeUndefined()
      expect(mget).toHaveBeenCalledTimes(1)
      // The append that reaches the limit: A's own check knows at once, B as soon as it reads its socket.
      await ledgerA.append([generationRecord({ id: randomUUID(), key_id: owner, cost_pico: '400' })], [limit, other])
      await expect(verdict(spendA, [limit])).rejects.toThrow(/spent its limit of \$0\.000000/)
      await vi.waitFor(() => expect(() => spendB.check([limit])).toThrow(/spent its limit/), { timeout: 200 })
      // Neither read the counter for it (B's one read was the first).
      expect(mget).toHaveBeenCalledTimes(1)
      // The other limit on the same request was not reached: it is no reason to refuse.
      expect(spendB.check([other])).toBeUndefined()

      // A change to keys or limits: B reads afresh.
      spendB.forget()
      await expect(verdict(spendB, [other])).resolves.toBeUndefined()
      expect(mget).toHaveBeenCalledTimes(2)
      // Without its subscriber B hears nothing, so it trusts nothing: every check reads.
      watchB.close()
      await vi.waitFor(() => expect(watchB.live).toBe(false))
      await expect(verdict(spendB, [other])).resolves.toBeUndefined()
      await expect(verdict(spendB, [limit])).rejects.toThrow(/spent its limit/)
      expect(mget).toHaveBeenCalledTimes(4)
    } finally {
      mget.mockRestore()
      watchB.close()
    }
  })

  it('goes on with the ledger’s count when Redis stops answering a read (a host cut off), and reads again once it answers', async () => {
    const proxy = await redisProxy(redisUrl())
    const stalled = connectRedis(
      { REDIS_URL: proxy.url },
      { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false },
    )
    await stalled.connect()
    const prefix = `{t-spend-${randomUUID().slice(0, 8)}}`
    const spend = new SpendLimits(stalled, prefix, t.db)
    // Spent by Redis's counter; the ledger in Postgres has nothing of it yet.
    const limit: SpendLimit = { owner: randomUUID(), of: 'key', pico: 1_000n, reset: null, includeByok: false }
    await redis.set(spendCounter(prefix, limit, limitPeriod(limit, new Date())), '1000')
    try {
      await expect(spend.check([limit])).rejects.toThrow(/spent its limit/)
      proxy.freeze()
      // The connection still looks ready, and nothing answers: the checks go on with the ledger's
      // count alone (nothing spent there), those waiting behind the stuck read as well, none hangs.
      const first = spend.check([limit])
      const behind = spend.check([limit])
      await expect(Promise.all([first, behind])).resolves.toEqual([undefined, undefined])
      await expect(spend.check([limit])).resolves.toBeUndefined()
      proxy.thaw()
      await expect(spend.check([limit])).rejects.toThrow(/spent its limit/)
    } finally {
      stalled.disconnect()
      await proxy.close()
    }
  })
})
