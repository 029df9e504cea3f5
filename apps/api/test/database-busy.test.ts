import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import Fastify from 'fastify'
import { createTestDatabase, type TestDatabase } from '@roster/testing'
import { isDatabaseBusy } from '@roster/shared'
import { registerErrorHandling } from '../src/plugins/errors.js'

// A burst of requests that each write in a transaction, more than the pool has connections: they
// wait their turn as plain queries do (Prisma's own 2 s wait failed a hundred Slack events at once
// on a loaded machine with 500s). And a transaction that still cannot start is a 503 to retry.
let t: TestDatabase
beforeAll(async () => {
  t = await createTestDatabase(2)
})
afterAll(async () => t?.drop())

const hold = (ms: number) => t.db.$transaction((tx) => tx.$queryRaw`SELECT pg_sleep(${ms / 1000})::text`)

describe('a database busier than its pool', () => {
  it('lets a burst of transactions wait for a connection, past the 2 s Prisma gives by default', async () => {
    // 40 transactions of 200 ms on 2 connections: the last starts some 4 s after it was asked.
    const started = Date.now()
    const results = await Promise.allSettled(Array.from({ length: 40 }, () => hold(200)))
    expect(results.filter((r) => r.status === 'rejected')).toEqual([])
    expect(Date.now() - started).toBeGreaterThan(2_000)
  })

  it('answers a transaction that could not start 503 overloaded with Retry-After, saying nothing was changed', async () => {
    const busy = [hold(1_500), hold(1_500)]
    const app = Fastify()
    registerErrorHandling(app)
    app.get('/write', async () => t.db.$transaction((tx) => tx.$queryRaw`SELECT 1`, { maxWait: 50 }))
    const res = await app.inject({ method: 'GET', url: '/write' })
    await Promise.all(busy)
    await app.close()
    expect(res.statusCode).toBe(503)
    expect(res.headers['retry-after']).toBe('1')
    const body = res.json()
    expect(body.error.metadata.reason).toBe('overloaded')
    expect(body.error.message).toMatch(/nothing was changed/)
    // The error the route met is Prisma's own, not one of ours.
    const met = await Promise.allSettled([
      hold(500),
      hold(500),
      t.db.$transaction((tx) => tx.$queryRaw`SELECT 1`, { maxWait: 50 }),
    ])
    expect(met[2].status === 'rejected' && isDatabaseBusy(met[2].reason)).toBe(true)
  })
})
