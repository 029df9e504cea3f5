import { afterAll, describe, expect, it, vi } from 'vitest'
import { randomUUID } from 'node:crypto'
import { commandConnection, connectRedis } from '@roster/shared'
import { redisProxy, redisUrl } from '@roster/testing'
import { RequestRate } from './request-rate.js'

// Two "processes" (two RequestRates over one Redis) share one key's requests per minute.
const redis = connectRedis({ REDIS_URL: redisUrl() })
afterAll(() => redis.disconnect())

describe('RequestRate', () => {
  it('counts a key across processes through Redis, with no Redis call per request', async () => {
    const prefix = `{t-${randomUUID().slice(0, 8)}}`
    const at = 1_800_000_000_000 // 00:00 of a minute
    const one = new RequestRate(redis, prefix, 10, undefined, () => at + 1_000)
    const two = new RequestRate(redis, prefix, 10, undefined, () => at + 1_000)
    try {
      for (let i = 0; i < 6; i++) expect(one.take('k')).toBe(0)
      await one.sync()
      // A process learns a key's total at its first sync after its first request of that key.
      expect(two.take('k')).toBe(0)
      await two.sync()
      // `two` has learnt of one's 6 beside its own 1: 3 more pass, then it is refused until the minute ends.
      for (let i = 0; i < 3; i++) expect(two.take('k')).toBe(0)
      expect(two.take('k')).toBe(59)
      expect(two.take('other')).toBe(0)
      await two.sync()
      await one.sync()
      expect(one.take('k')).toBe(59)
      expect(Number(await redis.get(`${prefix}:rpm:k:${Math.floor((at + 1_000) / 60_000)}`))).toBe(10)
    } finally {
      one.close()
      two.close()
    }
  })

  it('starts afresh in the next minute, and goes on alone when Redis cannot be reached', async () => {
    let now = 1_800_000_000_000
    const down = connectRedis(
      { REDIS_URL: 'redis://127.0.0.1:1' },
      { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0 },
    )
    down.on('error', () => {})
    const errors: unknown[] = []
    const sut = new RequestRate(
      down,
      '{t}',
      3,
      (err) => errors.push(err),
      () => now,
    )
    try {
      for (let i = 0; i < 3; i++) expect(sut.take('k')).toBe(0)
      expect(sut.take('k')).toBe(60)
      await sut.sync()
      expect(errors.length).toBe(1)
      expect(sut.take('k')).toBe(60) // still counted locally
      now += 60_000
      expect(sut.take('k')).toBe(0)
    } finally {
      sut.close()
      down.disconnect()
    }
  })

  it('goes on alone while Redis stops answering (a host cut off), and shares its count again once it answers', async () => {
    const proxy = await redisProxy(redisUrl())
    // The API's own kind of connection, with a short REDIS_COMMAND_TIMEOUT_MS.
    const stalled = commandConnection({ REDIS_URL: proxy.url, REDIS_COMMAND_TIMEOUT_MS: 300 }, { lazyConnect: true })
    stalled.on('error', () => {})
    await stalled.connect()
    const prefix = `{t-${randomUUID().slice(0, 8)}}`
    const at = 1_800_000_000_000
    const errors: unknown[] = []
    const sut = new RequestRate(
      stalled,
      prefix,
      10,
      (err) => errors.push(err),
      () => at + 1_000,
    )
    try {
      proxy.freeze()
      for (let i = 0; i < 4; i++) expect(sut.take('k')).toBe(0)
      // The sync fails instead of waiting for good (which would stop every later sync: one runs at a time).
      await sut.sync()
      expect(errors).toHaveLength(1)
      proxy.thaw()
      // The four are still this process's own, added on a later sync once the connection is back.
      await vi.waitFor(
        async () => {
          await sut.sync()
          expect(await redis.get(`${prefix}:rpm:k:${Math.floor((at + 1_000) / 60_000)}`)).toBe('4')
        },
        { timeout: 10_000, interval: 100 },
      )
    } finally {
      sut.close()
      stalled.disconnect()
      await proxy.close()
    }
  })
})
