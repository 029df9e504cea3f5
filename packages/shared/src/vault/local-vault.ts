import { randomBytes, randomUUID } from 'node:crypto'
import { AppError } from '@roster/protocol'
import { pgErrorCode, type Db, type Prisma } from '../db.js'
import { masterKeyFingerprint, seal, secretFingerprint, unseal } from './seal.js'
import {
  insertSystemSecret,
  insertWorkspaceVault,
  lockKeyring,
  masterKeyFingerprints,
  registerMasterKey,
  sealedDataKey,
  systemSecret,
  systemSecretWithKey,
  workspaceVaultId,
} from '../repositories/vaults.js'

type Tx = Db | Prisma.TransactionClient

/**
 * Vaults behind a small interface, so a deployment can put a KMS behind it without touching the
 * flows that create interns. This implementation keeps sealed keys and secrets in Postgres.
 */
/** Key material for a new vault; the caller writes the row in its own statement. */
export interface NewVault {
  id: string
  masterKeyId: string
  sealedDataKey: Buffer
}

export interface VaultService {
  /** Makes a new vault's sealed data key (what a KMS call would do elsewhere). */
  newVault(db: Tx): Promise<NewVault>
  /** Returns the named secret, storing a new value first when there is none. Idempotent. */
  ensureSecret(db: Tx, vaultId: string, name: string, value: () => string, hosts?: string[]): Promise<string>
  readSecret(db: Tx, vaultId: string, name: string): Promise<string | undefined>
  /** A vault's data key (for the secrets API, which seals and fingerprints values with it). */
  dataKeyOf(db: Tx, vaultId: string): Promise<Buffer>
  /** The workspace-scope vault's id; with `create`, made on first use. */
  workspaceVault(db: Db, workspaceId: string, create: boolean): Promise<string | null>
}

// Roster's own secrets (an intern's runtime credential) are `system` rows: apart from users'
// secrets of the same name, and never reached through the vault API.

export interface LocalVaultOptions {
  masterKey: Buffer | undefined
  /** How long to wait for the keyring (e.g. during a key rotation) before giving up recoverably. */
  lockTimeoutMs: number
}

export class LocalVault implements VaultService {
  private masterKeyId: string | undefined
  private resolving: Promise<string> | undefined
  private readonly fingerprint: Buffer | undefined
  private readonly dataKeys = new Map<string, Buffer>()
  private readonly workspaceVaults = new Map<string, string>()

  constructor(private readonly options: LocalVaultOptions) {
    this.fingerprint = options.masterKey && masterKeyFingerprint(options.masterKey)
  }

  async newVault(db: Tx): Promise<NewVault> {
    const masterKey = this.requireMasterKey()
    const id = randomUUID()
    const sealedDataKey = seal(masterKey, randomBytes(32), `vault:${id}`)
    return { id, masterKeyId: await this.resolveMasterKeyId(db), sealedDataKey }
  }

  async ensureSecret(
    db: Tx,
    vaultId: string,
    name: string,
    value: () => string,
    hosts: string[] = [],
  ): Promise<string> {
    const masterKey = this.requireMasterKey()
    const aad = `secret:${vaultId}:${name}`
    const row = await systemSecretWithKey(db, vaultId, name)
    if (!row) throw new AppError('not_found', `vault ${vaultId} does not exist`)
    const dataKey = this.openDataKey(masterKey, vaultId, row.sealed_data_key)
    if (row.sealed_value) return unseal(dataKey, Buffer.from(row.sealed_value), aad).toString()
    const plaintext = value()
    const stored = await insertSystemSecret(db, {
      vaultId,
      name,
      hosts,
      sealed: seal(dataKey, Buffer.from(plaintext), aad),
      fingerprint: secretFingerprint(dataKey, plaintext),
    })
    if (stored) return plaintext
    // Someone stored it between our read and our write: theirs stands.
    return (await this.readSecret(db, vaultId, name))!
  }

  async readSecret(db: Tx, vaultId: string, name: string): Promise<string | undefined> {
    const sealed = await systemSecret(db, vaultId, name)
    if (!sealed) return undefined
    const dataKey = await this.dataKey(db, vaultId)
    return unseal(dataKey, Buffer.from(sealed), `secret:${vaultId}:${name}`).toString()
  }

  /**
   * A vault's data key, opened with the master key. Sealed data keys never change, so an opened one
   * is kept (as a KMS client caches data keys): a secret store is then one statement.
   */
  async dataKeyOf(db: Tx, vaultId: string): Promise<Buffer> {
    const cached = this.dataKeys.get(vaultId)
    if (cached) return cached
    const key = await this.dataKey(db, vaultId)
    if (this.dataKeys.size >= 10_000) this.dataKeys.clear()
    this.dataKeys.set(vaultId, key)
    return key
  }

  /**
   * The workspace-scope vault's id; with `create`, made on first use (under the workspace row's
   * lock, so two first writes make one vault). Kept once known: it never changes.
   */
  async workspaceVault(db: Db, workspaceId: string, create: boolean): Promise<string | null> {
    const known = this.workspaceVaults.get(workspaceId)
    if (known) return known
    let id = await workspaceVaultId(db, workspaceId)
    if (!id && create) {
      const fresh = await this.newVault(db)
      id = await db.$transaction(async (tx) => {
        const locked = await workspaceVaultId(tx, workspaceId, true)
        if (locked) return locked
        await insertWorkspaceVault(tx, workspaceId, fresh)
        return fresh.id
      })
    }
    if (id) this.workspaceVaults.set(workspaceId, id)
    return id
  }

  private async dataKey(db: Tx, vaultId: string): Promise<Buffer> {
    const sealed = await sealedDataKey(db, vaultId)
    if (!sealed) throw new AppError('not_found', `vault ${vaultId} does not exist`)
    return this.openDataKey(this.requireMasterKey(), vaultId, sealed)
  }

  private openDataKey(masterKey: Buffer, vaultId: string, sealed: Uint8Array): Buffer {
    try {
      return unseal(masterKey, Buffer.from(sealed), `vault:${vaultId}`)
    } catch (cause) {
      throw new AppError('configuration_error', 'the vault master key cannot open this vault', { cause })
    }
  }

  private requireMasterKey(): Buffer {
    if (!this.options.masterKey) {
      throw new AppError('configuration_error', 'the vault master key (VAULT_MASTER_KEY) is not configured')
    }
    return this.options.masterKey
  }

  /**
   * The keyring row of the configured master key; the first key ever used registers itself. Looked
   * up once per process. The lookup waits at most lockTimeoutMs for the keyring (a rotation holds
   * it), then fails recoverably: the caller answers 502 and the same request can be sent again.
   */
  private async resolveMasterKeyId(db: Tx): Promise<string> {
    if (this.masterKeyId) return this.masterKeyId
    // Outside a transaction, concurrent first uses share one lookup: a burst of creates at start-up
    // would otherwise open one keyring transaction each and wait on the pool for them.
    if (!('$transaction' in db)) return this.lookUpMasterKeyId(db)
    this.resolving ??= this.lookUpMasterKeyId(db).finally(() => (this.resolving = undefined))
    return this.resolving
  }

  private async lookUpMasterKeyId(db: Tx): Promise<string> {
    const fingerprint = this.fingerprint!
    const run = async (tx: Prisma.TransactionClient) => {
      const found = await lockKeyring(tx, fingerprint, this.options.lockTimeoutMs)
      const match = found.find((r) => r.matches)
      if (match) return match.id
      if (found.length > 0) {
        throw new AppError(
          'configuration_error',
          'the configured vault master key is not the one that sealed the existing vaults',
        )
      }
      return registerMasterKey(tx, fingerprint)
    }
    try {
      const id = '$transaction' in db ? await (db as Db).$transaction(run) : await run(db as Prisma.TransactionClient)
      return (this.masterKeyId = id)
    } catch (err) {
      if (pgErrorCode(err) === '55P03') {
        throw new AppError('upstream_unavailable', 'the vault keyring is busy; retry the same request', { cause: err })
      }
      throw err
    }
  }
}

/**
 * Why `masterKey` cannot serve this database's vaults, or undefined when it can: the keyring is
 * empty (the key registers on first use) or holds it. Processes check at start-up, so a wrong key
 * stops them with the fix named instead of answering 500 to every create.
 */
export async function masterKeyProblem(db: Db, masterKey: Buffer, databaseUrl: string): Promise<string | undefined> {
  const fingerprint = masterKeyFingerprint(masterKey)
  const known = await masterKeyFingerprints(db)
  if (known.length === 0 || known.some((k) => fingerprint.equals(k))) return undefined
  const where = new URL(databaseUrl)
  where.password = ''
  return (
    `VAULT_MASTER_KEY is not the key that sealed the vaults in ${where.href}. Start with the key that sealed them ` +
    '(npm start keeps the keys it generates in ~/.config/roster/vault-master-keys.json, one per database), ' +
    'or point DATABASE_URL at another database.'
  )
}
