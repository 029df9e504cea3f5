import { afterAll, describe, expect, it } from 'vitest'
import { randomUUID } from 'node:crypto'
import { connectRedis } from '@roster/shared'
import { redisUrl } from '@roster/testing'
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
})
