import type { Db, Prisma } from '../db.js'

// The statements of the worker's upkeep of the record: what the reconciler looks for (interns a host
// no longer runs, teardowns and provisioning runs whose jobs vanished, forgotten idempotency keys)
// and what a teardown deletes (the intern, its private vault, its place in the member's quota).

/** Running interns placed on a host, unchanged for 2 s (a fresh one gets that grace). */
export const runningOnHost = (db: Db, hostId: string, limit = 5_000) =>
  db.$queryRaw<{ id: string; hostname: string | null; generation: number }[]>`
    SELECT id, hostname, placement_generation AS generation FROM interns
    WHERE status = 'running' AND runtime_host_id = ${hostId} AND updated_at < now() - interval '2 seconds' LIMIT ${limit}`

/** What the record says of interns a host reports running. */
export const recordsOf = (db: Db, ids: string[]) =>
  db.$queryRaw<{ id: string; status: string; updated_at: Date; runtime_host_id: string | null; generation: number }[]>`
    SELECT id, status::text AS status, updated_at, runtime_host_id, placement_generation AS generation
    FROM interns WHERE id = ANY(${ids}::uuid[])`

/** Teardowns with no progress since `before` and no job waiting in the outbox. */
export const stuckTeardowns = (db: Db, before: Date, limit = 1_000) =>
  db.$queryRaw<{ id: string; updated_at: Date }[]>`
    SELECT i.id, i.updated_at FROM interns i
    WHERE i.status = 'destroying' AND i.updated_at < ${before}
      AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.payload->>'internId' = i.id::text)
    LIMIT ${limit}`

/** Queued or provisioning interns with no progress since `before` and no job waiting in the outbox. */
export const stuckProvisioning = (db: Db, before: Date, limit = 2_000) =>
  db.$queryRaw<{ id: string; generation: number }[]>`
    SELECT i.id, i.provision_generation AS generation FROM interns i
    WHERE i.status IN ('queued', 'provisioning') AND i.updated_at < ${before}
      AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.payload->>'internId' = i.id::text)
    ORDER BY i.updated_at LIMIT ${limit}`

/** Forgets idempotency records made before `cutoff`, at most `batch` of them (the BRIN index on created_at finds them). */
export const forgetIdempotencyRecords = (db: Db, cutoff: Date, batch = 5_000) =>
  db.$executeRaw`
    DELETE FROM idempotency_records WHERE ctid = ANY(ARRAY(
      SELECT ctid FROM idempotency_records WHERE created_at < ${cutoff} LIMIT ${batch}))`

/** Locks an intern being torn down; false when it is not (any more) being torn down. */
export async function lockTeardown(tx: Prisma.TransactionClient, internId: string): Promise<boolean> {
  const [held] = await tx.$queryRaw<
    { ok: number }[]
  >`SELECT 1 AS ok FROM interns WHERE id = ${internId}::uuid AND status = 'destroying' FOR UPDATE`
  return !!held
}

/**
 * The intern gone from the record, with its private vault (secrets included: they cascade) and its
 * place in its creator's quota; its keys cascade with it, and interns that borrowed the vault lose
 * the attachment.
 */
export async function deleteInternRecord(
  tx: Prisma.TransactionClient,
  intern: { id: string; vaultId: string | null; creatorUserId: string | null },
) {
  await tx.$executeRaw`DELETE FROM interns WHERE id = ${intern.id}::uuid`
  if (intern.vaultId) await tx.$executeRaw`DELETE FROM vaults WHERE id = ${intern.vaultId}::uuid`
  if (intern.creatorUserId) {
    await tx.$executeRaw`
      UPDATE member_quota_shards SET used = used - 1
      WHERE (user_id, shard) = (
        SELECT user_id, shard FROM member_quota_shards WHERE user_id = ${intern.creatorUserId}::uuid AND used > 0
        ORDER BY shard LIMIT 1 FOR UPDATE)`
  }
}

/** Whether a failed teardown lost the workspace's archive (deleting it again then needs acknowledge_workspace_loss). */
export const markArchiveFailed = (tx: Prisma.TransactionClient, internId: string, failed: boolean) =>
  tx.$executeRaw`UPDATE interns SET workspace_archive_failed = ${failed} WHERE id = ${internId}::uuid`
