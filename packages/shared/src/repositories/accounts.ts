import type { Db, Prisma } from '../db.js'
import { QUOTA_SHARDS } from '../interns/quota.js'

// The accounts, workspaces and users tables' statements (an account holds workspaces; a workspace
// holds its members, the users).

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

export async function insertWorkspace(db: Db, accountId: string, internsEnabled: boolean): Promise<string> {
  return (await db.workspace.create({ data: { accountId, internsEnabled }, select: { id: true } })).id
}

/** A member of a workspace, with all its quota shards, empty (see MemberQuotaShard). */
export async function insertUser(db: Db | Prisma.TransactionClient, workspaceId: string): Promise<string> {
  const user = await db.user.create({
    data: {
      workspaceId,
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

/** The account a workspace belongs to (undefined: no such workspace). */
export async function workspaceAccount(
  db: Db | Prisma.TransactionClient,
  workspaceId: string,
): Promise<string | undefined> {
  return (await db.workspace.findUnique({ where: { id: workspaceId }, select: { accountId: true } }))?.accountId
}
