import type { Prisma } from '../../generated/prisma/client.js'
import type { Db } from '../../db.js'

// The generations table is partitioned by UTC day of created_at (the migration
// `generations_partitioned`): one partition a day, made ahead by the worker (and on demand by a
// write that finds its day missing), and dropped whole once past GENERATION_RETENTION_DAYS. What
// was written before partitioning is one partition of its own, up to the day after the migration.
// The rollups, the spend and the credits are other tables: they stay whole.

const DAY_MS = 86_400_000

/** The start (UTC midnight) of `t`'s day. */
export const dayStart = (t: Date) => new Date(Math.floor(t.getTime() / DAY_MS) * DAY_MS)

/** A day's partition's name: `generations_d20261130`. */
export const partitionName = (day: Date) => `generations_d${day.toISOString().slice(0, 10).replace(/-/g, '')}`

/** A partition of the generations, and the range of created_at it holds ([from, to); from null: MINVALUE). */
export interface GenerationPartition {
  name: string
  from: Date | null
  to: Date
}

/** The partitions of the generations, oldest first. */
export async function generationPartitions(db: Db | Prisma.TransactionClient): Promise<GenerationPartition[]> {
  const rows = await db.$queryRaw<{ name: string; bound: string }[]>`
    SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'generations'::regclass`
  return rows
    .map((r) => {
      // FOR VALUES FROM ('…') TO ('…'), or FROM (MINVALUE) TO ('…').
      const m = /FROM \((?:'([^']+)'|MINVALUE)\) TO \('([^']+)'\)/.exec(r.bound)
      return m ? { name: r.name, from: m[1] ? new Date(m[1]) : null, to: new Date(m[2]!) } : undefined
    })
    .filter((p): p is GenerationPartition => !!p)
    .sort((a, b) => a.to.getTime() - b.to.getTime())
}

/** One maintainer at a time: the partitions' DDL is not safe to race (two CREATEs of one day). */
const lock = (tx: Prisma.TransactionClient) =>
  tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('roster.generation_partitions'))`

/** Makes the day partitions `days` hold that no partition covers yet. Answers the names made. */
export async function ensureGenerationPartitions(db: Db, days: Date[]): Promise<string[]> {
  const wanted = [...new Map(days.map((d) => [dayStart(d).getTime(), dayStart(d)])).values()]
  return db.$transaction(async (tx) => {
    await lock(tx)
    const have = await generationPartitions(tx)
    const covered = (day: Date) => have.some((p) => (p.from === null || p.from <= day) && day < p.to)
    const made: string[] = []
    for (const day of wanted.filter((d) => !covered(d))) {
      const name = partitionName(day)
      const to = new Date(day.getTime() + DAY_MS)
      await tx.$executeRawUnsafe(
        `CREATE TABLE IF NOT EXISTS "${name}" PARTITION OF generations FOR VALUES FROM ('${day.toISOString()}') TO ('${to.toISOString()}')`,
      )
      made.push(name)
    }
    return made
  })
}

/** The days from `now`'s to `ahead` days after it. */
export const daysAhead = (now: Date, ahead: number) =>
  Array.from({ length: ahead + 1 }, (_, i) => new Date(dayStart(now).getTime() + i * DAY_MS))

/**
 * Drops the partitions whose every row is older than `retentionDays` days before `now` (a partition
 * is dropped whole, never a row at a time). Answers the names dropped.
 */
export async function dropExpiredGenerationPartitions(db: Db, now: Date, retentionDays: number): Promise<string[]> {
  const cutoff = new Date(dayStart(now).getTime() - retentionDays * DAY_MS)
  return db.$transaction(async (tx) => {
    await lock(tx)
    const expired = (await generationPartitions(tx)).filter((p) => p.to <= cutoff)
    for (const p of expired) await tx.$executeRawUnsafe(`DROP TABLE IF EXISTS "${p.name}"`)
    return expired.map((p) => p.name)
  })
}

/** Whether a write failed for want of its day's partition (Postgres: no partition found for the row). */
export const missingPartition = (err: unknown) => /no partition of relation "generations" found/.test(String(err))

/** How many days ahead the worker keeps partitions made (a write past them makes its own). */
export const PARTITION_DAYS_AHEAD = 7

/** The worker's sweep: the coming days' partitions made, the expired ones dropped. */
export async function keepGenerationPartitions(db: Db, retentionDays: number, now = new Date()) {
  const made = await ensureGenerationPartitions(db, daysAhead(now, PARTITION_DAYS_AHEAD))
  const dropped = await dropExpiredGenerationPartitions(db, now, retentionDays)
  return { made, dropped }
}
