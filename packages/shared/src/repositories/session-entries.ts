import { Prisma, type Db } from '../db.js'
import { HELD_BY_HOST } from './interns.js'

// Interns' sessions as the record keeps them (session_entries): every item of every session, in
// order, written through by the host the intern is placed on. The table's SQL, all of it (an
// archive reads the sessions too: archives.ts).

/** The sessions an intern has. */
export async function sessionIds(db: Db, internId: string): Promise<string[]> {
  const rows = await db.$queryRaw<
    { session_id: string }[]
  >`SELECT DISTINCT session_id FROM session_entries WHERE intern_id = ${internId}::uuid`
  return rows.map((r) => r.session_id)
}

/** One session's items, in order. */
export async function sessionItems(db: Db, internId: string, sessionId: string): Promise<Record<string, unknown>[]> {
  const rows = await db.$queryRaw<{ item: Record<string, unknown> }[]>`
    SELECT item FROM session_entries WHERE intern_id = ${internId}::uuid AND session_id = ${sessionId} ORDER BY seq`
  return rows.map((r) => r.item)
}

/**
 * Appends items to a session, numbered from `from` (a retried append writes nothing twice), only
 * while the intern is placed on `hostId` under `generation`: the placement checked and the items
 * written in one statement (the hot path of every turn). False when it is not placed there.
 */
export async function appendSessionEntries(
  db: Db,
  at: { internId: string; sessionId: string; hostId: string; generation: number },
  from: number,
  items: unknown[],
): Promise<boolean> {
  const [result] = await db.$queryRaw<{ placed: boolean }[]>`
    WITH here AS (
      SELECT 1 FROM interns WHERE id = ${at.internId}::uuid AND runtime_host_id = ${at.hostId} AND placement_generation = ${at.generation}
        AND ${HELD_BY_HOST}
    ), written AS (
      INSERT INTO session_entries (intern_id, session_id, seq, item)
      SELECT ${at.internId}::uuid, ${at.sessionId}, ${from} + ord - 1, item
      FROM jsonb_array_elements(${JSON.stringify(items)}::jsonb) WITH ORDINALITY AS t(item, ord)
      WHERE EXISTS (SELECT 1 FROM here)
      ON CONFLICT DO NOTHING
      RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM here) AS placed, (SELECT count(*) FROM written) AS written`
  return result?.placed === true
}

/**
 * An intern's sessions, the most recently active first: each with how many items it holds, when it
 * began and last changed, and the text of its first user message (its title).
 */
export function sessionSummaries(db: Db, internId: string, limit: number) {
  return db.$queryRaw<
    { session_id: string; items: number; started_at: Date; updated_at: Date; first_prompt: unknown }[]
  >`
    SELECT s.session_id, s.items, s.started_at, s.updated_at,
      (SELECT e.item->'content' FROM session_entries e
        WHERE e.intern_id = ${internId}::uuid AND e.session_id = s.session_id
          AND e.item->>'type' = 'message' AND e.item->>'role' = 'user'
        ORDER BY e.seq LIMIT 1) AS first_prompt
    FROM (
      SELECT session_id, count(*)::int AS items, min(created_at) AS started_at, max(created_at) AS updated_at
      FROM session_entries WHERE intern_id = ${internId}::uuid
      GROUP BY session_id ORDER BY max(created_at) DESC LIMIT ${limit}
    ) s
    ORDER BY s.updated_at DESC`
}

/** The last `limit` items of a session, in order, each with its number. */
export function sessionTail(db: Db, internId: string, sessionId: string, limit: number) {
  return db.$queryRaw<{ seq: number; item: Record<string, unknown>; created_at: Date }[]>`
    SELECT seq, item, created_at FROM (
      SELECT seq, item, created_at FROM session_entries
      WHERE intern_id = ${internId}::uuid AND session_id = ${sessionId}
      ORDER BY seq DESC LIMIT ${limit}
    ) t ORDER BY seq`
}

/**
 * The questions interns' runs asked since `since` that have not closed (no answer and no end of
 * their run recorded after them), the newest first: those of a workspace's running interns, or of
 * one intern.
 */
export function openQuestions(db: Db, q: { workspaceId: string; internId?: string; since: Date; limit: number }) {
  return db.$queryRaw<
    { intern_id: string; intern_name: string; session_id: string; item: Record<string, unknown>; created_at: Date }[]
  >`
    SELECT e.intern_id, i.name AS intern_name, e.session_id, e.item, e.created_at
    FROM session_entries e JOIN interns i ON i.id = e.intern_id
    WHERE e.item->>'type' = 'roster.interaction' AND e.created_at > ${q.since}
      AND i.workspace_id = ${q.workspaceId}::uuid AND i.status = 'running'
      ${q.internId ? Prisma.sql`AND i.id = ${q.internId}::uuid` : Prisma.empty}
      AND NOT EXISTS (
        SELECT 1 FROM session_entries c
        WHERE c.intern_id = e.intern_id AND c.session_id = e.session_id AND c.seq > e.seq
          AND c.item->>'type' = 'roster.interaction_closed' AND c.item->>'id' = e.item->>'id')
    ORDER BY e.created_at DESC
    LIMIT ${q.limit}`
}
