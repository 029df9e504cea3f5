import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { randomUUID } from 'node:crypto'
import { connectRedis, type RedisClient } from '@roster/shared'
import { redisProxy, redisUrl } from '@roster/testing'
import { publishChange } from './change-events.js'

// A change is answered only once its event is in every subscriber's socket. PUBLISH's reply leaves
// Redis just before the messages it published (change-events.ts says why), so the publisher asks
// Redis once more after that reply: watched here on the wire, through a proxy that writes down what
// passes each way, in order.
const channel = `t-change-${randomUUID().slice(0, 8)}`
let subscriber: RedisClient
const heard: string[] = []
beforeAll(async () => {
  subscriber = connectRedis({ REDIS_URL: redisUrl() })
  subscriber.on('message', (_channel: string, message: string) => heard.push(message))
  await subscriber.subscribe(channel)
})
afterAll(() => subscriber?.disconnect())

describe('publishChange', () => {
  it('resolves after a round trip begun once PUBLISH was answered, with the event already heard by a subscriber', async () => {
    const proxy = await redisProxy(redisUrl())
    const publisher = connectRedis({ REDIS_URL: proxy.url }, { lazyConnect: true })
    await publisher.connect()
    try {
      for (let i = 0; i < 50; i++) {
        proxy.wire.length = 0
        let resolved = -1
        await publishChange(publisher, channel, `e${i}`).then(() => (resolved = proxy.wire.length))
        // Heard here before the promise's own continuation ran: in the socket before the answer was.
        expect(heard).toContain(`e${i}`)
        const publish = proxy.wire.findIndex((w) => w.to === 'redis' && /PUBLISH/i.test(w.text))
        const reply = proxy.wire.findIndex((w, at) => at > publish && w.to === 'client' && /^:\d+/.test(w.text))
        const next = proxy.wire.findIndex((w, at) => at > reply && w.to === 'redis')
        expect(publish, JSON.stringify(proxy.wire)).toBeGreaterThanOrEqual(0)
        expect(reply, JSON.stringify(proxy.wire)).toBeGreaterThan(publish)
        // The second command left only after the reply came back (not pipelined behind PUBLISH),
        // and the promise waited for its answer.
        expect(next, JSON.stringify(proxy.wire)).toBeGreaterThan(reply)
        const answered = proxy.wire.findIndex((w, at) => at > next && w.to === 'client')
        expect(answered, JSON.stringify(proxy.wire)).toBeGreaterThan(next)
        expect(resolved).toBeGreaterThan(answered)
      }
    } finally {
      publisher.disconnect()
      await proxy.close()
    }
  })

  it('resolves without Redis, and when Redis goes away mid-way (the caches expire by themselves)', async () => {
    const proxy = await redisProxy(redisUrl())
    const publisher = connectRedis(
      { REDIS_URL: proxy.url },
      { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null },
    )
    // Not connected: nothing is sent.
    await expect(publishChange(publisher, channel, 'unsent')).resolves.toBeUndefined()
    expect(proxy.wire).toEqual([])
    await publisher.connect()
    proxy.onCommand = () => proxy.cut()
    await expect(publishChange(publisher, channel, 'cut')).resolves.toBeUndefined()
    publisher.disconnect()
    await proxy.close()
  })
})
