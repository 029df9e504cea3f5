import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { randomUUID } from 'node:crypto'
import { createLogger, loadConfig, WorkerConfig } from '@roster/shared'
import { makeIntern, makeTenant, redisUrl, useTestTenant } from '@roster/testing'
import { startWorker, type RunningWorker } from '../src/worker.js'

const env = useTestTenant()
let sut: RunningWorker

beforeAll(async () => {
  const config = loadConfig(WorkerConfig, {
    DATABASE_URL: env.t.url,
    REDIS_URL: redisUrl(),
    QUEUE_PREFIX: `{t-${randomUUID().slice(0, 8)}}`,
    VAULT_MASTER_KEY: 'ab'.repeat(32),
    IDEMPOTENCY_TTL_HOURS: '1',
    RUNTIME_TOKEN: 'c'.repeat(32),
    LOG_LEVEL: 'silent',
  })
  sut = await startWorker(config, createLogger('worker', 'silent'))
})
afterAll(async () => {
  await sut?.stop()
})

describe('the idempotency sweep', () => {
  it('forgets records older than the TTL, in batches, and keeps fresh ones', async () => {
    const tenant = await makeTenant(env.t.db)
    const key = await env.t.db.apiKey.findFirstOrThrow({ where: { workspaceId: tenant.workspaceId, kind: 'user' } })
    const old = new Date(Date.now() - 2 * 3_600_000)
    await env.t.db.$executeRaw`
      INSERT INTO idempotency_records (api_key_id, key, fingerprint, intern_id, created_at)
      SELECT ${key.id}::uuid, 'old-' || g, '\\x00'::bytea, gen_random_uuid(), ${old} FROM generate_series(1, 12000) g`
    await env.t.db.$executeRaw`
      INSERT INTO idempotency_records (api_key_id, key, fingerprint, intern_id)
      SELECT ${key.id}::uuid, 'fresh-' || g, '\\x00'::bytea, gen_random_uuid() FROM generate_series(1, 10) g`
    expect(await sut.reconciler.sweepIdempotencyRecords()).toBe(12000)
    expect(await env.t.db.idempotencyRecord.count()).toBe(10)
    expect(await env.t.db.idempotencyRecord.count({ where: { key: { startsWith: 'fresh-' } } })).toBe(10)
  })
})

describe('the reconciler', () => {
  it('re-enqueues a queued intern whose job vanished, once, and leaves fresh ones to the relay', async () => {
    const tenant = await makeTenant(env.t.db)
    const vault = await env.t.db.vault.create({
      data: { workspaceId: tenant.workspaceId, masterKeyId: randomUUID(), sealedDataKey: new Uint8Array(61) },
    })
    const stale = await makeIntern(env.t.db, tenant, { name: 'stale', vaultId: vault.id })
    await env.t.db.$executeRaw`UPDATE interns SET updated_at = now() - interval '1 hour' WHERE id = ${stale.id}::uuid`
    const fresh = await makeIntern(env.t.db, tenant, { name: 'fresh' })

    expect(await sut.reconciler.run()).toBe(1)
    const job = await sut.deps.queue.getJob(`intern.provision.${stale.id}.1`)
    expect(job?.data).toEqual({ internId: stale.id, generation: 1 })
    expect(await sut.deps.queue.getJob(`intern.provision.${fresh.id}.1`)).toBeUndefined()
    // The job is there now (waiting, active or retrying), so nothing is added twice.
    expect(await sut.reconciler.run()).toBe(0)
  })
})
