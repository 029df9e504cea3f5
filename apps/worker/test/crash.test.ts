import { describe, expect, it } from 'vitest'
import { Queue } from 'bullmq'
import { Redis } from 'ioredis'
import { INTERN_QUEUE } from '@roster/shared'
import {
  apiClient,
  hashSlot,
  lacking,
  startRedisCluster,
  startRedisServer,
  startStack,
  waitFor,
  type Stack,
  useTestTenant,
} from '@roster/testing'

const env = useTestTenant()
const many = { INTERN_LIMIT_PER_MEMBER: '100000' }

const countByStatus = async (ids: string[], status: string) =>
  env.t.db.intern.count({ where: { id: { in: ids }, status: status as never } })

/** Creates `n` interns, `parallel` at a time, spread over the API processes given (round robin). */
async function createMany(baseUrls: string | string[], prefix: string, n: number, parallel = 16): Promise<string[]> {
  const apis = [baseUrls].flat().map((url) => apiClient(url, env.tenant.keys.user))
  const ids: string[] = []
  for (let i = 0; i < n; i += parallel) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(parallel, n - i) }, (_, j) =>
        apis[(i + j) % apis.length]!.createIntern({ name: `${prefix}-${i + j}`, provision: true }),
      ),
    )
    for (const res of batch) {
      expect(res.status).toBe(201)
      ids.push(res.body.id)
    }
  }
  return ids
}

/** No hostname or vault is shared, each vault holds one runtime token, and the runtime did each intern's work once. */
async function expectNoDuplicateWork(ids: string[], stack: Pick<Stack, 'runtimeFetch'>) {
  const rows = await env.t.db.intern.findMany({ where: { id: { in: ids } } })
  expect(rows.every((r) => r.status === 'running' && r.hostname && r.progress === null)).toBe(true)
  expect(new Set(rows.map((r) => r.hostname)).size).toBe(ids.length)
  expect(new Set(rows.map((r) => r.vaultId)).size).toBe(ids.length)
  const tokens = await env.t.db.vaultSecret.groupBy({
    by: ['vaultId'],
    where: { vaultId: { in: rows.map((r) => r.vaultId!) } },
    _count: true,
  })
  expect(tokens).toHaveLength(ids.length)
  expect(tokens.every((g) => g._count === 1)).toBe(true)
  const hosted = (await (await stack.runtimeFetch('/v1/interns')).json()).data as {
    id: string
    starts: number
    configWrites: number
    running: boolean
  }[]
  const mine = hosted.filter((h) => ids.includes(h.id))
  expect(mine).toHaveLength(ids.length)
  for (const h of mine)
    expect({ id: h.id, starts: h.starts, configWrites: h.configWrites, running: h.running }).toEqual({
      id: h.id,
      starts: 1,
      configWrites: 1,
      running: true,
    })
}

// Two of these kill Redis: private servers the test starts (redis-server and redis-cli). Each test
// waits for a hundred interns or more, twice: minutes on a loaded machine (180 s each).
const noRedisServer = await lacking(['redis-server'], 'the crash tests that kill Redis')

describe.skipIf(noRedisServer)('Redis stopped during creates', () => {
  it('answers 201 to every create, and every intern runs once Redis is back, even jobs Redis lost', async () => {
    const redis = await startRedisServer()
    const stack = await startStack({ databaseUrl: env.t.url, redisUrl: redis.url, env: many })
    const connection = new Redis(redis.url, { maxRetriesPerRequest: null })
    connection.on('error', () => {})
    const queue = new Queue(INTERN_QUEUE, { connection, prefix: stack.env.QUEUE_PREFIX })
    try {
      // Jobs that reach Redis and then die with it: the queue is paused, so they wait there.
      await queue.pause()
      const lostInRedis = await createMany(stack.apiUrl, 'lost', 10)
      await waitFor(async () => (await env.t.db.outboxMessage.count()) === 0, { what: 'relay to publish' })
      expect(await queue.getWaitingCount()).toBe(10)
      await queue.close()
      connection.disconnect()

      await redis.stop()
      const duringOutage = await createMany(stack.apiUrl, 'outage', 30)
      const ready = await fetch(stack.apiUrl.replace('/api/v1', '/ready'))
      expect(ready.status).toBe(503)
      expect(await countByStatus([...lostInRedis, ...duringOutage], 'queued')).toBe(40)

      await redis.start() // empty: nothing survived
      const all = [...lostInRedis, ...duringOutage]
      await waitFor(async () => (await countByStatus(all, 'running')) === all.length, {
        timeoutMs: 45_000,
        what: 'all interns running',
      })
      await expectNoDuplicateWork(all, stack)
    } finally {
      await queue.close().catch(() => {})
      connection.disconnect()
      await stack.stop()
      await redis.stop()
    }
  }, 180_000)
})

describe('a worker killed with SIGKILL while 100 interns provision', () => {
  it('leaves nothing behind: after a restart all reach running, with no duplicate hostnames or vaults', async () => {
    const stack = await startStack({
      databaseUrl: env.t.url,
      env: many,
      // Slow enough that the kill lands mid-run; short locks so the dead worker's jobs return quickly.
      workerEnv: { WORKER_CONCURRENCY: '4', JOB_LOCK_MS: '2000' },
    })
    try {
      const ids = await createMany(stack.apiUrl, 'kill', 100)
      await waitFor(async () => (await countByStatus(ids, 'running')) >= 20, {
        timeoutMs: 30_000,
        what: 'some interns running',
      })
      await stack.workers[0]!.kill('SIGKILL')
      const runningAtKill = await countByStatus(ids, 'running')
      expect(runningAtKill).toBeLessThan(100)
      // Nobody is working now: the only worker is dead, and the rest wait for the next one.
      expect(stack.workers.filter((w) => w.running)).toHaveLength(0)

      await stack.addWorker({ WORKER_CONCURRENCY: '50' })
      await waitFor(async () => (await countByStatus(ids, 'running')) === 100, {
        timeoutMs: 60_000,
        what: 'all 100 running',
      })
      await expectNoDuplicateWork(ids, stack)
    } finally {
      await stack.stop()
    }
  }, 180_000)
})

describe.skipIf(noRedisServer)('a Redis Cluster master killed while 100 interns provision', () => {
  it('has its replica promoted, and every intern still runs once: nothing lost, nothing done twice', async () => {
    const cluster = await startRedisCluster()
    const prefix = await cluster.prefixAwayFromSeed()
    const stack = await startStack({
      databaseUrl: env.t.url,
      redisUrl: cluster.url,
      env: { ...many, REDIS_CLUSTER_NODES: cluster.nodes, QUEUE_PREFIX: prefix },
      // Slow enough that the failover lands mid-run.
      workerEnv: { WORKER_CONCURRENCY: '4', JOB_LOCK_MS: '2000', RECONCILE_INTERVAL_MS: '500', STUCK_AFTER_MS: '3000' },
    })
    try {
      const ids = await createMany(stack.apiUrl, 'failover', 100)
      await waitFor(async () => (await countByStatus(ids, 'running')) >= 20, {
        timeoutMs: 30_000,
        what: 'some interns running',
      })
      const master = await cluster.masterOf(hashSlot(prefix))
      const killed = await cluster.failOver(hashSlot(prefix))
      expect(killed).toBe(master)
      expect(await cluster.masterOf(hashSlot(prefix))).not.toBe(master)
      expect(await countByStatus(ids, 'running')).toBeLessThan(100)

      await waitFor(async () => (await countByStatus(ids, 'running')) === 100, {
        timeoutMs: 60_000,
        what: 'all 100 running after the failover',
      })
      await expectNoDuplicateWork(ids, stack)
      const generations = await env.t.db.intern.groupBy({
        by: ['provisionGeneration'],
        where: { id: { in: ids } },
        _count: true,
      })
      expect(generations).toEqual([{ provisionGeneration: 1, _count: 100 }])
    } finally {
      await stack.stop()
      await cluster.stop()
    }
  }, 180_000)
})

describe('three API and three worker processes over 150 interns', () => {
  it('share the creates and the jobs, and each intern is provisioned once, each step’s work done once', async () => {
    const stack = await startStack({
      databaseUrl: env.t.url,
      env: many,
      apis: 3,
      workers: 3,
      workerEnv: { WORKER_CONCURRENCY: '10' },
    })
    try {
      expect(stack.apiUrls).toHaveLength(3)
      const ids = await createMany(stack.apiUrls, 'three', 150)
      await waitFor(async () => (await countByStatus(ids, 'running')) === 150, {
        timeoutMs: 60_000,
        what: 'all 150 running',
      })
      await expectNoDuplicateWork(ids, stack)

      // Each run that made one of these interns running was done by exactly one worker, and every
      // worker took part. (Interns of earlier tests in this database may be restored meanwhile:
      // their runtime hosts are gone, and the reconciler rightly provisions them again here.)
      const mine = new Set(ids)
      const runsBy = () =>
        stack.workers.map(
          (w) =>
            w.output
              .split('\n')
              .filter((line) => line.includes('"outcome":"running"'))
              .filter((line) => mine.has(/intern\.provision\.([0-9a-f-]{36})\./.exec(line)?.[1] ?? '')).length,
        )
      const total = () => runsBy().reduce((a, b) => a + b, 0)
      // A worker logs a run after committing it; give the last lines a moment to arrive.
      await waitFor(() => total() >= 150, { timeoutMs: 5_000, what: 'the workers’ log lines' }).catch(() => {})
      expect(total()).toBe(150)
      for (const n of runsBy()) expect(n).toBeGreaterThan(0)
      // One provisioning run each: no API or worker made a second.
      const generations = await env.t.db.intern.groupBy({
        by: ['provisionGeneration'],
        where: { id: { in: ids } },
        _count: true,
      })
      expect(generations).toEqual([{ provisionGeneration: 1, _count: 150 }])
    } finally {
      await stack.stop()
    }
  }, 180_000)
})
