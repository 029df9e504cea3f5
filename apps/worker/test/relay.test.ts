import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { randomUUID } from 'node:crypto'
import pino from 'pino'
import { createMetrics, Jobs, type WorkerConfig } from '@roster/shared'
import { redisUrl, useTestTenant, waitFor } from '@roster/testing'
import { createQueue, jobOptionsFor } from '../src/queue.js'
import { OutboxRelay } from '../src/relay.js'

// The outbox relay against the real database and a real queue: rows it cannot publish are set
// aside, and the rest are published; one bad row never stalls the outbox.
const env = useTestTenant()
const config = {
  REDIS_URL: redisUrl(),
  QUEUE_PREFIX: `{relay-${randomUUID().slice(0, 8)}}`,
  PROVISION_ATTEMPTS: 3,
  PROVISION_BACKOFF_MS: 100,
} as WorkerConfig
const { queue, connection } = createQueue(config, pino({ level: 'silent' }))
let relay: OutboxRelay
const metrics = createMetrics('worker')

beforeAll(async () => {
  relay = new OutboxRelay(
    env.t.db,
    queue,
    config,
    config.QUEUE_PREFIX,
    60_000,
    jobOptionsFor(config),
    pino({ level: 'silent' }),
    metrics,
  )
})
afterAll(async () => {
  await relay.stop()
  await queue.obliterate({ force: true })
  await queue.close()
  connection.disconnect()
})

describe('the outbox relay', () => {
  it('sets aside rows it cannot publish (unknown kind, a payload that does not parse) and publishes the rest', async () => {
    const good = [randomUUID(), randomUUID()].map((internId) => ({ internId, generation: 1 }))
    const insert = (kind: string, jobId: string, payload: unknown) =>
      env.t.db
        .$executeRaw`INSERT INTO outbox (kind, job_id, payload) VALUES (${kind}, ${jobId}, ${JSON.stringify(payload)}::jsonb)`
    await insert('intern.provision', Jobs['intern.provision'].jobId(good[0]!), good[0])
    await insert('intern.provision', 'bad-payload', { internId: 'not-a-uuid', generation: 0 })
    await insert('intern.teleport', 'bad-kind', { internId: randomUUID() })
    await insert('intern.provision', Jobs['intern.provision'].jobId(good[1]!), good[1])
    await relay.start()
    await waitFor(
      async () => Number((await env.t.db.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM outbox`)[0]!.n) === 0,
      { timeoutMs: 10_000, what: 'the outbox to drain' },
    )

    const published = await queue.getJobs(['waiting', 'prioritized', 'delayed', 'active'])
    expect(published.map((j) => j.id).sort()).toEqual(good.map((g) => Jobs['intern.provision'].jobId(g)).sort())
    expect(published[0]!.opts.attempts).toBe(3)
    const dead = await env.t.db.$queryRaw<
      { kind: string; job_id: string; payload: unknown; error: string }[]
    >`SELECT kind, job_id, payload, error FROM outbox_dead_letters ORDER BY id`
    expect(dead).toEqual([
      {
        kind: 'intern.provision',
        job_id: 'bad-payload',
        payload: { internId: 'not-a-uuid', generation: 0 },
        error: expect.stringMatching(/does not fit intern\.provision: internId .*; generation/),
      },
      {
        kind: 'intern.teleport',
        job_id: 'bad-kind',
        payload: { internId: expect.any(String) },
        error: 'no job kind intern.teleport',
      },
    ])
    expect((await metrics.outboxDeadLetters.get()).values[0]!.value).toBe(2)
    expect(
      (await metrics.relayPublishLag.get()).values.find(
        (v) => v.metricName === 'roster_outbox_publish_lag_seconds_count',
      )!.value,
    ).toBe(2)
  })
})
