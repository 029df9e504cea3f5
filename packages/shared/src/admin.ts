import { z } from 'zod'
import { AppError } from '@roster/protocol'
import type { Db } from './db.js'
import { generateApiKey, type ApiKeyKind } from './api-keys.js'
import {
  insertAccount,
  insertUser,
  updateVaultWrites,
  userWorkspace,
  type MemberProfile,
} from './repositories/accounts.js'
import { insertWorkspace, updateIoLogging } from './repositories/workspaces.js'
import { insertKey } from './repositories/api-keys.js'
import { internScope } from './repositories/interns.js'

// Operator actions behind the admin CLI; test factories use them too.

export async function createAccount(
  db: Db,
  opts: { inProgramme?: boolean; lifecycleWrites?: boolean; vaultWrites?: boolean } = {},
) {
  const accountId = await insertAccount(db, {
    inProgramme: opts.inProgramme ?? true,
    lifecycleWrites: opts.lifecycleWrites ?? true,
    vaultWrites: opts.vaultWrites ?? true,
  })
  return { account_id: accountId }
}

/** The account's vault writes switch: off, stores, deletes and copies answer 503 while reads go on. */
export async function setVaultWrites(db: Db, opts: { accountId: string; on: boolean }) {
  if (!(await updateVaultWrites(db, opts.accountId, opts.on)))
    throw new AppError('not_found', `no account ${opts.accountId}`)
  return { account_id: opts.accountId, vault_writes: opts.on }
}

/**
 * A workspace's private logging: on, the prompts and completions of (a `rate` share of) its
 * requests are kept and GET /generation/content answers for them; off (the default), none are.
 */
export async function setIoLogging(db: Db, opts: { workspaceId: string; on: boolean; rate?: number }) {
  const rate = opts.rate ?? 1
  if (!Number.isFinite(rate) || rate < 0.0001 || rate > 1)
    throw new AppError('invalid_body', '--sampling-rate must be from 0.0001 to 1')
  if (!(await updateIoLogging(db, opts.workspaceId, opts.on, rate)))
    throw new AppError('not_found', `no workspace ${opts.workspaceId}`)
  return { workspace_id: opts.workspaceId, io_logging: opts.on, io_logging_sampling_rate: rate }
}

export async function createWorkspace(db: Db, opts: { accountId: string; internsEnabled?: boolean }) {
  const row = await insertWorkspace(db, opts.accountId, { internsEnabled: opts.internsEnabled ?? true })
  return { workspace_id: row.id }
}

export async function createUser(db: Db, opts: { workspaceId: string } & MemberProfile) {
  const { workspaceId, ...profile } = opts
  if (profile.email !== undefined && !z.email().safeParse(profile.email).success)
    throw new AppError('invalid_body', '--email is not an e-mail address')
  return { user_id: await insertUser(db, workspaceId, profile) }
}

export interface CreateKeyOptions {
  kind: ApiKeyKind
  workspaceId: string
  userId?: string
  internId?: string
}

/** Issues a key. The plaintext is returned here and never stored. */
export async function createApiKey(db: Db, opts: CreateKeyOptions) {
  if (opts.kind === 'user' && !opts.userId) throw new AppError('invalid_body', 'a user key needs --user')
  if (opts.kind === 'intern' && !opts.internId) throw new AppError('invalid_body', 'an intern key needs --intern')
  if (opts.kind !== 'user' && opts.userId) throw new AppError('invalid_body', `a ${opts.kind} key acts for no user`)
  if (opts.kind !== 'intern' && opts.internId)
    throw new AppError('invalid_body', `a ${opts.kind} key belongs to no intern`)
  if (opts.userId) {
    if ((await userWorkspace(db, opts.userId)) !== opts.workspaceId)
      throw new AppError('not_found', 'no such user in that workspace')
  }
  if (opts.internId) {
    if ((await internScope(db, opts.internId))?.workspace_id !== opts.workspaceId)
      throw new AppError('not_found', 'no such intern in that workspace')
  }
  const { plaintext, hash, prefix } = generateApiKey()
  const keyId = await insertKey(db, {
    kind: opts.kind,
    workspaceId: opts.workspaceId,
    userId: opts.userId ?? null,
    internId: opts.internId ?? null,
    hash,
    prefix,
  })
  return { key_id: keyId, key: plaintext }
}

/** A ready-to-use set: account in the programme, workspace with interns, one member, one key per kind. */
export async function bootstrap(db: Db, opts: { email?: string } = {}) {
  const { account_id } = await createAccount(db)
  const { workspace_id } = await createWorkspace(db, { accountId: account_id })
  // The account's first member administers it (with an e-mail, they can sign in to the console as themselves).
  const { user_id } = await createUser(db, { workspaceId: workspace_id, role: 'org:admin', email: opts.email })
  const user = await createApiKey(db, { kind: 'user', workspaceId: workspace_id, userId: user_id })
  const organization = await createApiKey(db, { kind: 'organization', workspaceId: workspace_id })
  const management = await createApiKey(db, { kind: 'management', workspaceId: workspace_id })
  return {
    account_id,
    workspace_id,
    user_id,
    keys: { user: user.key, organization: organization.key, management: management.key },
  }
}
