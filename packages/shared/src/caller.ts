import type { Db } from './db.js'
import type { ApiKeyKind } from './api-keys.js'
import { digestsEqual, hashApiKey } from './api-keys.js'

/** Who is calling: resolved from the bearer key in one indexed lookup. */
export interface Caller {
  keyId: string
  kind: ApiKeyKind
  workspaceId: string
  accountId: string
  /** The member the key acts for (user keys only). */
  userId: string | null
  /** The intern a key of kind `intern` belongs to. */
  internId: string | null
  inProgramme: boolean
  lifecycleWrites: boolean
  /** The account's vault writes switch (an operator setting; on by default). */
  vaultWrites: boolean
  internsEnabled: boolean
}

interface CallerRow {
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

export async function resolveCaller(db: Db, token: string): Promise<Caller | undefined> {
  const hash = hashApiKey(token)
  const rows = await db.$queryRaw<CallerRow[]>`
    SELECT k.id, k.kind::text AS kind, k.hash, k.workspace_id, k.user_id, k.intern_id,
           w.account_id, w.interns_enabled, a.in_programme, a.lifecycle_writes, a.vault_writes
    FROM api_keys k
    JOIN workspaces w ON w.id = k.workspace_id
    JOIN accounts a ON a.id = w.account_id
    WHERE k.hash = ${hash} AND k.revoked_at IS NULL`
  const row = rows[0]
  if (!row || !digestsEqual(Buffer.from(row.hash), hash)) return undefined
  return {
    keyId: row.id,
    kind: row.kind,
    workspaceId: row.workspace_id,
    accountId: row.account_id,
    userId: row.kind === 'user' ? row.user_id : null,
    internId: row.kind === 'intern' ? row.intern_id : null,
    inProgramme: row.in_programme,
    lifecycleWrites: row.lifecycle_writes,
    vaultWrites: row.vault_writes,
    internsEnabled: row.interns_enabled,
  }
}
