import type { Db } from '../db.js'

// What is kept of an intern when it is deleted, off every runtime host: its configuration (no key),
// its sessions, and its workspace as of its latest snapshot. The deleting transaction writes it
// before the intern's row (and with it the snapshot row and the session entries) goes.

type Tx = Pick<Db, '$queryRaw'>

/** Archives a `destroying` intern in `tx` (which must go on to delete it); the archive's id, or undefined when it is not destroying. */
export async function archiveIntern(tx: Tx, internId: string): Promise<string | undefined> {
  const [row] = await tx.$queryRaw<{ id: string }[]>`
    INSERT INTO workspace_archives (id, intern_id, workspace_id, name, configuration, sessions, store, bytes, key, size, sha256)
    SELECT gen_random_uuid(), i.id, i.workspace_id, i.name,
      jsonb_build_object('name', i.name, 'description', i.description, 'instructions', i.instructions, 'model', i.model,
        'hostname', i.hostname, 'created_at', i.created_at),
      COALESCE((SELECT jsonb_object_agg(e.session_id, e.items) FROM (
        SELECT session_id, jsonb_agg(item ORDER BY seq) AS items FROM session_entries WHERE intern_id = i.id GROUP BY session_id) e), '{}'::jsonb),
      s.store, s.bytes, s.key, s.size, s.sha256
    FROM interns i LEFT JOIN workspace_snapshots s ON s.intern_id = i.id
    WHERE i.id = ${internId}::uuid AND i.status = 'destroying'
    RETURNING id::text`
  return row?.id
}

export interface ArchiveSummary {
  id: string
  intern_id: string
  workspace_id: string
  name: string
  sessions: number
  workspace_bytes: number | null
  store: string | null
  archived_at: Date
}

/** The archives of a workspace (or of all), newest first. */
export async function listArchives(db: Db, workspaceId?: string): Promise<ArchiveSummary[]> {
  return db.$queryRaw<ArchiveSummary[]>`
    SELECT id::text, intern_id::text, workspace_id::text, name, (SELECT count(*)::int FROM jsonb_object_keys(sessions)) AS sessions,
      size AS workspace_bytes, store, archived_at
    FROM workspace_archives WHERE ${workspaceId ?? null}::uuid IS NULL OR workspace_id = ${workspaceId ?? null}::uuid
    ORDER BY archived_at DESC LIMIT 1000`
}

/** One archive whole: its workspace's gzipped tar (postgres store) or the object's key (s3 store). */
export async function getArchive(db: Db, id: string) {
  const [row] = await db.$queryRaw<
    {
      id: string
      intern_id: string
      name: string
      configuration: unknown
      sessions: Record<string, unknown[]>
      store: string | null
      bytes: Uint8Array | null
      key: string | null
      sha256: string | null
    }[]
  >`
    SELECT id::text, intern_id::text, name, configuration, sessions, store, bytes, key, sha256 FROM workspace_archives WHERE id = ${id}::uuid`
  return row && { ...row, bytes: row.bytes ? Buffer.from(row.bytes) : null }
}
