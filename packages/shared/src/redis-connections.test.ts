import { describe, expect, it } from 'vitest'
import { randomUUID } from 'node:crypto'
import { redisProxy, redisUrl } from '@roster/testing'
import { connectRedis } from './redis.js'
import { commandConnection } from './redis-connections.js'

// The command connection against a real Redis behind a proxy that can hold Redis's answers back (a
// host cut off: the socket stays open, nothing comes back).
describe('commandConnection', () => {
  it('fails a command Redis does not answer within REDIS_COMMAND_TIMEOUT_MS, and never runs it again once Redis answers', async () => {
    const proxy = await redisProxy(redisUrl())
    const direct = connectRedis({ REDIS_URL: redisUrl() })
    const redis = commandConnection({ REDIS_URL: proxy.url, REDIS_COMMAND_TIMEOUT_MS: 300 }, { lazyConnect: true })
    redis.on('error', () => {})
    const key = `t-command-${randomUUID()}`
    try {
      await redis.connect()
      proxy.freeze()
      const began = Date.now()
      // Redis gets the INCR (the proxy passes commands on) and runs it; its answer is held.
      await expect(redis.incr(key)).rejects.toThrow(/timed out/)
      expect(Date.now() - began).toBeLessThan(3_000)
      expect(await direct.get(key)).toBe('1')
      // While the connection is silent it is opened afresh; commands meanwhile fail at once.
      proxy.thaw()
      await expect
        .poll(
          async () =>
            redis.ping().then(
              () => redis.status,
              () => 'failing',
            ),
          { timeout: 10_000, interval: 50 },
        )
        .toBe('ready')
      // The INCR whose caller was told it failed was not sent again on the new connection.
      expect(await redis.get(key)).toBe('1')
    } finally {
      await direct.del(key)
      direct.disconnect()
      redis.disconnect()
      await proxy.close()
    }
  })
})
