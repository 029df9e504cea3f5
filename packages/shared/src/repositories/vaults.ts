import { randomUUID } from 'node:crypto'
import type { Db, Prisma } from '../db.js'

// The vaults' tables' statements: vaults (a sealed data key each), vault_secrets (sealed values,
// users' and Roster's own `system` ones), vault_master_keys (the keyring: fingerprints of the
// master keys that sealed the data keys) and a workspace's pointer to its workspace-scope vault.
// Values arrive sealed and leave sealed: sealing and opening is the vault modules' work.

type Tx = Db | Prisma.TransactionClient

/** A vault's sealed data key. */
export async function sealedDataKey(db: Tx, vaultId: string): Promise<Uint8Array | undefined> {
  const rows = await db.$queryRaw<{ sealed_data_key: Uint8Array }[]>`
    SELECT sealed_data_key FROM vaults WHERE id = ${vaultId}::uuid`
  return rows[0]?.sealed_data_key
}

/** A vault's sealed data key with its system secret `name`'s sealed value (null: none yet); undefined: no such vault. */
export async function systemSecretWithKey(db: Tx, vaultId: string, name: string) {
  const rows = await db.$queryRaw<{ sealed_data_key: Uint8Array; sealed_value: Uint8Array | null }[]>`
    SELECT v.sealed_data_key, s.sealed_value FROM vaults v
    LEFT JOIN vault_secrets s ON s.vault_id = v.id AND s.system AND s.name = ${name}
    WHERE v.id = ${vaultId}::uuid`
  return rows[0]
}

/** A system secret's sealed value. */
export async function systemSecret(db: Tx, vaultId: string, name: string): Promise<Uint8Array | undefined> {
  const rows = await db.$queryRaw<{ sealed_value: Uint8Array }[]>`
    SELECT sealed_value FROM vault_secrets WHERE vault_id = ${vaultId}::uuid AND system AND name = ${name}`
  return rows[0]?.sealed_value
}

/** Stores a system secret unless one of that name is there already; whether this one was stored. */
export async function insertSystemSecret(
  db: Tx,
  s: { vaultId: string; name: string; hosts: string[]; sealed: Buffer; fingerprint: string },
): Promise<boolean> {
  const written = await db.$executeRaw`
    INSERT INTO vault_secrets (id, vault_id, system, name, hosts, sealed_value, fingerprint)
    VALUES (${randomUUID()}::uuid, ${s.vaultId}::uuid, true, ${s.name}, ${s.hosts}::text[], ${s.sealed}, ${s.fingerprint})
    ON CONFLICT (vault_id, system, name) DO NOTHING`
  return written === 1
}

/** The workspace-scope vault's id (null: none yet); `lock` takes the workspace row's lock first. */
export async function workspaceVaultId(db: Tx, workspaceId: string, lock = false): Promise<string | null> {
  const rows = lock
    ? await db.$queryRaw<
        { vault_id: string | null }[]
      >`SELECT vault_id FROM workspaces WHERE id = ${workspaceId}::uuid FOR UPDATE`
    : await db.$queryRaw<{ vault_id: string | null }[]>`SELECT vault_id FROM workspaces WHERE id = ${workspaceId}::uuid`
  return rows[0]?.vault_id ?? null
}

/** A new vault made the workspace's workspace-scope vault (in the caller's transaction, under the row's lock). */
export async function insertWorkspaceVault(
  tx: Prisma.TransactionClient,
  workspaceId: string,
  vault: { id: string; masterKeyId: string; sealedDataKey: Buffer },
): Promise<void> {
  await tx.$executeRaw`INSERT INTO vaults (id, workspace_id, master_key_id, sealed_data_key) VALUES (${vault.id}::uuid, ${workspaceId}::uuid, ${vault.masterKeyId}::uuid, ${vault.sealedDataKey})`
  await tx.$executeRaw`UPDATE workspaces SET vault_id = ${vault.id}::uuid WHERE id = ${workspaceId}::uuid`
}

/**
 * The keyring's rows, with whether each is `fingerprint`, under a key-share lock (a rotation holds
 * the keyring), waiting at most `lockTimeoutMs` for it (then Postgres raises 55P03).
 */
export async function lockKeyring(tx: Prisma.TransactionClient, fingerprint: Buffer, lockTimeoutMs: number) {
  await tx.$executeRawUnsafe(`SET LOCAL lock_timeout = ${Math.max(1, Math.floor(lockTimeoutMs))}`)
  return tx.$queryRaw<{ id: string; matches: boolean }[]>`
    SELECT id, fingerprint = ${fingerprint} AS matches FROM vault_master_keys FOR KEY SHARE`
}

/** Registers a master key's fingerprint in the keyring (once); its row's id. */
export async function registerMasterKey(tx: Prisma.TransactionClient, fingerprint: Buffer): Promise<string> {
  const inserted = await tx.$queryRaw<{ id: string }[]>`
    INSERT INTO vault_master_keys (id, fingerprint) VALUES (${randomUUID()}::uuid, ${fingerprint})
    ON CONFLICT (fingerprint) DO UPDATE SET fingerprint = EXCLUDED.fingerprint
    RETURNING id`
  return inserted[0]!.id
}

/** Every master key's fingerprint in the keyring. */
export async function masterKeyFingerprints(db: Db): Promise<Buffer[]> {
  const known = await db.$queryRaw<{ fingerprint: Uint8Array }[]>`SELECT fingerprint FROM vault_master_keys`
  return known.map((k) => Buffer.from(k.fingerprint))
}

// ── users' secrets ───────────────────────────────────────────────────────────────────────────────

export interface SecretRow {
  name: string
  hosts: string[] | null
  fingerprint: string
  created_at: Date
}

/** A user's secret, sealed and ready to write. */
export interface SealedSecret {
  vaultId: string
  name: string
  hosts: string[]
  sealed: Buffer
  fingerprint: string
}

/** Creates or replaces each secret (value and hosts), the first store's created_at kept: one statement for all. */
export function upsertSecrets(db: Tx, items: SealedSecret[]) {
  // Hosts travel as JSON: unnest flattens an array of arrays.
  return db.$queryRaw<(SecretRow & { vault_id: string })[]>`
    INSERT INTO vault_secrets (id, vault_id, system, name, hosts, sealed_value, fingerprint)
    SELECT gen_random_uuid(), s.vault_id, false, s.name, ARRAY(SELECT json_array_elements_text(s.hosts)), s.sealed, s.fingerprint
    FROM unnest(${items.map((i) => i.vaultId)}::uuid[], ${items.map((i) => i.name)}::text[], ${items.map((i) => JSON.stringify(i.hosts))}::json[],
                ${items.map((i) => i.sealed)}::bytea[], ${items.map((i) => i.fingerprint)}::text[]) AS s(vault_id, name, hosts, sealed, fingerprint)
    ON CONFLICT (vault_id, system, name) DO UPDATE
      SET hosts = EXCLUDED.hosts, sealed_value = EXCLUDED.sealed_value, fingerprint = EXCLUDED.fingerprint, updated_at = now()
    RETURNING vault_id, name, hosts, fingerprint, created_at`
}

/** Deletes a user's secret; whether there was one. */
export async function deleteSecretRow(db: Db, vaultId: string, name: string): Promise<boolean> {
  const gone =
    await db.$executeRaw`DELETE FROM vault_secrets WHERE vault_id = ${vaultId}::uuid AND NOT system AND name = ${name}`
  return gone > 0
}

/** A page of a vault's user secrets by name (byte order): up to `limit + 1` rows (one more says there are more). */
export function secretPage(db: Db, vaultId: string, limit: number, offset: number) {
  return db.$queryRaw<SecretRow[]>`
    SELECT name, hosts, fingerprint, created_at FROM vault_secrets
    WHERE vault_id = ${vaultId}::uuid AND NOT system ORDER BY name COLLATE "C" LIMIT ${limit + 1} OFFSET ${offset}`
}

/** The named user secrets of a vault, sealed, under a share lock (a store to one waits for the caller's transaction). */
export function shareLockedSecrets(tx: Prisma.TransactionClient, vaultId: string, names: string[]) {
  return tx.$queryRaw<{ name: string; hosts: string[] | null; sealed_value: Uint8Array }[]>`
    SELECT name, hosts, sealed_value FROM vault_secrets
    WHERE vault_id = ${vaultId}::uuid AND NOT system AND name = ANY(${names}::text[]) FOR SHARE`
}

/** One row per name across an intern's vaults, the first scope that has it winning (intern → attached → workspace). */
export function effectiveSecretPage(
  db: Db,
  vaults: { intern: string | null; attached: string | null; workspace: string | null },
  limit: number,
  offset: number,
) {
  return db.$queryRaw<(SecretRow & { scope: 'intern' | 'attached' | 'workspace' })[]>`
    SELECT DISTINCT ON (s.name COLLATE "C") s.name, s.hosts, s.fingerprint, s.created_at, v.scope
    FROM vault_secrets s
    JOIN (VALUES (${vaults.intern}::uuid, 'intern', 0), (${vaults.attached}::uuid, 'attached', 1), (${vaults.workspace}::uuid, 'workspace', 2))
      AS v(vault_id, scope, rank) ON v.vault_id = s.vault_id
    WHERE NOT s.system
    ORDER BY s.name COLLATE "C", v.rank
    LIMIT ${limit + 1} OFFSET ${offset}`
}

/** The secret each name resolves to for an intern (its own, else its attached vault's, else its workspace's), sealed. */
export function resolvedSecrets(db: Db, internId: string) {
  return db.$queryRaw<{ vault_id: string; name: string; hosts: string[] | null; sealed_value: Uint8Array }[]>`
    WITH owner AS (
      SELECT i.vault_id AS own, i.attached_vault_id AS attached, w.vault_id AS pool
      FROM interns i JOIN workspaces w ON w.id = i.workspace_id WHERE i.id = ${internId}::uuid)
    SELECT DISTINCT ON (s.name COLLATE "C") s.vault_id, s.name, s.hosts, s.sealed_value
    FROM vault_secrets s
    JOIN (SELECT own AS vault_id, 0 AS rank FROM owner UNION ALL SELECT attached, 1 FROM owner UNION ALL SELECT pool, 2 FROM owner) v
      ON v.vault_id = s.vault_id
    WHERE NOT s.system
    ORDER BY s.name COLLATE "C", v.rank`
}
