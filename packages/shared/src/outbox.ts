import type { Prisma } from './db.js'
import { Jobs, type JobKind, type JobPayload } from './jobs.js'
import { activeCarrier } from './tracing.js'

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
