import { randomBytes } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { adminUrl, generationRecord, repoRoot, serverUrl, TEST_DB_PREFIX, useTestTenant } from '@roster/testing'
import {
  generationById,
  generationPartitions,
  insertGenerations,
  keepGenerationPartitions,
  partitionName,
  PARTITION_DAYS_AHEAD,
} from '@roster/shared/repositories'

// The generations partitioned by day (issue 60): the worker's sweep makes the coming days' partitions
// and drops those past the retention, a write into a day without one makes it, and what was counted
// from dropped rows (spend, rollups) stays. Real Postgres, the migrated schema.

const env = useTestTenant()
const DAY = 86_400_000
const day = (t: number) => new Date(Math.floor(t / DAY) * DAY)
/** A request id as the gateway makes one (its second first). */
const idAt = (t: Date, n: number) =>
  `resp_${Math.floor(t.getTime() / 1000)
    .toString(16)
    .padStart(8, '0')}${'ab'.repeat(8)}${n.toString(16).padStart(8, '0')}`

describe('the generations’ day partitions', () => {
  it('holds what was written before partitioning in one partition, and makes the coming days ahead, once', async () => {
    const now = new Date()
    const before = await generationPartitions(env.t.db)
    expect(before[0]).toMatchObject({ name: 'generations_history', from: null })
    const { made } = await keepGenerationPartitions(env.t.db, 90, now)
    const after = await generationPartitions(env.t.db)
    // Every day from today to a week ahead is covered, and no two partitions overlap.
    for (let i = 0; i <= PARTITION_DAYS_AHEAD; i++) {
      const d = new Date(day(now.getTime()).getTime() + i * DAY)
      expect(after.filter((p) => (p.from === null || p.from <= d) && d < p.to)).toHaveLength(1)
    }
    expect(made.length).toBe(after.length - before.length)
    // Run again, and by two workers at once: nothing more, and no error.
    const again = await Promise.all([
      keepGenerationPartitions(env.t.db, 90, now),
      keepGenerationPartitions(env.t.db, 90, now),
    ])
    expect(again.flatMap((a) => a.made)).toEqual([])
  })

  it('makes a day’s partition when a write finds it missing, and writes each record once', async () => {
    const far = new Date(Date.now() + 40 * DAY)
    const name = partitionName(day(far.getTime()))
    expect((await generationPartitions(env.t.db)).map((p) => p.name)).not.toContain(name)
    const record = generationRecord({
      id: idAt(far, 1),
      created_at: far.toISOString(),
      account_id: env.tenant.accountId,
      key_id: null,
      cost_pico: '5000',
    })
    expect((await insertGenerations(env.t.db, [record])).map((r) => r.id)).toEqual([record.id])
    expect((await generationPartitions(env.t.db)).map((p) => p.name)).toContain(name)
    // The same record again (a retried batch): written once.
    expect(await insertGenerations(env.t.db, [record])).toEqual([])
    expect(await generationById(env.t.db, env.tenant.accountId, record.id)).toMatchObject({ id: record.id })
  })

  it('reads only the days around an id’s second, and every day for an id that does not say', async () => {
    const now = new Date()
    const plan = async (id: string) =>
      (
        await env.t.db.$queryRawUnsafe<{ 'QUERY PLAN': string }[]>(
          `EXPLAIN SELECT * FROM generations WHERE id = $1 AND account_id = $2::uuid` +
            (id.length === 37 ? ` AND created_at >= $3 AND created_at < $4` : ''),
          id,
          env.tenant.accountId,
          ...(id.length === 37 ? [new Date(now.getTime() - 3_600_000), new Date(now.getTime() + 2 * DAY)] : []),
        )
      )
        .map((r) => r['QUERY PLAN'])
        .join('\n')
    const partitions = (await generationPartitions(env.t.db)).map((p) => p.name)
    const read = (text: string) => partitions.filter((p) => new RegExp(`\\b${p}\\b`).test(text))
    expect(partitions.length).toBeGreaterThan(4)
    expect(read(await plan(idAt(now, 7))).length).toBeLessThanOrEqual(3)
    expect(read(await plan(`resp_${'c'.repeat(24)}`))).toEqual(partitions)
  })

  it('drops a day whole once it has outlived the retention; the spend and rollups counted from it stay', async () => {
    const soon = new Date(Date.now() + 20 * DAY)
    const keyId = (await env.t.db.apiKey.findFirstOrThrow({ where: { workspaceId: env.tenant.workspaceId } })).id
    const record = generationRecord({
      id: idAt(soon, 2),
      created_at: soon.toISOString(),
      account_id: env.tenant.accountId,
      workspace_id: env.tenant.workspaceId,
      key_id: keyId,
      cost_pico: '7000',
    })
    await insertGenerations(env.t.db, [record])
    const spent = () =>
      env.t.db.$queryRawUnsafe<{ credits: string }[]>(
        `SELECT credits_pico::text AS credits FROM spend WHERE owner_id = $1::uuid AND period = 'all'`,
        keyId,
      )
    const rolled = () =>
      env.t.db.$queryRawUnsafe<{ n: number }[]>(
        `SELECT count(*)::int AS n FROM generation_rollups WHERE key_id = $1::uuid`,
        keyId,
      )
    const [spentBefore, rolledBefore] = [await spent(), await rolled()]
    expect(BigInt(spentBefore[0]!.credits)).toBeGreaterThanOrEqual(7000n)

    // Ninety days after that day has ended (and not a day sooner), it is dropped.
    const dayOf = day(soon.getTime())
    const keepUntil = new Date(dayOf.getTime() + 91 * DAY - 1)
    expect((await keepGenerationPartitions(env.t.db, 90, keepUntil)).dropped).not.toContain(partitionName(dayOf))
    const { dropped } = await keepGenerationPartitions(env.t.db, 90, new Date(dayOf.getTime() + 91 * DAY))
    expect(dropped).toContain(partitionName(dayOf))
    expect(await generationById(env.t.db, env.tenant.accountId, record.id)).toBeUndefined()
    expect(await spent()).toEqual(spentBefore)
    expect(await rolled()).toEqual(rolledBefore)
    // A partition still within the retention is kept: the days ahead were made from that later "now".
    const left = (await generationPartitions(env.t.db)).map((p) => p.name)
    expect(left).toContain(partitionName(new Date(dayOf.getTime() + 91 * DAY)))
  })
})

describe('the migration that partitions the generations, on a database that has some', () => {
  it('keeps every row, a clock’s future ones too, and takes new days after them', async () => {
    const name = `${TEST_DB_PREFIX}upgrade_${randomBytes(4).toString('hex')}`
    const admin = new pg.Client({ connectionString: adminUrl() })
    await admin.connect()
    await admin.query(`CREATE DATABASE ${name}`)
    const client = new pg.Client({ connectionString: serverUrl(name) })
    await client.connect()
    try {
      // Every migration before it, as `prisma migrate deploy` applies them.
      const dir = join(repoRoot, 'prisma', 'migrations')
      const all = readdirSync(dir)
        .filter((d) => /^\d{14}_/.test(d))
        .sort()
      const at = all.findIndex((d) => d.endsWith('_generations_partitioned'))
      expect(at).toBeGreaterThan(0)
      for (const m of all.slice(0, at)) await client.query(readFileSync(join(dir, m, 'migration.sql'), 'utf8'))
      // Rows of the last days, and one a clock ahead wrote ten days from now.
      const times = [-40, -1, 0, 10].map((d) => new Date(Date.now() + d * DAY))
      for (const [i, t] of times.entries())
        await client.query(
          `INSERT INTO generations (id, request_id, created_at, model, door, tokens_prompt, tokens_completion,
             tokens_reasoning, tokens_cached, cost_pico, streamed, cancelled)
           VALUES ($1, $1, $2, 'm/x', 'responses', 1, 1, 0, 0, 1, false, false)`,
          [`resp_old${i}`, t],
        )
      await client.query(readFileSync(join(dir, all[at]!, 'migration.sql'), 'utf8'))
      const rows = await client.query(`SELECT id, tableoid::regclass::text AS part FROM generations ORDER BY id`)
      expect(rows.rows).toEqual(times.map((_, i) => ({ id: `resp_old${i}`, part: 'generations_history' })))
      // Its range ends after the latest row's day: a day after that is a new partition's.
      const bound = await client.query(
        `SELECT pg_get_expr(c.relpartbound, c.oid) AS b FROM pg_class c WHERE relname = 'generations_history'`,
      )
      const to = new Date(/TO \('([^']+)'\)/.exec(bound.rows[0].b)![1]!)
      expect(to.getTime()).toBe(day(times[3]!.getTime()).getTime() + DAY)
      // The rest of the migrations apply after it.
      for (const m of all.slice(at + 1)) await client.query(readFileSync(join(dir, m, 'migration.sql'), 'utf8'))
    } finally {
      await client.end()
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await admin.end()
    }
  })
})
