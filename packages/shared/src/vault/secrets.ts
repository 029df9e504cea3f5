import { createHmac } from 'node:crypto'
import { z } from 'zod'
import { AppError } from '@roster/protocol'
import type { Db, Prisma } from '../db.js'
import { GroupCommit } from '../group-commit.js'
import { seal, unseal } from './seal.js'
import type { VaultService } from './local-vault.js'
import {
  deleteSecretRow,
  effectiveSecretPage,
  resolvedSecrets,
  secretPage,
  shareLockedSecrets,
  upsertSecrets,
  type SealedSecret,
  type SecretRow,
} from '../repositories/vaults.js'

// The vault secrets API's domain: names, hosts and bodies as the official client sends them, and
// the store, delete, list, copy and effective-view operations on one vault. Who may reach which
// vault is decided by the caller (vault-access.ts); here a vault is just its id.

/** 1–255 characters: a lowercase letter first, then lowercase letters, digits and single underscores, no trailing `_`. */
export const SecretName = z
  .string()
  .min(1)
  .max(255)
  .regex(
    /^(?!.*__)[a-z]([a-z0-9_]*[a-z0-9])?$/,
    'a name is a lowercase letter, then lowercase letters, digits and single underscores, not ending in _',
  )

const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/

/**
 * A host as a secret is bound to it: lowercased, one trailing dot dropped, then checked as a DNS
 * name (labels of 1–63 letters, digits and inner hyphens; 253 characters at most). Schemes, ports,
 * paths, wildcards and empty names are refused, and so are IP addresses: a secret is bound to a
 * name its owner controls, not to an address that may change hands (and the egress refuses
 * private addresses anyway). Returns the normalised host, or why it is refused.
 */
export function normaliseHost(raw: string): { host: string } | { error: string } {
  let host = raw.toLowerCase()
  if (host.endsWith('.')) host = host.slice(0, -1)
  if (!host) return { error: 'is empty' }
  if (host.includes('://')) return { error: 'has a scheme; give the hostname alone' }
  if (host.includes('*')) return { error: 'is a wildcard; bind each exact hostname' }
  if (host.includes('/')) return { error: 'has a path; give the hostname alone' }
  if (host.includes(':') || host.startsWith('['))
    return { error: 'has a port or is an IPv6 address; give the hostname alone' }
  if (host.length > 253) return { error: 'is longer than 253 characters' }
  const labels = host.split('.')
  if (!labels.every((l) => LABEL.test(l)))
    return { error: 'is not a valid hostname (labels of letters, digits and inner hyphens, 1–63 characters)' }
  if (/^[0-9]+$/.test(labels.at(-1)!)) return { error: 'is an IP address; bind a hostname' }
  return { host }
}

const Host = z.string().max(254)
/** The write body (closed): the value and the hosts it may be sent to, normalised and without repeats. */
export const SecretWrite = z
  .strictObject({ value: z.string().min(1).max(65_536), hosts: z.array(Host).min(1).max(100) })
  .transform((body, ctx) => {
    const hosts: string[] = []
    body.hosts.forEach((raw, i) => {
      const result = normaliseHost(raw)
      if ('error' in result)
        ctx.addIssue({ code: 'custom', path: ['hosts', i], message: `${JSON.stringify(raw)} ${result.error}` })
      else if (!hosts.includes(result.host)) hosts.push(result.host)
    })
    return { value: body.value, hosts }
  })
export type SecretWrite = z.infer<typeof SecretWrite>

/** The copy body: 1–100 distinct names of workspace secrets. */
export const SecretCopy = z.strictObject({
  names: z
    .array(SecretName)
    .min(1)
    .max(100)
    .refine((names) => new Set(names).size === names.length, 'names must be distinct'),
})

/** Offset paging: `limit` 1–100 (default 100), `offset` 0–10,000. */
export const SecretPage = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(100),
  offset: z.coerce.number().int().min(0).max(10_000).default(0),
})

/** What the API tells of a secret: never its value. */
export const VaultSecret = z
  .strictObject({
    name: z.string(),
    hosts: z.array(z.string()).nullable(),
    fingerprint: z.string().nullable(),
    created_at: z.string(),
  })
  .meta({ id: 'VaultSecret' })
export type VaultSecret = z.infer<typeof VaultSecret>

export const EffectiveSecret = VaultSecret.extend({ scope: z.enum(['intern', 'attached', 'workspace']) }).meta({
  id: 'EffectiveSecret',
})
export type EffectiveSecret = z.infer<typeof EffectiveSecret>

const view = (r: SecretRow): VaultSecret => ({
  name: r.name,
  hosts: r.hosts,
  fingerprint: r.fingerprint,
  created_at: r.created_at.toISOString(),
})

// A user's secret is sealed under its vault and name, apart from Roster's own (system) secrets.
const aad = (vaultId: string, name: string) => `vault-secret:${vaultId}:${name}`
/** HMAC-SHA-256 of the value under the vault's data key: equal within one vault, unrelated across vaults. */
const fingerprintOf = (dataKey: Buffer, value: string) =>
  `sha256:${createHmac('sha256', dataKey).update(value).digest('hex')}`

export const notFound = () => new AppError('not_found', 'Not found')

/** Creates or replaces each secret, in the order given. */
async function upsert(db: Db | Prisma.TransactionClient, items: SealedSecret[]): Promise<VaultSecret[]> {
  const rows = await upsertSecrets(db, items)
  const byKey = new Map(rows.map((r) => [`${r.vault_id}/${r.name}`, view(r)]))
  return items.map((i) => byKey.get(`${i.vaultId}/${i.name}`)!)
}

/**
 * Group commit for stores (see GroupCommit): concurrent stores share one statement and one commit.
 * Stores of one name are keyed apart, so they are written one after another in the order they
 * came: the last write wins, as if each were alone.
 */
export class SecretStoreBatcher extends GroupCommit<SealedSecret, VaultSecret> {
  constructor(db: Db) {
    super({
      writeMany: (items) => upsert(db, items),
      writeOne: async (item) => (await upsert(db, [item]))[0]!,
      key: (i) => `${i.vaultId}/${i.name}`,
    })
  }
}

/** Creates or replaces `name` (value and hosts); the first store's created_at stays. */
export async function storeSecret(
  db: Db,
  vault: VaultService,
  vaultId: string,
  name: string,
  write: SecretWrite,
  batcher?: SecretStoreBatcher,
): Promise<VaultSecret> {
  const dataKey = await vault.dataKeyOf(db, vaultId)
  const item = {
    vaultId,
    name,
    hosts: write.hosts,
    sealed: seal(dataKey, Buffer.from(write.value), aad(vaultId, name)),
    fingerprint: fingerprintOf(dataKey, write.value),
  }
  return batcher ? batcher.submit(item) : (await upsert(db, [item]))[0]!
}

/** Deletes `name` from this vault alone; absent is 404. */
export async function deleteSecret(db: Db, vaultId: string | null, name: string): Promise<void> {
  if (!vaultId) throw notFound()
  if (!(await deleteSecretRow(db, vaultId, name))) throw notFound()
}

/** One page, sorted by name. */
export async function listSecrets(
  db: Db,
  vaultId: string | null,
  limit: number,
  offset: number,
): Promise<{ data: VaultSecret[]; has_more: boolean }> {
  if (!vaultId) return { data: [], has_more: false }
  const rows = await secretPage(db, vaultId, limit, offset)
  return { data: rows.slice(0, limit).map(view), has_more: rows.length > limit }
}

/**
 * Copies workspace secrets into an intern's vault, all or nothing: every name must exist (else 404)
 * and be bound to hosts (else 409), and each copy keeps the value and hosts, replacing a same-named
 * intern secret. The sources are read under a share lock, so a store to one of them waits for the
 * copy (or the copy for it) and the copy is one consistent snapshot.
 */
export async function copySecrets(
  db: Db,
  vault: VaultService,
  fromVaultId: string | null,
  toVaultId: string,
  names: string[],
): Promise<VaultSecret[]> {
  if (!fromVaultId) throw notFound()
  const [fromKey, toKey] = [await vault.dataKeyOf(db, fromVaultId), await vault.dataKeyOf(db, toVaultId)]
  return db.$transaction(async (tx) => {
    const sources = await shareLockedSecrets(tx, fromVaultId, names)
    if (sources.length !== names.length) throw notFound()
    if (sources.some((s) => s.hosts === null))
      throw new AppError('vault_conflict', 'Vault request conflicts with existing secrets')
    const byName = new Map(sources.map((s) => [s.name, s]))
    const copies = names.map((name) => {
      const s = byName.get(name)!
      const value = unseal(fromKey, Buffer.from(s.sealed_value), aad(fromVaultId, name)).toString()
      return {
        vaultId: toVaultId,
        name,
        hosts: s.hosts!,
        sealed: seal(toKey, Buffer.from(value), aad(toVaultId, name)),
        fingerprint: fingerprintOf(toKey, value),
      }
    })
    return upsert(tx, copies)
  })
}

/** What an intern's outbound requests would receive: one entry per name, intern → attached → workspace. */
export async function effectiveSecrets(
  db: Db,
  vaults: { intern: string | null; attached: string | null; workspace: string | null },
  limit: number,
  offset: number,
): Promise<{ data: EffectiveSecret[]; has_more: boolean }> {
  const rows = await effectiveSecretPage(db, vaults, limit, offset)
  return { data: rows.slice(0, limit).map((r) => ({ ...view(r), scope: r.scope })), has_more: rows.length > limit }
}

/**
 * The secret values an intern's outbound request to `host` may carry, by name. A name means the
 * secret it resolves to (the intern's own, else its attached vault's, else the workspace's); its
 * value is released only if that secret is bound to `host` exactly. A secret bound to no hosts (a
 * legacy row) is released nowhere. For the runtime's egress only: no route returns these.
 */
export async function releasableSecrets(
  db: Db,
  vault: VaultService,
  internId: string,
  host: string,
): Promise<Map<string, string>> {
  const rows = await resolvedSecrets(db, internId)
  const released = new Map<string, string>()
  for (const row of rows) {
    if (!row.hosts?.includes(host)) continue
    const key = await vault.dataKeyOf(db, row.vault_id)
    released.set(row.name, unseal(key, Buffer.from(row.sealed_value), aad(row.vault_id, row.name)).toString())
  }
  return released
}
