import { afterAll, describe, expect, it } from 'vitest'
import { randomUUID } from 'node:crypto'
import pino from 'pino'
import { commandConnection, connectRedis, INTERN_QUEUE, Jobs, producerQueue, type WorkerConfig } from '@roster/shared'
import { redisProxy, redisUrl, useTestTenant, waitFor, type RedisProxy } from '@roster/testing'
import { createQueue, jobOptionsFor } from '../src/queue.js'
import { OutboxRelay } from '../src/relay.js'

// A Redis that stops answering while the relay publishes (a host cut off, or a cluster connection a
// failover left hanging: the socket stays open and nothing comes back) must not hold the outbox: the
// connection is judged dead after REDIS_COMMAND_TIMEOUT_MS, the publish fails, its transaction rolls
// back (the row waits, unlocked), and the row is published once Redis answers again. Before, the
// relay waited on the add for good, its transaction open and every later wake a no-op.
const env = useTestTenant()
const closers: (() => unknown)[] = []
afterAll(async () => {
  for (const close of closers.reverse()) await close()
})

describe('the outbox relay, Redis cut off mid-publish', () => {
  it('gives the publish up after REDIS_COMMAND_TIMEOUT_MS and publishes the row once Redis answers again', async () => {
    const prefix = `{relay-stall-${randomUUID().slice(0, 8)}}`
    const proxy: RedisProxy = await redisProxy(redisUrl())
    closers.push(() => proxy.close())
    const config = {
      REDIS_URL: proxy.url,
      QUEUE_PREFIX: prefix,
      REDIS_COMMAND_TIMEOUT_MS: 500,
      PROVISION_ATTEMPTS: 3,
      PROVISION_BACKOFF_MS: 100,
    } as WorkerConfig
    const { queue, connection } = createQueue(config, pino({ level: 'silent' }))
    closers.push(() => connection.disconnect())
    await queue.waitUntilReady()
    // The job as it is seen past the proxy.
    const direct = createQueue({ ...config, REDIS_URL: redisUrl() }, pino({ level: 'silent' }))
    closers.push(async () => {
      await direct.queue.obliterate({ force: true })
      direct.connection.disconnect()
    })

    const warned: string[] = []
    const log = pino({ level: 'warn' }, { write: (line: string) => void warned.push(JSON.parse(line).msg) })
    // The bell straight to Redis; the queue's connection through the proxy. A poll every 100 ms.
    const relay = new OutboxRelay(env.t.db, queue, { REDIS_URL: redisUrl() }, prefix, 100, jobOptionsFor(config), log)
    closers.push(() => relay.stop())

    proxy.freeze()
    const data = { internId: randomUUID(), generation: 1 }
    const jobId = Jobs['intern.provision'].jobId(data)
    await env.t.db
      .$executeRaw`INSERT INTO outbox (kind, job_id, payload) VALUES ('intern.provision', ${jobId}, ${JSON.stringify(data)}::jsonb)`
    const frozenAt = Date.now()
    await relay.start()
    await waitFor(() => warned.includes('outbox relay could not publish; will retry'), {
      timeoutMs: 10_000,
      what: 'the relay to give the publish up',
    })
    // Well before Prisma's 30 s transaction timeout. The row is still there, and not held: between
    // the relay's tries (each fails at once while the connection is not ready) another can lock it.
    expect(Date.now() - frozenAt).toBeLessThan(5_000)
    await waitFor(
      async () =>
        (
          await env.t.db.$transaction(
            (tx) => tx.$queryRaw<{ job_id: string }[]>`SELECT job_id FROM outbox FOR UPDATE SKIP LOCKED`,
          )
        ).some((r) => r.job_id === jobId),
      { timeoutMs: 5_000, what: 'the row, unlocked' },
    )

    proxy.thaw()
    await waitFor(
      async () => Number((await env.t.db.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM outbox`)[0]!.n) === 0,
      { timeoutMs: 20_000, what: 'the outbox to drain once Redis answers' },
    )
    expect((await direct.queue.getJob(jobId))?.data).toEqual(data)
  })
})

describe('a queue, Redis silent as it is made', () => {
  it('publishes once Redis answers (it does not keep the failure of a read made when it was made)', async () => {
    const proxy = await redisProxy(redisUrl())
    const connection = commandConnection({ REDIS_URL: proxy.url, REDIS_COMMAND_TIMEOUT_MS: 300 }, { lazyConnect: true })
    connection.on('error', () => {})
    const prefix = `{queue-stall-${randomUUID().slice(0, 8)}}`
    const direct = producerQueue(INTERN_QUEUE, connectRedis({ REDIS_URL: redisUrl() }), prefix)
    try {
      await connection.connect()
      proxy.freeze()
      // Made while nothing comes back (a worker started just before Redis was killed).
      const queue = producerQueue(INTERN_QUEUE, connection, prefix)
      queue.on('error', () => {})
      await expect(queue.add('intern.provision', { n: 1 }, { jobId: 'before' })).rejects.toThrow()
      await new Promise((r) => setTimeout(r, 400))
      proxy.thaw()
      await expect
        .poll(
          () =>
            queue.add('intern.provision', { n: 2 }, { jobId: 'after' }).then(
              () => 'added',
              (e: Error) => e.message,
            ),
          {
            timeout: 10_000,
            interval: 100,
          },
        )
        .toBe('added')
      expect((await direct.getJob('after'))?.data).toEqual({ n: 2 })
    } finally {
      await direct.obliterate({ force: true })
      await direct.close()
      connection.disconnect()
      await proxy.close()
    }
  })
})
