import { type Prisma, type Db } from '../../db.js'
import type { FleetTimes } from '../../fleet/times.js'
import { HELD_BY_HOST, statusIn } from './columns.js'

// The interns table's statements: where the fleet places an intern, and the upkeep of the record (repositories/interns.ts holds the reads and the index).

// ── placement ────────────────────────────────────────────────────────────────────────────────────

/** Whether the fleet is moving an intern: placed again lately (its host died or drained), and not suspended since. */
export async function internMoving(db: Db, internId: string): Promise<boolean> {
  const [row] = await db.$queryRaw<{ moving: boolean }[]>`
    SELECT ${statusIn('placedOrPlacing')} AND moved_at > now() - interval '10 minutes' AS moving
    FROM interns WHERE id = ${internId}::uuid`
  return row?.moving === true
}

/** Marks an intern placed again by the fleet (a chat meanwhile waits for it: CHAT_MOVE_WAIT_MS). */
export const markMoved = (tx: Prisma.TransactionClient, internId: string) =>
  tx.$executeRaw`UPDATE interns SET moved_at = now() WHERE id = ${internId}::uuid`

/** The interns the record has a host hold, with their generations. */
export async function placementsOf(db: Db, hostId: string): Promise<{ id: string; generation: number }[]> {
  return db.$queryRaw<{ id: string; generation: number }[]>`
    SELECT id, placement_generation AS generation FROM interns
    WHERE runtime_host_id = ${hostId} AND ${HELD_BY_HOST}`
}

/** Whether the record places `internId` on `hostId` under `generation`. */
export async function isPlaced(db: Db, internId: string, hostId: string, generation: number): Promise<boolean> {
  const rows = await db.$queryRaw<{ ok: number }[]>`
    SELECT 1 AS ok FROM interns WHERE id = ${internId}::uuid AND runtime_host_id = ${hostId} AND placement_generation = ${generation}
      AND ${HELD_BY_HOST}`
  return rows.length > 0
}

export interface PlacedOn {
  hostId: string
  address: string
  epoch: number
  generation: number
  /** From a placement: the digest of the intern's latest workspace snapshot (null: none). */
  snapshot?: string | null
}

/**
 * Places an intern for its provisioning run `generation`: on the host it is on, if that host is live
 * and still has its room, else on the live host with the most free room (ties at random). One
 * statement (the `place_intern` function of the migrations): the chosen host's row is locked and its
 * count of placed interns (kept by a trigger) read again under the lock, so concurrent placements
 * never overfill it, and the lock is held for that statement alone. Undefined when no live host has
 * room (the run waits for one), or the run is no longer the intern's latest.
 */
export async function placeIntern(
  db: Db,
  internId: string,
  generation: number,
  times: FleetTimes,
): Promise<PlacedOn | undefined> {
  const fresh = new Date(Date.now() - (times.placeWithinMs ?? times.deadAfterMs))
  const [row] = await db.$queryRaw<{ host_id: string; address: string; epoch: number; snapshot: string | null }[]>`
    SELECT host_id, address, epoch, snapshot FROM place_intern(${internId}::uuid, ${generation}::int, ${fresh})`
  return row && { hostId: row.host_id, address: row.address, epoch: row.epoch, generation, snapshot: row.snapshot }
}

/**
 * Takes back a placement its host could not be reached for (it may have died and not yet been
 * declared dead): the run's next attempt places the intern anew. Only that placement: a later one
 * is left alone.
 */
export async function unplace(db: Db, internId: string, at: { hostId: string; generation: number }): Promise<void> {
  await db.$executeRaw`UPDATE interns SET runtime_host_id = NULL WHERE id = ${internId}::uuid AND runtime_host_id = ${at.hostId} AND placement_generation = ${at.generation}`
}

/** Where an intern is placed now (its host's address and epoch) and its status, or undefined when it is not placed. */
export async function placementOf(db: Db, internId: string): Promise<(PlacedOn & { status: string }) | undefined> {
  const [row] = await db.$queryRaw<(PlacedOn & { status: string })[]>`
    SELECT h.id AS "hostId", h.address, h.epoch, i.placement_generation AS generation, i.status::text AS status
    FROM interns i JOIN runtime_hosts h ON h.id = i.runtime_host_id WHERE i.id = ${internId}::uuid`
  return row
}

/** Interns held by a host that is dead or has finished draining (at most 5,000 at a time). */
export async function strandedInterns(db: Db): Promise<string[]> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    SELECT i.id FROM interns i JOIN runtime_hosts h ON h.id = i.runtime_host_id
    WHERE ${statusIn('onHost', 'i.status')} AND (h.state = 'dead' OR (h.state = 'draining' AND h.drained))
    LIMIT 5000`
  return rows.map((r) => r.id)
}

/** An intern taken off its host by the fleet, marked moved (a chat meanwhile waits for it). */
export const unplaceMoved = (tx: Prisma.TransactionClient, internId: string) =>
  tx.$executeRaw`UPDATE interns SET runtime_host_id = NULL, moved_at = now() WHERE id = ${internId}::uuid`

// ── upkeep ───────────────────────────────────────────────────────────────────────────────────────
// The worker's upkeep of the record: what the reconciler looks for (interns a host no longer runs,
// teardowns and provisioning runs whose jobs vanished, forgotten idempotency keys) and what a
// teardown deletes (the intern, its private vault, its place in the member's quota).

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
    WHERE ${statusIn('provisioningRun', 'i.status')} AND i.updated_at < ${before}
      AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.payload->>'internId' = i.id::text)
    ORDER BY i.updated_at LIMIT ${limit}`

/** Forgets idempotency records made before `cutoff`, at most `batch` of them (the BRIN index on created_at finds them). */
export const forgetIdempotencyRecords = (db: Db, cutoff: Date, batch = 5_000) =>
  db.$executeRaw`
    DELETE FROM idempotency_records WHERE ctid = ANY(ARRAY(
      SELECT ctid FROM idempotency_records WHERE created_at < ${cutoff} LIMIT ${batch}))`

/** Locks an intern being torn down, with what its deletion takes along; undefined when it is not (any more) being torn down. */
export async function lockTeardown(tx: Prisma.TransactionClient, internId: string) {
  const [held] = await tx.$queryRaw<{ id: string; vaultId: string | null; creatorUserId: string | null }[]>`
    SELECT id, vault_id AS "vaultId", creator_user_id AS "creatorUserId" FROM interns
    WHERE id = ${internId}::uuid AND status = 'destroying' FOR UPDATE`
  return held
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
