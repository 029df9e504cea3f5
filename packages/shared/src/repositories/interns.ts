import { Prisma, type Db } from '../db.js'
import type { InternStatus } from '@roster/protocol'
import type { InternRecord } from '../interns/view.js'
import { likeLiteral } from '../like-pattern.js'
import { INTERN_COLUMNS } from './interns/columns.js'

// The interns table's statements, all of them, with the records an intern's create and teardown
// write beside it in the same statement or transaction (its idempotency record, its place in the
// member's quota shards, its private vault). Sections, a module each: create, status, placement and upkeep
// (repositories/interns/); the reads are here.
// What the statements mean (which transitions are allowed, who may see what) is the domain
// modules' (interns/, intern-state.ts, fleet/); here is only how the record is read and written.

export { INTERN_COLUMNS, HELD_BY_HOST, type Tx } from './interns/columns.js'

// ── reads ────────────────────────────────────────────────────────────────────────────────────────

/** An intern's row. */
export async function internRecord(db: Db, id: string): Promise<InternRecord | undefined> {
  const rows = await db.$queryRaw<InternRecord[]>`SELECT ${INTERN_COLUMNS} FROM interns WHERE id = ${id}::uuid`
  return rows[0]
}

/** Interns by id, those that exist (in no order). */
export function internRecords(db: Db, ids: readonly string[]): Promise<InternRecord[]> {
  return db.$queryRaw<InternRecord[]>`SELECT ${INTERN_COLUMNS} FROM interns WHERE id = ANY(${ids}::uuid[])`
}

/** An intern's status (undefined: no such intern). */
export async function internStatus(db: Db, id: string): Promise<InternStatus | undefined> {
  return (await db.intern.findUnique({ where: { id }, select: { status: true } }))?.status
}

/** What access to an intern and its vaults turns on. */
export async function internScope(db: Db, id: string) {
  const rows = await db.$queryRaw<
    { id: string; workspace_id: string; status: string; vault_id: string | null; attached_vault_id: string | null }[]
  >`SELECT id, workspace_id, status::text AS status, vault_id, attached_vault_id FROM interns WHERE id = ${id}::uuid`
  return rows[0]
}

/**
 * One page of a workspace's interns, newest first, keyset-paged on (created_at, id) so it is stable
 * while interns are being created: up to `limit + 1` rows (one more says there are more).
 */
export function internPage(
  db: Db,
  workspaceId: string,
  q: { status?: InternStatus[]; nameHolds?: string; after?: { createdAt: string; id: string }; limit: number },
) {
  return db.$queryRaw<(InternRecord & { created_at_exact: string })[]>`
    SELECT ${INTERN_COLUMNS}, created_at::text AS created_at_exact FROM interns
    WHERE workspace_id = ${workspaceId}::uuid
      ${q.status ? Prisma.sql`AND status = ANY(${q.status}::intern_status[])` : Prisma.empty}
      ${q.nameHolds ? Prisma.sql`AND name ILIKE ${`%${likeLiteral(q.nameHolds)}%`}` : Prisma.empty}
      ${q.after ? Prisma.sql`AND (created_at, id) < (${q.after.createdAt}::timestamptz, ${q.after.id}::uuid)` : Prisma.empty}
    ORDER BY created_at DESC, id DESC
    LIMIT ${q.limit + 1}`
}

/** An intern's row locked for a lifecycle change (in the caller's transaction). */
export async function lockIntern(tx: Prisma.TransactionClient, id: string) {
  const rows = await tx.$queryRaw<
    (InternRecord & { workspace_archive_failed: boolean; provision_generation: number })[]
  >`
    SELECT ${INTERN_COLUMNS}, workspace_archive_failed, provision_generation FROM interns
    WHERE id = ${id}::uuid FOR UPDATE`
  return rows[0]
}

/** Changes an intern's own fields (undefined: kept; null: cleared); its row as it now is. */
export async function updateInternFields(
  tx: Prisma.TransactionClient,
  id: string,
  fields: { name?: string; description?: string | null; instructions?: string | null; model?: string | null },
): Promise<InternRecord> {
  const sets: Prisma.Sql[] = [Prisma.sql`updated_at = now()`]
  if (fields.name !== undefined) sets.push(Prisma.sql`name = ${fields.name}`)
  if (fields.description !== undefined) sets.push(Prisma.sql`description = ${fields.description}`)
  if (fields.instructions !== undefined) sets.push(Prisma.sql`instructions = ${fields.instructions}`)
  if (fields.model !== undefined) sets.push(Prisma.sql`model = ${fields.model}`)
  const rows = await tx.$queryRaw<InternRecord[]>`
    UPDATE interns SET ${Prisma.join(sets, ', ')} WHERE id = ${id}::uuid RETURNING ${INTERN_COLUMNS}`
  return rows[0]!
}

export * from './interns/create.js'
export * from './interns/status.js'
export * from './interns/placement.js'
export * from './intern-icons.js'
