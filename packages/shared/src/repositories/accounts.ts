import { Prisma, type Db } from '../db.js'
import { QUOTA_SHARDS } from '../interns/quota.js'

// The accounts and users tables' statements (an account holds workspaces, workspaces.ts; a
// workspace holds its members, the users).

export async function insertAccount(
  db: Db,
  switches: { inProgramme: boolean; lifecycleWrites: boolean; vaultWrites: boolean },
): Promise<string> {
  return (await db.account.create({ data: switches, select: { id: true } })).id
}

/** Sets an account's vault writes switch; false when there is no such account. */
export async function updateVaultWrites(db: Db, accountId: string, on: boolean): Promise<boolean> {
  const updated = await db.account.updateMany({ where: { id: accountId }, data: { vaultWrites: on } })
  return updated.count > 0
}

/** A member of a workspace, with all its quota shards, empty (see MemberQuotaShard). */
/** How the organization lists a member (all optional; a member without an e-mail lists it as ""). */
export interface MemberProfile {
  email?: string
  firstName?: string
  lastName?: string
  role?: 'org:admin' | 'org:member'
}

export async function insertUser(
  db: Db | Prisma.TransactionClient,
  workspaceId: string,
  profile: MemberProfile = {},
): Promise<string> {
  const user = await db.user.create({
    data: {
      workspaceId,
      ...profile,
      quotaShards: { createMany: { data: Array.from({ length: QUOTA_SHARDS }, (_, shard) => ({ shard })) } },
    },
    select: { id: true },
  })
  return user.id
}

/** The workspace a user belongs to (undefined: no such user). */
export async function userWorkspace(db: Db | Prisma.TransactionClient, userId: string): Promise<string | undefined> {
  return (await db.user.findUnique({ where: { id: userId }, select: { workspaceId: true } }))?.workspaceId
}

/** Sets an account's credits (USD × 10^6; null: unlimited); false when there is no such account. */
export async function updateCredits(db: Db, accountId: string, creditsMicros: bigint | null): Promise<boolean> {
  const updated = await db.account.updateMany({ where: { id: accountId }, data: { creditsMicros } })
  return updated.count > 0
}

/**
 * Adds to an account's credits (to an unlimited one: a grant of that much), unless that passes
 * `maxMicros`; false when nothing changed (no such account, or past the maximum).
 */
export async function addCredits(db: Db, accountId: string, micros: bigint, maxMicros: bigint): Promise<boolean> {
  const n = await db.$executeRaw`
    UPDATE accounts SET credits_micros = coalesce(credits_micros, 0) + ${micros}
    WHERE id = ${accountId}::uuid AND coalesce(credits_micros, 0) + ${micros} <= ${maxMicros}`
  return n > 0
}

/** An account's credits (USD × 10^6; null: unlimited), or undefined when there is no such account. */
export async function accountCredits(db: Db, accountId: string): Promise<bigint | null | undefined> {
  const row = await db.account.findUnique({ where: { id: accountId }, select: { creditsMicros: true } })
  return row ? row.creditsMicros : undefined
}

export interface OrganizationMemberRow {
  id: string
  email: string | null
  first_name: string | null
  last_name: string | null
  role: string
  disabled_at: Date | null
}

/** A page of an account's members (the users of its workspaces), oldest first, with how many there are. */
export async function organizationMembers(db: Db, accountId: string, offset: number, limit: number) {
  const [rows, total] = await Promise.all([
    db.$queryRaw<OrganizationMemberRow[]>`
      SELECT u.id, u.email, u.first_name, u.last_name, u.role, u.disabled_at FROM users u JOIN workspaces w ON w.id = u.workspace_id
      WHERE w.account_id = ${accountId}::uuid ORDER BY u.created_at, u.id LIMIT ${limit} OFFSET ${offset}`,
    db.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM users u JOIN workspaces w ON w.id = u.workspace_id
      WHERE w.account_id = ${accountId}::uuid`,
  ])
  return { rows, total: total[0]?.n ?? 0 }
}

export interface AccountMemberRow extends OrganizationMemberRow {
  account_id: string
  workspace_id: string
}

const MEMBER_COLUMNS = Prisma.sql`u.id, u.email, u.first_name, u.last_name, u.role, u.disabled_at, u.workspace_id, w.account_id`

/** A member of the account by id (undefined: none, or another account's). */
export async function memberOfAccount(
  db: Db,
  accountId: string,
  userId: string,
): Promise<AccountMemberRow | undefined> {
  const rows = await db.$queryRaw<AccountMemberRow[]>`
    SELECT ${MEMBER_COLUMNS} FROM users u JOIN workspaces w ON w.id = u.workspace_id
    WHERE u.id = ${userId}::uuid AND w.account_id = ${accountId}::uuid`
  return rows[0]
}

/** A member by id, in any account (a signed-in person's standing: role, disabled). */
export async function memberById(db: Db, userId: string): Promise<AccountMemberRow | undefined> {
  const rows = await db.$queryRaw<AccountMemberRow[]>`
    SELECT ${MEMBER_COLUMNS} FROM users u JOIN workspaces w ON w.id = u.workspace_id WHERE u.id = ${userId}::uuid`
  return rows[0]
}

/** The members with this e-mail (any case), oldest first: who a single sign-on person is. */
export function membersByEmail(db: Db, email: string): Promise<AccountMemberRow[]> {
  return db.$queryRaw<AccountMemberRow[]>`
    SELECT ${MEMBER_COLUMNS} FROM users u JOIN workspaces w ON w.id = u.workspace_id
    WHERE lower(u.email) = lower(${email}) ORDER BY u.created_at, u.id LIMIT 10`
}

/** Changes a member's role or disabled state; the new row (undefined: no such member of the account). */
export async function updateMember(
  db: Db,
  accountId: string,
  userId: string,
  change: {
    role?: 'org:admin' | 'org:member'
    disabled?: boolean
    firstName?: string | null
    lastName?: string | null
  },
): Promise<AccountMemberRow | undefined> {
  const rows = await db.$queryRaw<AccountMemberRow[]>`
    UPDATE users u SET
      role = coalesce(${change.role ?? null}, u.role),
      disabled_at = CASE WHEN ${change.disabled ?? null}::boolean IS NULL THEN u.disabled_at
                         WHEN ${change.disabled ?? null}::boolean THEN coalesce(u.disabled_at, now()) ELSE NULL END,
      first_name = CASE WHEN ${change.firstName !== undefined} THEN ${change.firstName ?? null} ELSE u.first_name END,
      last_name = CASE WHEN ${change.lastName !== undefined} THEN ${change.lastName ?? null} ELSE u.last_name END
    FROM workspaces w
    WHERE u.id = ${userId}::uuid AND w.id = u.workspace_id AND w.account_id = ${accountId}::uuid
    RETURNING ${MEMBER_COLUMNS}`
  return rows[0]
}

/** How many enabled admins the account has (its last one is not demoted or disabled). */
export async function enabledAdmins(db: Db, accountId: string): Promise<number> {
  const rows = await db.$queryRaw<{ n: number }[]>`
    SELECT count(*)::int AS n FROM users u JOIN workspaces w ON w.id = u.workspace_id
    WHERE w.account_id = ${accountId}::uuid AND u.role = 'org:admin' AND u.disabled_at IS NULL`
  return rows[0]?.n ?? 0
}
