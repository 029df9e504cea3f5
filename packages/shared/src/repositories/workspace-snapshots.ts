import type { Db } from '../db.js'

// The workspace_snapshots table's statements (the latest snapshot of each intern's workspace: its
// bytes in the row, or the key of an object in the S3 store), and snapshot_garbage's (objects no
// row points at any more, recorded by a trigger for the S3 store's sweep).

export interface SnapshotRow {
  store: 'postgres' | 's3'
  bytes: Buffer | null
  key: string | null
  sha256: string
  generation: number
  size: number
}

/** Records `row` as the intern's latest snapshot, replacing the one before. */
export async function putSnapshotRow(db: Db, internId: string, row: SnapshotRow): Promise<void> {
  await db.$executeRaw`
    INSERT INTO workspace_snapshots (intern_id, generation, store, bytes, key, size, sha256, taken_at)
    VALUES (${internId}::uuid, ${row.generation}, ${row.store}, ${row.bytes}, ${row.key}, ${row.size}, ${row.sha256}, now())
    ON CONFLICT (intern_id) DO UPDATE SET generation = EXCLUDED.generation, store = EXCLUDED.store, bytes = EXCLUDED.bytes,
      key = EXCLUDED.key, size = EXCLUDED.size, sha256 = EXCLUDED.sha256, taken_at = now()`
}

/** The intern's latest snapshot, if it is kept in `store`. */
export async function snapshotRow(db: Db, internId: string, store: SnapshotRow['store']) {
  const [row] = await db.$queryRaw<
    { bytes: Uint8Array | null; key: string | null; sha256: string; generation: number; size: number }[]
  >`
    SELECT bytes, key, sha256, generation, size FROM workspace_snapshots WHERE intern_id = ${internId}::uuid AND store = ${store}`
  return row
}

/** The digest and generation of the intern's latest snapshot alone. */
export async function latestSnapshot(db: Db, internId: string) {
  const [row] = await db.$queryRaw<
    { sha256: string; generation: number }[]
  >`SELECT sha256, generation FROM workspace_snapshots WHERE intern_id = ${internId}::uuid`
  return row
}

/**
 * Takes up to `batch` garbage objects' keys off the list in the caller's transaction (rows other
 * sweepers hold are skipped): they are gone if it commits, back if it rolls back.
 */
export async function takeSnapshotGarbage(tx: Pick<Db, '$queryRaw'>, batch: number): Promise<string[]> {
  const rows = await tx.$queryRaw<{ key: string }[]>`
    DELETE FROM snapshot_garbage WHERE key IN (SELECT key FROM snapshot_garbage ORDER BY added_at FOR UPDATE SKIP LOCKED LIMIT ${batch}) RETURNING key`
  return rows.map((r) => r.key)
}
