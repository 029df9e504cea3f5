import type { Db, Prisma } from '../db.js'

// slack_config_tokens: a workspace's sealed Slack app configuration token, its Slack workspace and
// expiry. Rotation happens under the row's lock: Slack's refresh token is single use, so two
// rotations at once would leave one holding a spent token.

type Tx = Db | Prisma.TransactionClient

export interface SlackConfigTokenRow {
  workspaceId: string
  teamId: string
  sealed: Uint8Array
  expiresAt: Date
}

export async function upsertSlackConfigToken(db: Tx, row: SlackConfigTokenRow) {
  const now = new Date()
  const data = { teamId: row.teamId, sealed: new Uint8Array(row.sealed), expiresAt: row.expiresAt, rotatedAt: now }
  await db.slackConfigToken.upsert({
    where: { workspaceId: row.workspaceId },
    create: { workspaceId: row.workspaceId, ...data },
    update: data,
  })
}

export function slackConfigTokenOf(db: Tx, workspaceId: string): Promise<SlackConfigTokenRow | null> {
  return db.slackConfigToken.findUnique({ where: { workspaceId } })
}

/** The row, locked until the transaction ends (a rotation under way elsewhere is waited for). */
export async function lockSlackConfigToken(tx: Prisma.TransactionClient, workspaceId: string) {
  const rows = await tx.$queryRaw<{ workspace_id: string }[]>`
    SELECT workspace_id FROM slack_config_tokens WHERE workspace_id = ${workspaceId}::uuid FOR UPDATE`
  return rows.length === 1 ? slackConfigTokenOf(tx, workspaceId) : null
}

export async function deleteSlackConfigToken(db: Tx, workspaceId: string): Promise<boolean> {
  const n = await db.slackConfigToken.deleteMany({ where: { workspaceId } })
  return n.count === 1
}
