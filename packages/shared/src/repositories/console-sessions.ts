import type { Db } from '../db.js'

// console_sessions: web console sign-ins, by the SHA-256 of their opaque id (the browser's cookie
// holds the id; a database read gives no one a session).

export interface NewConsoleSession {
  idHash: Buffer
  keyHash: Buffer
  /** The key's id and workspace; null for the operator's session (kind "operator"). */
  keyId: string | null
  kind: string
  workspaceId: string | null
  /** The member a single sign-on session is for (null: a key's, or the operator's). */
  userId?: string | null
  expiresAt: Date
}

export async function insertConsoleSession(db: Db, s: NewConsoleSession) {
  await db.consoleSession.create({
    data: { ...s, idHash: new Uint8Array(s.idHash), keyHash: new Uint8Array(s.keyHash) },
  })
}

/** A session that is neither signed out nor past its end: what it acts as (a key, or the operator), and when it ends. */
export async function liveConsoleSession(db: Db, idHash: Buffer) {
  const row = await db.consoleSession.findUnique({ where: { idHash: new Uint8Array(idHash) } })
  if (!row || row.revokedAt || row.expiresAt.getTime() <= Date.now()) return undefined
  return { kind: row.kind, keyHash: Buffer.from(row.keyHash), userId: row.userId, expiresAt: row.expiresAt }
}

/** Signs a session out: false when it was not live. */
export async function revokeConsoleSession(db: Db, idHash: Buffer): Promise<boolean> {
  const n = await db.consoleSession.updateMany({
    where: { idHash: new Uint8Array(idHash), revokedAt: null },
    data: { revokedAt: new Date() },
  })
  return n.count === 1
}

/** Forgets sessions that ended more than a day ago. */
export async function pruneConsoleSessions(db: Db): Promise<number> {
  const n = await db.consoleSession.deleteMany({ where: { expiresAt: { lt: new Date(Date.now() - 86_400_000) } } })
  return n.count
}

/** Ends every live session of a member (disabled). */
export async function revokeMemberSessions(db: Db, userId: string): Promise<number> {
  const n = await db.consoleSession.updateMany({ where: { userId, revokedAt: null }, data: { revokedAt: new Date() } })
  return n.count
}
