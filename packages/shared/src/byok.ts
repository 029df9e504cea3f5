import { createHmac, randomUUID } from 'node:crypto'
import { z } from 'zod'
import { AppError } from '@roster/protocol'
import type { Db } from './db.js'
import type { Caller } from './caller.js'
import { assertManagementKey, keysNamedByHash } from './managed-keys.js'
import { seal, unseal } from './vault/seal.js'
import {
  byokById,
  byokPage,
  deleteByok,
  insertByok,
  updateByok,
  usableByok,
  type ByokFields,
  type ByokRow,
} from './repositories/byok-keys.js'
import { accountUsers } from './repositories/workspaces.js'
import { isUuid } from './interns/access.js'
import { namedWorkspace, PageQuery } from './workspaces.js'

// Bring your own key (`client.byok`, governance-contract.md §11): an account's own provider
// credentials, per workspace or global, managed with a management key. The value is sealed with a
// key derived from the vault's master key and never returned, logged or sent anywhere but to its
// provider; `label` shows a masked snippet. Routing (packages/gateway/src/byok.ts) tries them
// before the catalogue's shared credential; their spend is recorded as BYOK (`is_byok`).

const Ids = z.array(z.string().min(1).max(200)).max(500).nullable()
const Fields = {
  name: z.string().trim().max(200, 'must be at most 200 characters').nullable().optional(),
  disabled: z.boolean().optional(),
  is_byok_only: z.boolean().optional(),
  is_fallback: z.boolean().optional(),
  is_required: z.boolean().optional(),
  declared_zdr: z.boolean().nullable().optional(),
  allowed_api_key_hashes: Ids.optional(),
  allowed_models: Ids.optional(),
  allowed_user_ids: Ids.optional(),
}
const Secret = z.string().min(1, 'must not be empty').max(8_192, 'must be at most 8192 characters')
export const CreateByokBody = z.strictObject({
  provider: z.string().min(1).max(64),
  key: Secret,
  // Omitted: the default workspace; null: global, usable in every workspace of the account.
  workspace_id: z.string().min(1).max(200).nullable().optional(),
  ...Fields,
})
export const UpdateByokBody = z.strictObject({ key: Secret.optional(), ...Fields })
export const ByokListQuery = PageQuery.extend({
  provider: z.string().min(1).max(64).optional(),
  workspace_id: z.string().min(1).max(200).optional(),
})

export interface ByokDeps {
  db: Db
  /** The vault's master key (absent: credentials cannot be sealed, and creation is refused). */
  masterKey: Buffer | undefined
  /** Told of a change to an account's credentials, so every process forgets them. */
  changed: (accountId: string) => void | Promise<void>
  canonicalModel: (id: string) => string | undefined
  providers: () => readonly string[]
}

/** The key credentials are sealed with: derived from the master key, never stored. */
export const byokSealingKey = (masterKey: Buffer) =>
  createHmac('sha256', masterKey).update('roster byok credentials').digest()

const aad = (id: string) => `byok:${id}`

/** A short masked snippet of a credential: enough to tell two apart, not enough to use. */
export function maskedLabel(value: string): string {
  const v = value.trim()
  return v.length >= 20 ? `${v.slice(0, 3)}…${v.slice(-4)}` : `…${v.slice(-2)}`
}

/** What routing needs of the credentials a workspace may use: unsealed, allow-lists as sets. */
export async function openCredentials(db: Db, masterKey: Buffer, accountId: string, workspaceId: string) {
  const key = byokSealingKey(masterKey)
  return (await usableByok(db, accountId, workspaceId)).map((r) => ({
    id: r.id,
    provider: r.provider,
    key: unseal(key, Buffer.from(r.sealed!), aad(r.id)).toString('utf8'),
    isByokOnly: r.is_byok_only,
    isFallback: r.is_fallback,
    isRequired: r.is_required,
    declaredZdr: r.declared_zdr,
    // Global ones after the workspace's own.
    sortOrder: r.sort_order + (r.workspace_id === null ? 1_000_000 : 0),
    allowedKeyHashes: r.allowed_api_key_hashes && new Set(r.allowed_api_key_hashes),
    allowedModels: r.allowed_models && new Set(r.allowed_models),
    allowedUserIds: r.allowed_user_ids && new Set(r.allowed_user_ids),
  }))
}

/** The ByokKey object (§11): never the value. */
export const byokView = (r: ByokRow) => ({
  id: r.id,
  provider: r.provider,
  label: r.label,
  name: r.name,
  disabled: r.disabled,
  is_byok_only: r.is_byok_only,
  is_fallback: r.is_fallback,
  is_required: r.is_required,
  declared_zdr: r.declared_zdr,
  sort_order: r.sort_order,
  allowed_api_key_hashes: r.allowed_api_key_hashes,
  allowed_models: r.allowed_models,
  allowed_user_ids: r.allowed_user_ids,
  workspace_id: r.workspace_id,
  created_at: r.created_at.toISOString(),
})

/** A management key's account; 403 where the client maps it (create, update), 401 elsewhere. */
const account = (caller: Caller, op: 'create' | 'other' = 'other') =>
  assertManagementKey(caller, op, 'managing provider keys (BYOK)')

const notFound = (id: string) =>
  new AppError('not_found', `no provider key ${JSON.stringify(id.slice(0, 80))} in this account`)

async function found(db: Db, accountId: string, id: string) {
  const row = isUuid(id) ? await byokById(db, accountId, id) : undefined
  if (!row) throw notFound(id)
  return row
}

function sealingKey(deps: ByokDeps) {
  if (!deps.masterKey)
    throw new AppError(
      'configuration_error',
      'provider keys are sealed with the vault master key, and VAULT_MASTER_KEY is not set on this API',
    )
  return byokSealingKey(deps.masterKey)
}

type Body = z.infer<typeof UpdateByokBody>

/** The fields a body sets, checked: models in the catalogue, keys and members of the account. */
async function fieldsOf(deps: ByokDeps, accountId: string, body: Body, current?: ByokRow): Promise<ByokFields> {
  const fallback = body.is_fallback ?? current?.is_fallback ?? false
  const only = body.is_byok_only ?? current?.is_byok_only ?? false
  if (fallback && only)
    throw new AppError(
      'invalid_body',
      'is_fallback cannot be combined with is_byok_only (a fallback key needs the shared one before it)',
    )
  const models = body.allowed_models?.map((m) => {
    const id = deps.canonicalModel(m)
    if (!id)
      throw new AppError('invalid_body', `allowed_models: no model ${JSON.stringify(m.slice(0, 80))} in the catalogue`)
    return id
  })
  const hashes = body.allowed_api_key_hashes && [
    ...(await keysNamedByHash(deps.db, accountId, body.allowed_api_key_hashes, 'allowed_api_key_hashes')).keys(),
  ]
  let users = body.allowed_user_ids
  if (users) {
    users = [...new Set(users)]
    const known = await accountUsers(deps.db, accountId, users.filter(isUuid))
    const stranger = users.find((u) => !known.has(u))
    if (stranger)
      throw new AppError(
        'invalid_body',
        `allowed_user_ids: ${JSON.stringify(stranger.slice(0, 80))} is not a member of this account`,
      )
  }
  return {
    name: body.name === undefined ? undefined : body.name || null,
    disabled: body.disabled,
    isByokOnly: body.is_byok_only,
    isFallback: body.is_fallback,
    isRequired: body.is_required,
    declaredZdr: body.declared_zdr,
    allowedKeyHashes: hashes,
    allowedModels: models === undefined ? undefined : models && [...new Set(models)],
    allowedUserIds: users,
  }
}

export async function listByok(deps: ByokDeps, caller: Caller, q: z.infer<typeof ByokListQuery>) {
  const accountId = account(caller)
  const workspaceId =
    q.workspace_id === undefined ? undefined : (await namedWorkspace(deps.db, accountId, q.workspace_id)).id
  const { rows, total } = await byokPage(deps.db, { accountId, workspaceId, provider: q.provider }, q.offset, q.limit)
  return { data: rows.map(byokView), total_count: total }
}

export async function addByok(deps: ByokDeps, caller: Caller, body: z.infer<typeof CreateByokBody>) {
  const accountId = account(caller, 'create')
  const key = sealingKey(deps)
  const known = deps.providers()
  if (!known.includes(body.provider))
    throw new AppError(
      'invalid_body',
      `provider: Roster routes to no provider ${JSON.stringify(body.provider)} (it routes to ${known.join(', ')})`,
    )
  // null: global, usable in every workspace of the account.
  const workspaceId =
    body.workspace_id === null ? null : (await namedWorkspace(deps.db, accountId, body.workspace_id)).id
  const fields = await fieldsOf(deps, accountId, body)
  const id = randomUUID()
  const row = await insertByok(deps.db, {
    ...fields,
    id,
    accountId,
    workspaceId,
    provider: body.provider,
    sealed: seal(key, Buffer.from(body.key, 'utf8'), aad(id)),
    label: maskedLabel(body.key),
  })
  await deps.changed(accountId)
  return { data: byokView(row) }
}

export async function getByok(deps: ByokDeps, caller: Caller, id: string) {
  return { data: byokView(await found(deps.db, account(caller), id)) }
}

/** PATCH: omitted fields stay, null clears; `key` rotates the value in place (a new label). */
export async function patchByok(deps: ByokDeps, caller: Caller, id: string, body: Body) {
  const accountId = account(caller, 'create')
  const current = await found(deps.db, accountId, id)
  const fields = await fieldsOf(deps, accountId, body, current)
  if (body.key !== undefined) {
    fields.sealed = seal(sealingKey(deps), Buffer.from(body.key, 'utf8'), aad(current.id))
    fields.label = maskedLabel(body.key)
  }
  const row = await updateByok(deps.db, current, fields)
  await deps.changed(accountId)
  return { data: byokView(row) }
}

/** DELETE: the value wiped at once; the row stays, unlisted. */
export async function dropByok(deps: ByokDeps, caller: Caller, id: string) {
  const accountId = account(caller)
  const row = await found(deps.db, accountId, id)
  await deleteByok(deps.db, row.id)
  await deps.changed(accountId)
  return { deleted: true as const }
}
