import type { Db, Prisma } from '../db.js'
import { Jobs, type JobKind, type JobPayload } from '@roster/protocol'
import { activeCarrier, type TraceCarrier } from '@roster/platform'

/**
 * The Redis channel on which writers ring the relay's bell after committing outbox rows. A bell,
 * not the message: the rows are in Postgres, and a lost bell only delays them until the relay's
 * next poll. (Postgres NOTIFY would do the same, but a notifying transaction holds a global lock
 * through its commit, which serialises every create.)
 */
export const outboxBellChannel = (queuePrefix: string) => `${queuePrefix}:outbox-bell`

/**
 * Writes a job to the outbox inside the caller's transaction: the job exists if and only if the
 * state change that asked for it commits. The worker's relay publishes it to BullMQ; the caller
 * rings the bell after the commit. With tracing on, the row carries the writer's trace context, so
 * the job's spans join the request's trace.
 */
export async function enqueueInTx<K extends JobKind>(
  tx: Prisma.TransactionClient,
  kind: K,
  payload: JobPayload<K>,
): Promise<void> {
  const job = Jobs[kind]
  const parsed = job.schema.parse(payload)
  const jobId = (job.jobId as (p: JobPayload<K>) => string)(parsed as JobPayload<K>)
  const trace = activeCarrier()
  await tx.$executeRaw`INSERT INTO outbox (kind, job_id, payload, trace_context) VALUES (${kind}, ${jobId}, ${JSON.stringify(parsed)}::jsonb, ${trace && JSON.stringify(trace)}::jsonb)`
}

// The outbox's SQL, all of it (the create statements write their rows inside their own statement).

/** An outbox row as the relay reads it. */
export interface OutboxRow {
  id: string
  kind: string
  job_id: string
  payload: unknown
  trace_context: TraceCarrier | null
  created_at: Date
}

/** The oldest unpublished rows, locked (SKIP LOCKED: relays in several workers share the work). */
export const claimOutboxRows = (tx: Prisma.TransactionClient, limit: number) =>
  tx.$queryRaw<OutboxRow[]>`
    SELECT id::text, kind, job_id, payload, trace_context, created_at FROM outbox ORDER BY id LIMIT ${limit} FOR UPDATE SKIP LOCKED`

/** Rows that can never be published, set aside whole with why (in the claiming transaction). */
export const setAsideOutboxRows = (tx: Prisma.TransactionClient, dead: { id: string; error: string }[]) =>
  tx.$executeRaw`
    INSERT INTO outbox_dead_letters (id, kind, job_id, payload, error, created_at)
    SELECT o.id, o.kind, o.job_id, o.payload, d.error, o.created_at
    FROM outbox o JOIN unnest(${dead.map((d) => d.id)}::bigint[], ${dead.map((d) => d.error)}::text[]) AS d(id, error) ON d.id = o.id
    ON CONFLICT (id) DO NOTHING`

/** Rows published (or set aside): gone from the outbox. */
export const deleteOutboxRows = (tx: Prisma.TransactionClient, ids: string[]) =>
  tx.$executeRaw`DELETE FROM outbox WHERE id = ANY(${ids}::bigint[])`

/** How many rows wait, and since when (the worker's metrics). */
export async function outboxBacklog(db: Db): Promise<{ rows: number; oldest: Date | null }> {
  const [row] = await db.$queryRaw<{ rows: bigint; oldest: Date | null }[]>`
    SELECT count(*) AS rows, min(created_at) AS oldest FROM outbox`
  return { rows: Number(row!.rows), oldest: row!.oldest }
}
