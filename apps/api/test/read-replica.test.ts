import { afterAll, beforeAll, expect, it } from 'vitest'
import { spawnSync } from 'node:child_process'
import { createDb, type Db } from '@roster/shared'
import { insertGenerations } from '@roster/shared/repositories'
import {
  describeNeeding,
  generationRecord,
  makeTenant,
  repoRoot,
  startReplicatedPostgres,
  type ReplicatedPostgres,
  type Tenant,
} from '@roster/testing'
import { buildTestApp } from './helpers.js'

// DATABASE_READ_URL (issue 60): a real streaming replica of a primary, both Postgres processes of
// this test's own. With the replica's replay paused, what the primary gained meanwhile is not in
// the generations list, the analytics or the audit log (they are read from the replica), while
// writes and keys (the primary) go on at once; GET /generation finds a call the replica has not
// replayed yet on the primary. Replay resumed, the reads catch up.
let pg: ReplicatedPostgres
let db: Db
let tenant: Tenant
let app: Awaited<ReturnType<typeof buildTestApp>>
let base: string

await describeNeeding(['postgres-server'], 'a read replica', () => {
  beforeAll(async () => {
    pg = await startReplicatedPostgres()
    const migrated = spawnSync(process.execPath, ['prisma/migrate.mjs', 'deploy'], {
      cwd: repoRoot,
      env: { ...process.env, DATABASE_URL: pg.primaryUrl },
      encoding: 'utf8',
    })
    if (migrated.status !== 0) throw new Error(`migrations failed: ${migrated.stderr}`)
    db = createDb({ url: pg.primaryUrl })
    tenant = await makeTenant(db)
    app = await buildTestApp(db, { DATABASE_READ_URL: pg.replicaUrl, ANALYTICS_CACHE_MS: '0' })
    base = `${await app.listen({ port: 0, host: '127.0.0.1' })}/api/v1`
  }, 120_000)
  afterAll(async () => {
    await app?.closeAll()
    await db?.$disconnect()
    await pg?.stop()
  })

  const as = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' })
  const listed = async () =>
    (
      (await (await fetch(`${base}/generations`, { headers: as(tenant.keys.management) })).json()) as {
        data: { id: string }[]
      }
    ).data.map((g) => g.id)
  const requests = async () =>
    (
      (await (
        await fetch(`${base}/analytics/query`, {
          method: 'POST',
          headers: as(tenant.keys.management),
          body: JSON.stringify({ metrics: ['request_count'] }),
        })
      ).json()) as { data: { data: { request_count: number | null }[] } }
    ).data.data[0]?.request_count
  const call = (id: string) =>
    generationRecord({
      id,
      account_id: tenant.accountId,
      workspace_id: tenant.workspaceId,
      model: 'm/x',
      provider: 'p',
      cost_pico: '1000000',
      provider_responses: [{ provider_name: 'p', status: 200, latency: 5 }],
    })

  it('reads generations, analytics and the audit log from the replica, and writes to the primary', async () => {
    await insertGenerations(db, [call('gen-before')])
    await pg.caughtUp()
    expect(await listed()).toEqual(['gen-before'])

    await pg.pauseReplay()
    try {
      await insertGenerations(db, [call('gen-during')])
      // A write (the primary) goes on, and its key authenticates at once (keys are read there).
      const made = await fetch(`${base}/keys`, {
        method: 'POST',
        headers: as(tenant.keys.management),
        body: JSON.stringify({ name: 'made while the replica lags' }),
      })
      expect(made.status).toBe(201)
      const { key } = (await made.json()) as { key: string }
      expect((await fetch(`${base}/key`, { headers: as(key) })).status).toBe(200)
      // The replica's reads do not have them yet.
      expect(await listed()).toEqual(['gen-before'])
      expect(await requests()).toBe(1)
      const audit = (await (
        await fetch(`${base}/audit-log?action=key.create`, { headers: as(tenant.keys.management) })
      ).json()) as {
        data: unknown[]
      }
      expect(audit.data).toEqual([])
      // One generation asked for by id: not replayed yet, so read from the primary.
      const one = await fetch(`${base}/generation?id=gen-during`, { headers: as(tenant.keys.management) })
      expect(one.status).toBe(200)
    } finally {
      await pg.resumeReplay()
    }
    await pg.caughtUp()
    expect(await listed()).toEqual(['gen-during', 'gen-before'])
    expect(await requests()).toBe(2)
    const audit = (await (
      await fetch(`${base}/audit-log?action=key.create`, { headers: as(tenant.keys.management) })
    ).json()) as {
      data: unknown[]
    }
    expect(audit.data).toHaveLength(1)
  })
})
