import type { Db } from '../db.js'
import type { ApiKeyKind } from '../api-keys.js'

// The api_keys table's statements.

export interface CallerRow {
  id: string
  kind: ApiKeyKind
  hash: Uint8Array
  workspace_id: string
  user_id: string | null
  intern_id: string | null
  account_id: string
  interns_enabled: boolean
  in_programme: boolean
  lifecycle_writes: boolean
  vault_writes: boolean
}

/** The live key with this digest, with its workspace's and account's switches: one indexed lookup. */
export async function keyByHash(db: Db, hash: Buffer): Promise<CallerRow | undefined> {
  const rows = await db.$queryRaw<CallerRow[]>`
    SELECT k.id, k.kind::text AS kind, k.hash, k.workspace_id, k.user_id, k.intern_id,
           w.account_id, w.interns_enabled, a.in_programme, a.lifecycle_writes, a.vault_writes
    FROM api_keys k
    JOIN workspaces w ON w.id = k.workspace_id
    JOIN accounts a ON a.id = w.account_id
    WHERE k.hash = ${hash} AND k.revoked_at IS NULL`
  return rows[0]
}

/** A key's row (its digest and display prefix; the plaintext is never stored); its id. */
export async function insertKey(
  db: Db,
  key: {
    kind: ApiKeyKind
    workspaceId: string
    userId: string | null
    internId: string | null
    hash: Buffer
    prefix: string
  },
): Promise<string> {
  const row = await db.apiKey.create({
    data: { ...key, hash: new Uint8Array(key.hash) },
    select: { id: true },
  })
  return row.id
}

/**
 * An intern's own key (its runtime token's digest), in its workspace: written once whichever
 * attempt stores it (the digest is unique); deleting the intern deletes it.
 */
export async function insertInternKey(db: Db, internId: string, key: { hash: Buffer; prefix: string }): Promise<void> {
  await db.$executeRaw`
    INSERT INTO api_keys (id, kind, workspace_id, intern_id, hash, prefix)
    SELECT gen_random_uuid(), 'intern'::api_key_kind, i.workspace_id, i.id, ${key.hash}, ${key.prefix} FROM interns i WHERE i.id = ${internId}::uuid
    ON CONFLICT (hash) DO NOTHING`
}
