import type { Db } from './db.js'
import type { ApiKeyKind } from './api-keys.js'
import { digestsEqual, hashApiKey } from './api-keys.js'
import { keyByHash } from './repositories/api-keys.js'
import type { KeyLimit } from './generations.js'

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
  /** Epoch milliseconds after which the key no longer authenticates (a cached answer included); null: never. */
  expiresAt: number | null
  /** The key's spending limit (null: none); a change reaches every process with the key's change event. */
  limit: KeyLimit | null
}

export async function resolveCaller(db: Db, token: string): Promise<Caller | undefined> {
  const hash = hashApiKey(token)
  const row = await keyByHash(db, hash)
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
    expiresAt: row.expires_ms,
    limit:
      row.limit_micros === null
        ? null
        : {
            pico: BigInt(row.limit_micros) * 1_000_000n,
            reset: row.limit_reset,
            includeByok: row.include_byok_in_limit,
          },
  }
}
