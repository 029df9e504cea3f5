import { afterAll, expect, it } from 'vitest'
import { randomUUID } from 'node:crypto'
import { generationRecord, redisUrl } from '@roster/testing'
import { connectRedis } from './redis.js'
import { countEndpointHealth, readEndpointHealth } from './endpoint-health.js'

// Endpoint health counted from drained generations into a real Redis and read back: attempts that
// failed count against uptime, rate-limited ones not at all, and time to first token lands in its
// percentile bins; old minutes leave the 30-minute window but stay in the day's.
const redis = connectRedis({ REDIS_URL: redisUrl() })
afterAll(() => redis.disconnect())

it('counts each attempt at an endpoint, leaving rate limits out, and reads uptime and first-token percentiles', async () => {
  const prefix = `t-health-${randomUUID()}`
  const now = Date.now()
  const at = (minutesAgo: number) => new Date(now - minutesAgo * 60_000).toISOString()
  const call = (n: number, over: Parameters<typeof generationRecord>[0]) =>
    Array.from({ length: n }, (_, i) => generationRecord({ ...over, id: `${over.id}-${i}` }))
  await countEndpointHealth(redis, prefix, [
    // 8 fast successes at a, now.
    ...call(8, {
      id: 'ok',
      model: 'm/x',
      provider: 'a',
      ttft_ms: 120,
      created_at: at(0),
      provider_responses: [{ provider_name: 'a', status: 200, latency: 130 }],
    }),
    // 2 calls that failed at a and went on to b: a's failures, b's successes (slow).
    ...call(2, {
      id: 'fell-back',
      model: 'm/x',
      provider: 'b',
      ttft_ms: 2_500,
      created_at: at(1),
      provider_responses: [
        { provider_name: 'a', status: 502, latency: 40 },
        { provider_name: 'b', status: 200, latency: 2_600 },
      ],
    }),
    // Rate limited at a: neither up nor down.
    ...call(5, {
      id: 'limited',
      model: 'm/x',
      provider: 'b',
      ttft_ms: null,
      created_at: at(2),
      provider_responses: [
        { provider_name: 'a', status: 429, latency: 5 },
        { provider_name: 'b', status: 200, latency: 90 },
      ],
    }),
    // An hour ago, a failure at a: in the day's uptime, not the last 30 minutes'.
    ...call(1, {
      id: 'old',
      model: 'm/x',
      provider: 'a',
      ttft_ms: null,
      created_at: at(61),
      finish_reason: 'error',
      provider_responses: [{ provider_name: 'a', status: 500, latency: 10 }],
    }),
    // Another model's calls at a: apart.
    ...call(3, {
      id: 'other',
      model: 'm/y',
      provider: 'a',
      ttft_ms: 50,
      created_at: at(0),
      provider_responses: [{ provider_name: 'a', status: 500, latency: 10 }],
    }),
  ])
  const health = await readEndpointHealth(redis, prefix, 'm/x', ['a', 'b', 'c'], now)
  expect(health.get('a')).toEqual({
    uptime_last_5m: 80,
    uptime_last_30m: 80,
    uptime_last_1d: expect.closeTo((8 / 11) * 100, 1),
    latency_last_30m: { p50: 200, p75: 200, p90: 200, p99: 200 },
  })
  expect(health.get('b')).toMatchObject({
    uptime_last_30m: 100,
    // 2 of 2 timed calls were slow (the rate-limited ones reported no first token).
    latency_last_30m: { p50: 3_000, p99: 3_000 },
  })
  expect(health.get('c')).toEqual({
    uptime_last_5m: null,
    uptime_last_30m: null,
    uptime_last_1d: null,
    latency_last_30m: null,
  })
  expect((await readEndpointHealth(redis, prefix, 'm/y', ['a'], now)).get('a')?.uptime_last_30m).toBe(0)
  // Kept for a while, then gone: every key expires.
  const keys = await redis.keys(`${prefix}:health:*`)
  for (const key of keys) expect(await redis.ttl(key)).toBeGreaterThan(0)
  await redis.del(...keys)
})
