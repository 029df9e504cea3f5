import { Prisma, type Db } from '../db.js'
import type { GuardrailRules } from '@roster/protocol'

// The guardrails, guardrail_key_assignments and guardrail_member_assignments tables' statements.

export interface GuardrailRow {
  id: string
  account_id: string
  workspace_id: string
  is_default: boolean
  name: string
  description: string | null
  limit_micros: bigint | null
  reset_interval: 'daily' | 'weekly' | 'monthly' | null
  include_byok_in_budgets: boolean
  rules: GuardrailRules
  created_at: Date
  updated_at: Date | null
}

/** What a guardrail is made or changed with (undefined: as it is). */
export interface GuardrailFields {
  name?: string
  description?: string | null
  limitMicros?: bigint | null
  resetInterval?: 'daily' | 'weekly' | 'monthly' | null
  includeByokInBudgets?: boolean
  rules?: GuardrailRules
}

const COLUMNS = Prisma.raw(`g.id, g.account_id, g.workspace_id, g.is_default, g.name, g.description, g.limit_micros,
  g.reset_interval, g.include_byok_in_budgets, g.rules, g.created_at, g.updated_at`)

/** One of `accountId`'s guardrails (undefined: none). */
export async function guardrailById(
  db: Db | Prisma.TransactionClient,
  accountId: string,
  id: string,
): Promise<GuardrailRow | undefined> {
  const rows = await db.$queryRaw<GuardrailRow[]>`
    SELECT ${COLUMNS} FROM guardrails g WHERE g.id = ${id}::uuid AND g.account_id = ${accountId}::uuid`
  return rows[0]
}

/** A page of a workspace's guardrails, oldest first, with how many there are. */
export async function guardrailPage(db: Db, workspaceId: string, offset: number, limit: number) {
  const [rows, total] = await Promise.all([
    db.$queryRaw<GuardrailRow[]>`
      SELECT ${COLUMNS} FROM guardrails g WHERE g.workspace_id = ${workspaceId}::uuid
      ORDER BY g.is_default DESC, g.created_at, g.id LIMIT ${limit} OFFSET ${offset}`,
    db.guardrail.count({ where: { workspaceId } }),
  ])
  return { rows, total }
}

/** A new guardrail (the default one: made once, whoever comes first); its row. */
export async function insertGuardrail(
  db: Db | Prisma.TransactionClient,
  g: { id: string; accountId: string; workspaceId: string; isDefault: boolean; name: string } & GuardrailFields,
): Promise<GuardrailRow> {
  await db.$executeRaw`
    INSERT INTO guardrails (id, account_id, workspace_id, is_default, name, description, limit_micros, reset_interval,
                            include_byok_in_budgets, rules)
    VALUES (${g.id}::uuid, ${g.accountId}::uuid, ${g.workspaceId}::uuid, ${g.isDefault}, ${g.name},
            ${g.description ?? null}, ${g.limitMicros ?? null}, ${g.resetInterval ?? null},
            ${g.includeByokInBudgets ?? false}, ${JSON.stringify(g.rules ?? {})}::jsonb)
    ON CONFLICT (id) DO NOTHING`
  return (await guardrailById(db, g.accountId, g.id))!
}

/** Changes a guardrail; its row after. */
export async function updateGuardrail(db: Prisma.TransactionClient, row: GuardrailRow, f: GuardrailFields) {
  await db.guardrail.update({
    where: { id: row.id },
    data: {
      name: f.name,
      description: f.description,
      limitMicros: f.limitMicros,
      resetInterval: f.resetInterval,
      includeByokInBudgets: f.includeByokInBudgets,
      rules: f.rules as Prisma.InputJsonValue | undefined,
      updatedAt: new Date(),
    },
  })
  return (await guardrailById(db, row.account_id, row.id))!
}

/** Locks a guardrail's row until the transaction ends (an update reads, merges and writes it). */
export async function lockGuardrail(tx: Prisma.TransactionClient, id: string) {
  await tx.$executeRaw`SELECT 1 FROM guardrails WHERE id = ${id}::uuid FOR UPDATE`
}

/** Deletes a guardrail and its assignments; whether there was one. */
export async function deleteGuardrail(db: Db, id: string): Promise<boolean> {
  return (await db.guardrail.deleteMany({ where: { id } })).count > 0
}

// ── assignments ──────────────────────────────────────────────────────────────────────────────────

export interface KeyAssignmentRow {
  id: string
  guardrail_id: string
  key_hash: Uint8Array
  key_name: string
  key_label: string | null
  key_prefix: string
  assigned_by: string | null
  created_at: Date
}

export interface MemberAssignmentRow {
  id: string
  guardrail_id: string
  user_id: string
  organization_id: string
  assigned_by: string | null
  created_at: Date
}

/** Gives keys a guardrail, replacing any they had; how many were assigned (or moved here). */
export async function assignKeys(
  db: Db | Prisma.TransactionClient,
  guardrailId: string,
  keyIds: string[],
  by: string | null,
) {
  return db.$executeRaw`
    INSERT INTO guardrail_key_assignments (id, guardrail_id, key_id, assigned_by)
    SELECT gen_random_uuid(), ${guardrailId}::uuid, k, ${by}::uuid FROM unnest(${keyIds}::uuid[]) AS k
    ON CONFLICT (key_id) DO UPDATE
      SET guardrail_id = EXCLUDED.guardrail_id, assigned_by = EXCLUDED.assigned_by, created_at = now()
      WHERE guardrail_key_assignments.guardrail_id <> EXCLUDED.guardrail_id`
}

export async function unassignKeys(db: Db, guardrailId: string, keyIds: string[]) {
  return (await db.guardrailKeyAssignment.deleteMany({ where: { guardrailId, keyId: { in: keyIds } } })).count
}

export async function assignMembers(
  db: Db | Prisma.TransactionClient,
  guardrailId: string,
  userIds: string[],
  by: string | null,
) {
  return db.$executeRaw`
    INSERT INTO guardrail_member_assignments (id, guardrail_id, user_id, assigned_by)
    SELECT gen_random_uuid(), ${guardrailId}::uuid, u, ${by}::uuid FROM unnest(${userIds}::uuid[]) AS u
    ON CONFLICT (guardrail_id, user_id) DO NOTHING`
}

export async function unassignMembers(db: Db, guardrailId: string, userIds: string[]) {
  return (await db.guardrailMemberAssignment.deleteMany({ where: { guardrailId, userId: { in: userIds } } })).count
}

/** Assignments of one guardrail (`g`), or of every guardrail of the account. */
const scopeOf = (scope: {
  accountId: string
  guardrailId?: string
}) => Prisma.sql`g.account_id = ${scope.accountId}::uuid
    ${scope.guardrailId ? Prisma.sql`AND g.id = ${scope.guardrailId}::uuid` : Prisma.empty}`

/** A page of key assignments: one guardrail's, or every guardrail's of the account; oldest first. */
export async function keyAssignmentPage(
  db: Db,
  scope: { accountId: string; guardrailId?: string },
  offset: number,
  limit: number,
) {
  const where = scopeOf(scope)
  const [rows, total] = await Promise.all([
    db.$queryRaw<KeyAssignmentRow[]>`
      SELECT a.id, a.guardrail_id, k.hash AS key_hash, k.name AS key_name, k.label AS key_label, k.prefix AS key_prefix,
             a.assigned_by, a.created_at
      FROM guardrail_key_assignments a JOIN guardrails g ON g.id = a.guardrail_id JOIN api_keys k ON k.id = a.key_id
      WHERE ${where} ORDER BY a.created_at, a.id LIMIT ${limit} OFFSET ${offset}`,
    db.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM guardrail_key_assignments a JOIN guardrails g ON g.id = a.guardrail_id WHERE ${where}`,
  ])
  return { rows, total: total[0]?.n ?? 0 }
}

/** A page of member assignments: one guardrail's, or every guardrail's of the account; oldest first. */
export async function memberAssignmentPage(
  db: Db,
  scope: { accountId: string; guardrailId?: string },
  offset: number,
  limit: number,
) {
  const where = scopeOf(scope)
  const [rows, total] = await Promise.all([
    db.$queryRaw<MemberAssignmentRow[]>`
      SELECT a.id, a.guardrail_id, a.user_id, g.account_id AS organization_id, a.assigned_by, a.created_at
      FROM guardrail_member_assignments a JOIN guardrails g ON g.id = a.guardrail_id
      WHERE ${where} ORDER BY a.created_at, a.id LIMIT ${limit} OFFSET ${offset}`,
    db.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM guardrail_member_assignments a JOIN guardrails g ON g.id = a.guardrail_id
      WHERE ${where}`,
  ])
  return { rows, total: total[0]?.n ?? 0 }
}
