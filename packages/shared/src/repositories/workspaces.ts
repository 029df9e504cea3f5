import { randomUUID } from 'node:crypto'
import { Prisma, type Db } from '../db.js'

// The workspaces, workspace_budgets and workspace_members tables' statements.

/** A workspace's row, as the workspace routes show it. */
export interface WorkspaceRow {
  id: string
  account_id: string
  slug: string
  name: string
  description: string | null
  is_default: boolean
  default_text_model: string | null
  default_image_model: string | null
  default_provider_sort: string | null
  disabled_server_tools: string[] | null
  include_byok_in_budgets: boolean
  data_discount_logging: boolean
  observability_broadcast: boolean
  io_logging: boolean
  io_logging_sampling_rate: number
  io_logging_api_key_ids: number[] | null
  created_by: string | null
  created_at: Date
  updated_at: Date | null
}

/** What a workspace is made or changed with (undefined: as it is; null clears a nullable field). */
export interface WorkspaceFields {
  slug?: string
  name?: string
  description?: string | null
  defaultTextModel?: string | null
  defaultImageModel?: string | null
  defaultProviderSort?: string | null
  disabledServerTools?: string[] | null
  dataDiscountLogging?: boolean
  observabilityBroadcast?: boolean
  ioLogging?: boolean
  ioLoggingRate?: number
  ioLoggingKeyNumbers?: number[] | null
  internsEnabled?: boolean
  createdBy?: string | null
}

const json = (v: unknown[] | null | undefined) =>
  v === undefined ? undefined : v === null ? Prisma.DbNull : (v as Prisma.InputJsonValue)

const data = (f: WorkspaceFields) => ({
  slug: f.slug,
  name: f.name,
  description: f.description,
  defaultTextModel: f.defaultTextModel,
  defaultImageModel: f.defaultImageModel,
  defaultProviderSort: f.defaultProviderSort,
  disabledServerTools: json(f.disabledServerTools),
  dataDiscountLogging: f.dataDiscountLogging,
  observabilityBroadcast: f.observabilityBroadcast,
  ioLogging: f.ioLogging,
  ioLoggingRate: f.ioLoggingRate,
  ioLoggingKeyNumbers: json(f.ioLoggingKeyNumbers),
  internsEnabled: f.internsEnabled,
  createdBy: f.createdBy,
})

const COLUMNS = Prisma.raw(`w.id, w.account_id, w.slug, w.name, w.description, w.is_default, w.default_text_model,
  w.default_image_model, w.default_provider_sort, w.disabled_server_tools, w.include_byok_in_budgets,
  w.data_discount_logging, w.observability_broadcast, w.io_logging, w.io_logging_sampling_rate,
  w.io_logging_api_key_ids, w.created_by, w.created_at, w.updated_at`)

/**
 * A new workspace. The account's first is its default workspace (slug `default` unless one is
 * given); without a slug, a later one is named after its id.
 */
export async function insertWorkspace(db: Db | Prisma.TransactionClient, accountId: string, f: WorkspaceFields) {
  const id = randomUUID()
  const first = (await db.workspace.count({ where: { accountId } })) === 0
  const slug = f.slug ?? (first ? 'default' : `ws-${id.slice(0, 8)}`)
  await db.workspace.create({
    data: {
      ...data(f),
      id,
      accountId,
      slug,
      name: f.name ?? (first ? 'Default' : `Workspace ${id.slice(0, 8)}`),
      isDefault: first,
    },
    select: { id: true },
  })
  return (await workspaceByRef(db, accountId, id))!
}

/** One of `accountId`'s workspaces by id or slug (undefined: none). */
export async function workspaceByRef(
  db: Db | Prisma.TransactionClient,
  accountId: string,
  ref: string,
): Promise<WorkspaceRow | undefined> {
  // Longer than any id or slug: names none, and is not sent to the database.
  if (ref.length > 64) return undefined
  const byId = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(ref)
  const rows = await db.$queryRaw<WorkspaceRow[]>`
    SELECT ${COLUMNS} FROM workspaces w
    WHERE w.account_id = ${accountId}::uuid AND ${byId ? Prisma.sql`w.id = ${ref}::uuid` : Prisma.sql`w.slug = ${ref}`}`
  return rows[0]
}

/** An account's default workspace (undefined: it has none). */
export async function defaultWorkspaceOf(db: Db, accountId: string): Promise<WorkspaceRow | undefined> {
  const rows = await db.$queryRaw<WorkspaceRow[]>`
    SELECT ${COLUMNS} FROM workspaces w WHERE w.account_id = ${accountId}::uuid AND w.is_default`
  return rows[0]
}

/** Every workspace of an account: id, name, when made. */
export function accountWorkspaces(db: Db, accountId: string) {
  return db.$queryRaw<{ id: string; name: string; created_at: Date }[]>`
    SELECT id, name, created_at FROM workspaces WHERE account_id = ${accountId}::uuid`
}

/** A page of an account's workspaces, default first then oldest first, with how many there are. */
export async function workspacePage(db: Db, accountId: string, offset: number, limit: number) {
  const [rows, total] = await Promise.all([
    db.$queryRaw<WorkspaceRow[]>`
      SELECT ${COLUMNS} FROM workspaces w WHERE w.account_id = ${accountId}::uuid
      ORDER BY w.is_default DESC, w.created_at, w.id LIMIT ${limit} OFFSET ${offset}`,
    db.workspace.count({ where: { accountId } }),
  ])
  return { rows, total }
}

/** Changes a workspace's fields; its row after. */
export async function updateWorkspace(db: Db | Prisma.TransactionClient, row: WorkspaceRow, f: WorkspaceFields) {
  await db.workspace.update({ where: { id: row.id }, data: { ...data(f), updatedAt: new Date() } })
  return (await workspaceByRef(db, row.account_id, row.id))!
}

/**
 * Whether a key that authenticates (not deleted, not disabled) would go with the workspace: one of
 * its own, or one held elsewhere by a member whose own workspace it is (deleting the workspace
 * deletes its members, and their keys with them).
 */
export async function hasActiveKeys(db: Db | Prisma.TransactionClient, workspaceId: string): Promise<boolean> {
  const n = await db.apiKey.count({
    where: { revokedAt: null, disabled: false, OR: [{ workspaceId }, { user: { workspaceId } }] },
  })
  return n > 0
}

/** Deletes a workspace and what it holds (its budgets, members, keys' rows, presets). */
export async function deleteWorkspace(db: Db | Prisma.TransactionClient, workspaceId: string) {
  await db.workspace.delete({ where: { id: workspaceId } })
}

/** The account a workspace belongs to (undefined: no such workspace). */
export async function workspaceAccount(
  db: Db | Prisma.TransactionClient,
  workspaceId: string,
): Promise<string | undefined> {
  return (await db.workspace.findUnique({ where: { id: workspaceId }, select: { accountId: true } }))?.accountId
}

/** Turns a workspace's private logging on or off (rate: the share of requests kept); false when there is no such workspace. */
export async function updateIoLogging(db: Db, workspaceId: string, on: boolean, rate: number): Promise<boolean> {
  const updated = await db.workspace.updateMany({
    where: { id: workspaceId },
    data: { ioLogging: on, ioLoggingRate: rate },
  })
  return updated.count > 0
}

// ── budgets ──────────────────────────────────────────────────────────────────────────────────────

export type BudgetInterval = 'daily' | 'weekly' | 'monthly' | 'lifetime'

export interface BudgetRow {
  id: string
  workspace_id: string
  interval: BudgetInterval
  limit_micros: bigint
  created_at: Date
  updated_at: Date
}

/** A workspace's budgets. */
export function budgetsOf(db: Db | Prisma.TransactionClient, workspaceId: string) {
  return db.$queryRaw<BudgetRow[]>`
    SELECT id, workspace_id, interval, limit_micros, created_at, updated_at FROM workspace_budgets
    WHERE workspace_id = ${workspaceId}::uuid`
}

/** Locks a workspace's row until the transaction ends (its budgets are checked against each other). */
export async function lockWorkspace(tx: Prisma.TransactionClient, workspaceId: string) {
  await tx.$executeRaw`SELECT 1 FROM workspaces WHERE id = ${workspaceId}::uuid FOR UPDATE`
}

/** Creates or replaces a workspace's budget for an interval; its row. */
export async function upsertBudget(
  db: Db | Prisma.TransactionClient,
  workspaceId: string,
  interval: BudgetInterval,
  limitMicros: bigint,
): Promise<BudgetRow> {
  const rows = await db.$queryRaw<BudgetRow[]>`
    INSERT INTO workspace_budgets (id, workspace_id, interval, limit_micros)
    VALUES (gen_random_uuid(), ${workspaceId}::uuid, ${interval}, ${limitMicros})
    ON CONFLICT (workspace_id, interval) DO UPDATE SET limit_micros = EXCLUDED.limit_micros, updated_at = now()
    RETURNING id, workspace_id, interval, limit_micros, created_at, updated_at`
  return rows[0]!
}

/** Whether BYOK spend counts against every budget of the workspace. */
export async function updateByokInBudgets(db: Db | Prisma.TransactionClient, workspaceId: string, on: boolean) {
  await db.workspace.update({ where: { id: workspaceId }, data: { includeByokInBudgets: on, updatedAt: new Date() } })
}

export async function deleteBudget(db: Db, workspaceId: string, interval: BudgetInterval) {
  await db.workspaceBudget.deleteMany({ where: { workspaceId, interval } })
}

// ── members ──────────────────────────────────────────────────────────────────────────────────────

export interface MemberRow {
  id: string
  workspace_id: string
  user_id: string
  role: string
  created_at: Date
}

/**
 * A page of a workspace's members: those whose own workspace it is and those added to it (every
 * member of the account, for the default workspace), oldest first, with how many there are.
 */
export async function memberPage(
  db: Db,
  w: { id: string; account_id: string; is_default: boolean },
  offset: number,
  limit: number,
) {
  const members = Prisma.sql`
    SELECT u.id AS id, ${w.id}::uuid AS workspace_id, u.id AS user_id, 'member' AS role, u.created_at
    FROM users u JOIN workspaces h ON h.id = u.workspace_id
    WHERE ${w.is_default ? Prisma.sql`h.account_id = ${w.account_id}::uuid` : Prisma.sql`u.workspace_id = ${w.id}::uuid`}
    UNION
    SELECT m.id, m.workspace_id, m.user_id, m.role, m.created_at FROM workspace_members m
    WHERE m.workspace_id = ${w.id}::uuid ${w.is_default ? Prisma.sql`AND false` : Prisma.empty}`
  const [rows, total] = await Promise.all([
    db.$queryRaw<
      MemberRow[]
    >`SELECT * FROM (${members}) x ORDER BY created_at, user_id LIMIT ${limit} OFFSET ${offset}`,
    db.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM (${members}) x`,
  ])
  return { rows, total: total[0]?.n ?? 0 }
}

/** Which of `userIds` are members of `accountId` (users of any of its workspaces). */
export async function accountUsers(db: Db | Prisma.TransactionClient, accountId: string, userIds: string[]) {
  const rows = await db.$queryRaw<{ id: string; workspace_id: string }[]>`
    SELECT u.id, u.workspace_id FROM users u JOIN workspaces w ON w.id = u.workspace_id
    WHERE w.account_id = ${accountId}::uuid AND u.id = ANY(${userIds}::uuid[])`
  return new Map(rows.map((r) => [r.id, r.workspace_id]))
}

/** Adds members to a workspace (those already added are left); the rows added. */
export function insertMembers(db: Db | Prisma.TransactionClient, workspaceId: string, userIds: string[]) {
  return db.$queryRaw<MemberRow[]>`
    INSERT INTO workspace_members (id, workspace_id, user_id)
    SELECT gen_random_uuid(), ${workspaceId}::uuid, u FROM unnest(${userIds}::uuid[]) AS u
    ON CONFLICT (workspace_id, user_id) DO NOTHING
    RETURNING id, workspace_id, user_id, role, created_at`
}

/** Of `userIds`, those holding a key that authenticates in the workspace. */
export async function membersWithActiveKeys(db: Db | Prisma.TransactionClient, workspaceId: string, userIds: string[]) {
  const rows = await db.apiKey.findMany({
    where: { workspaceId, userId: { in: userIds }, revokedAt: null, disabled: false },
    select: { userId: true },
    distinct: ['userId'],
  })
  return rows.map((r) => r.userId!)
}

/** Removes members added to a workspace; how many were removed. */
export async function deleteMembers(db: Db | Prisma.TransactionClient, workspaceId: string, userIds: string[]) {
  return (await db.workspaceMember.deleteMany({ where: { workspaceId, userId: { in: userIds } } })).count
}

/** Whether a user is a member of a workspace: its own, one it was added to, or the default one of its account. */
export async function isMember(db: Db | Prisma.TransactionClient, workspaceId: string, userId: string) {
  const rows = await db.$queryRaw<{ ok: boolean }[]>`
    SELECT EXISTS (
      SELECT 1 FROM users u JOIN workspaces h ON h.id = u.workspace_id JOIN workspaces w ON w.id = ${workspaceId}::uuid
      WHERE u.id = ${userId}::uuid AND h.account_id = w.account_id
        AND (u.workspace_id = w.id OR w.is_default
             OR EXISTS (SELECT 1 FROM workspace_members m WHERE m.workspace_id = w.id AND m.user_id = u.id))) AS ok`
  return rows[0]?.ok ?? false
}
