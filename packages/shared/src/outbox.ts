import type { Prisma } from './db.js'
import { Jobs, type JobKind, type JobPayload } from './jobs.js'

/** The channel the relay LISTENs on; a notification is sent when the transaction commits. */
export const OUTBOX_CHANNEL = 'roster_outbox'

/**
 * Writes a job to the outbox inside the caller's transaction: the job exists if and only if the
 * state change that asked for it commits. The worker's relay publishes it to BullMQ.
 */
export async function enqueueInTx<K extends JobKind>(
  tx: Prisma.TransactionClient,
  kind: K,
  jobId: string,
  payload: JobPayload<K>,
): Promise<void> {
  const parsed = Jobs[kind].schema.parse(payload)
  await tx.$executeRaw`
    WITH queued AS (
      INSERT INTO outbox (kind, job_id, payload) VALUES (${kind}, ${jobId}, ${JSON.stringify(parsed)}::jsonb)
      RETURNING id)
    SELECT pg_notify(${OUTBOX_CHANNEL}, id::text) FROM queued`
}
