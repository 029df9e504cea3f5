import type { Db, Prisma } from '../db.js'

// slack_links: an intern's link to its Slack app (sealed credentials, the install's nonce, the
// workspace it was installed in). Secrets arrive and leave sealed; sealing is slack/'s work.

type Tx = Db | Prisma.TransactionClient

export interface NewSlackLink {
  internId: string
  origin: 'team' | 'minted'
  /** A minted app's id (a team-made app's is learnt at its install). */
  appId: string | null
  clientId: string
  provisionOnInstall: boolean
  approvers: string[]
  sealed: Buffer
}

export async function insertSlackLink(db: Tx, link: NewSlackLink) {
  await db.slackLink.create({
    data: {
      internId: link.internId,
      origin: link.origin,
      appId: link.appId,
      clientId: link.clientId,
      provisionOnInstall: link.provisionOnInstall,
      approvers: link.approvers,
      sealed: new Uint8Array(link.sealed),
    },
  })
}

/** An intern's link, with the intern's workspace and status (undefined: none). */
export function slackLinkOf(db: Tx, internId: string) {
  return db.slackLink.findUnique({
    where: { internId },
    include: { intern: { select: { workspaceId: true, status: true } } },
  })
}

/** Starts an install: the nonce its OAuth state names replaces any earlier one (whose state then fails). */
export async function startInstall(db: Tx, internId: string, nonce: string): Promise<boolean> {
  const n = await db.slackLink.updateMany({
    where: { internId, state: { in: ['awaiting_install', 'revoked'] } },
    data: { installNonce: nonce, updatedAt: new Date() },
  })
  return n.count === 1
}

/** Takes the install's nonce, once: false when it is not the one under way (replayed, or superseded). */
export async function takeInstallNonce(db: Tx, internId: string, nonce: string): Promise<boolean> {
  const n = await db.slackLink.updateMany({
    where: { internId, installNonce: nonce },
    data: { installNonce: null, updatedAt: new Date() },
  })
  return n.count === 1
}

/**
 * Why the last install did not complete (the link stays as it was, and may be installed again);
 * `unlessInstalled`: left alone on a link that is installed.
 */
export async function setSlackLinkReason(
  db: Tx,
  internId: string,
  reason: string,
  o: { unlessInstalled?: boolean } = {},
) {
  await db.slackLink.updateMany({
    where: { internId, ...(o.unlessInstalled ? { state: { not: 'installed' } } : {}) },
    data: { reason, updatedAt: new Date() },
  })
}

export interface Installed {
  sealed: Buffer
  appId: string | null
  teamId: string
  teamName: string | null
  botUserId: string | null
  installerId: string | null
}

export async function markInstalled(db: Tx, internId: string, i: Installed) {
  const now = new Date()
  await db.slackLink.update({
    where: { internId },
    data: {
      state: 'installed',
      reason: null,
      sealed: new Uint8Array(i.sealed),
      // A minted app's id is known from its making; the install names the same.
      ...(i.appId ? { appId: i.appId } : {}),
      teamId: i.teamId,
      teamName: i.teamName,
      botUserId: i.botUserId,
      installerId: i.installerId,
      installedAt: now,
      updatedAt: now,
    },
  })
}

/** The link can no longer be used (uninstalled, token revoked): nothing more is posted. */
export async function revokeSlackLink(db: Tx, internId: string, reason: string) {
  await db.slackLink.updateMany({
    where: { internId, state: 'installed' },
    data: { state: 'revoked', reason, updatedAt: new Date() },
  })
}
