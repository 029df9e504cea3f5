import type { Db } from '../db.js'

// job_leases: a job's run holds its row while it goes. BullMQ takes a job back from a worker whose
// lock lapsed (dead, or alive but late to renew it: its event loop or Redis stalled), and runs it
// again; the lease tells those two apart. It names the holder's worker's beacon, a Postgres session
// that worker keeps open and that ends with its process (the kernel closes a killed process's
// sockets): gone, the lease is taken at once. Alive, the lease holds until held_until, renewed
// while the run goes, so a worker that hangs for good still gives its jobs up.

/**
 * Takes the lease of `jobId` for `holder` (its worker's beacon session `sessionPid`) until `ms` from
 * now: taken when no run holds it, or its holder let it lapse, or its holder's worker is gone;
 * otherwise how long the live holder still holds it (ms).
 */
export async function takeJobLease(
  db: Db,
  jobId: string,
  holder: string,
  sessionPid: number | null,
  ms: number,
): Promise<{ taken: true } | { heldForMs: number }> {
  const rows = await db.$queryRaw<{ holder: string; left_ms: number }[]>`
    WITH taken AS (
      INSERT INTO job_leases (job_id, holder, held_until, session_pid)
      VALUES (${jobId}, ${holder}, now() + ${ms} * interval '1 millisecond', ${sessionPid}::int)
      ON CONFLICT (job_id) DO UPDATE
        SET holder = EXCLUDED.holder, held_until = EXCLUDED.held_until, session_pid = EXCLUDED.session_pid
        WHERE job_leases.held_until < now() OR job_leases.holder = EXCLUDED.holder
          OR (job_leases.session_pid IS NOT NULL
            AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = job_leases.session_pid))
      RETURNING holder
    )
    SELECT holder, 0::float8 AS left_ms FROM taken
    UNION ALL
    SELECT holder, (extract(epoch FROM held_until - now()) * 1000)::float8 FROM job_leases
      WHERE job_id = ${jobId} AND NOT EXISTS (SELECT 1 FROM taken)`
  const row = rows[0]
  // Let go between the two reads (its run ended): taken on the next try.
  if (!row) return { heldForMs: 0 }
  return row.holder === holder ? { taken: true } : { heldForMs: Math.max(0, row.left_ms) }
}

/**
 * Renews the leases `holders` hold (one statement for a worker's runs), naming its beacon session
 * as it is now (a new one, after the last was lost): the holders still holding theirs.
 */
export async function renewJobLeases(
  db: Db,
  holders: string[],
  sessionPid: number | null,
  ms: number,
): Promise<string[]> {
  if (holders.length === 0) return []
  const rows = await db.$queryRaw<{ holder: string }[]>`
    UPDATE job_leases SET held_until = now() + ${ms} * interval '1 millisecond', session_pid = ${sessionPid}::int
    WHERE holder = ANY(${holders}::text[]) RETURNING holder`
  return rows.map((r) => r.holder)
}

/** The run is over: its lease let go (not another run's, taken after it lapsed). */
export async function releaseJobLease(db: Db, jobId: string, holder: string): Promise<void> {
  await db.$executeRaw`DELETE FROM job_leases WHERE job_id = ${jobId} AND holder = ${holder}`
}

/** Leases of runs whose worker died and whose job never ran again, gone a day after they lapsed. */
export async function pruneJobLeases(db: Db): Promise<number> {
  return db.$executeRaw`DELETE FROM job_leases WHERE held_until < now() - interval '1 day'`
}
