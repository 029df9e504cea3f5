import { afterAll, describe, expect, it } from 'vitest'
import { randomUUID } from 'node:crypto'
import { Queue, QueueEvents, Worker } from 'bullmq'
import type { Redis } from 'ioredis'
import { connectRedis, retryFailedDeliveries } from '@roster/shared'
import { redisUrl } from '@roster/testing'

// A destination's failed deliveries go again from two places at once (the API on an update, the
// worker when a delivery gets through): against a real Redis and BullMQ, both finish, and each job
// goes again once.
// One server (no REDIS_CLUSTER_NODES): the connection is a Redis, which BullMQ duplicates per queue.
const connection = connectRedis({ REDIS_URL: redisUrl() }, { maxRetriesPerRequest: null }) as Redis
afterAll(() => connection.disconnect())

describe('retryFailedDeliveries', () => {
  it('sends each failed delivery again once when the API and the worker both do it at once', async () => {
    const prefix = `{t-retry-${randomUUID().slice(0, 8)}}`
    const name = 'deliveries'
    const queue = new Queue(name, { connection, prefix })
    const events = new QueueEvents(name, { connection: connection.duplicate(), prefix })
    let failing = true
    const tries = new Map<string, number>()
    const worker = new Worker(
      name,
      async (job) => {
        tries.set(job.id!, (tries.get(job.id!) ?? 0) + 1)
        if (failing) throw new Error('the receiver is down')
      },
      { connection: connection.duplicate(), prefix },
    )
    try {
      await events.waitUntilReady()
      const destinationId = randomUUID()
      const jobs = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          queue.add('delivery', { destinationId: i < 5 ? destinationId : randomUUID() }, { attempts: 1 }),
        ),
      )
      await Promise.allSettled(jobs.map((j) => j.waitUntilFinished(events)))
      expect(await queue.getFailedCount()).toBe(6)
      failing = false
      // Both at once: before, the slower one's retry of a job no longer failed threw (a 500 from the API).
      await expect(
        Promise.all([retryFailedDeliveries(queue, destinationId), retryFailedDeliveries(queue, destinationId)]),
      ).resolves.toBeDefined()
      await Promise.all(
        jobs.slice(0, 5).map((j) => queue.getJob(j.id!).then((again) => again!.waitUntilFinished(events))),
      )
      // The five went again once each; the other destination's delivery stays failed.
      expect(jobs.slice(0, 5).map((j) => tries.get(j.id!))).toEqual([2, 2, 2, 2, 2])
      expect(tries.get(jobs[5]!.id!)).toBe(1)
      expect(await queue.getFailedCount()).toBe(1)
    } finally {
      await worker.close()
      await events.close()
      await queue.obliterate({ force: true })
      await queue.close()
    }
  })
})
