import { openCredentials, type Db } from '@roster/shared'
import type { ByokCredential } from '@roster/gateway'

/**
 * The provider keys (BYOK) each workspace's requests may use, unsealed, kept in this process for
 * `ttlMs` or until the account's keys change (`forgetAccount`, on every process through the key
 * events). Only workspaces that have some are ever looked up (the caller says so), so most requests
 * pay nothing for this. Values live in memory only: never logged, never serialised.
 */
export class ByokDirectory {
  private readonly cached = new Map<
    string,
    { accountId: string; at: number; credentials: Promise<readonly ByokCredential[]> }
  >()

  constructor(
    private readonly db: Db,
    private readonly masterKey: Buffer | undefined,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** The workspace's usable credentials (none without a master key to unseal them). */
  forWorkspace(accountId: string, workspaceId: string): Promise<readonly ByokCredential[]> {
    const hit = this.cached.get(workspaceId)
    if (hit && this.now() - hit.at < this.ttlMs) return hit.credentials
    if (!this.masterKey) return Promise.resolve([])
    const began = this.epoch
    const credentials = openCredentials(this.db, this.masterKey, accountId, workspaceId)
    if (this.cached.size > 10_000) this.cached.clear()
    const entry = { accountId, at: this.now(), credentials }
    this.cached.set(workspaceId, entry)
    // Not kept when it failed (the next request tries again), nor when a change came while it was
    // read (it may hold the row as it was before).
    const drop = () => this.cached.get(workspaceId) === entry && this.cached.delete(workspaceId)
    credentials.then(() => began !== this.epoch && drop(), drop)
    return credentials
  }

  private epoch = 0

  forgetAccount(accountId: string) {
    this.epoch++
    for (const [workspaceId, e] of this.cached) if (e.accountId === accountId) this.cached.delete(workspaceId)
  }
}
