import { z } from 'zod'
import { AppError } from '@roster/protocol'
import type { Db } from './db.js'
import { managesAccount, type Caller } from './caller.js'
import { generateApiKey, hashApiKey } from './api-keys.js'
import {
  insertManagedKey,
  keyById,
  keysOfAccount,
  managedKeyByHash,
  managedKeyPage,
  revokeKey,
  updateManagedKey,
  type ManagedKeyRow,
} from './repositories/api-keys.js'
import { insertUser } from './repositories/accounts.js'
import { isMember, workspaceByRef } from './repositories/workspaces.js'
import { spendOf } from './repositories/generations.js'
import { PICO_PER_MICRO, spendPeriods, usdOfPico } from '@roster/protocol'

// API keys managed through the API (`client.apiKeys`: POST/GET/PATCH/DELETE /keys, GET /key), as
// governance-contract.md §1 describes them. A key made here is a user key: it works everywhere a
// key from `admin bootstrap` does, acting for a member of its workspace (the one named by
// `creator_user_id`, or a new member made with it). Its secret is shown once; only its SHA-256
// digest is kept, and the digest's hex is the key's `hash`, the id the routes take.

/** The largest limit a key may have, in USD (a billion: past any real budget, and exact in micro-dollars). */
export const MAX_KEY_LIMIT_USD = 1_000_000_000
/** Keys per page of GET /keys (the client pages it by offset alone). */
export const KEYS_PAGE_SIZE = 100

const MICROS = 1_000_000

/** RFC 3339 with seconds and a zone (fractional seconds allowed): the contract refuses minute precision. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i

/** Whether an RFC 3339 time names a real day and time (Date.parse would roll 2030-02-30 over to March). */
function isRealTime(s: string): boolean {
  const [y, mo, d, h, mi, sec] = s.split(/[-T:.Z+]/i).map(Number) as number[]
  const days = new Date(Date.UTC(y!, mo!, 0)).getUTCDate()
  return mo! >= 1 && mo! <= 12 && d! >= 1 && d! <= days && h! < 24 && mi! < 60 && sec! < 60
}

const Name = z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters')
const Limit = z
  .number()
  .min(0, 'must be 0 or more (USD)')
  .max(MAX_KEY_LIMIT_USD, `must be at most ${MAX_KEY_LIMIT_USD} (USD)`)
  .nullable()
const LimitReset = z.enum(['daily', 'weekly', 'monthly']).nullable()
const ExpiresAt = z
  .string()
  .regex(RFC3339, 'must be an RFC 3339 time with seconds and a zone, such as 2030-01-01T00:00:00Z')
  .refine(isRealTime, 'is not a real time (no such day, hour or minute)')
  .nullable()

export const CreateKeyBody = z.strictObject({
  name: Name,
  limit: Limit.optional(),
  limit_reset: LimitReset.optional(),
  include_byok_in_limit: z.boolean().optional(),
  expires_at: ExpiresAt.optional(),
  workspace_id: z.string().optional(),
  creator_user_id: z.string().nullable().optional(),
  external: z
    .strictObject({
      user: z.string().min(1).max(256),
      api_key: z.string().min(32, 'must be at least 32 characters').max(512).optional(),
    })
    .optional(),
})
export type CreateKeyBody = z.infer<typeof CreateKeyBody>

export const UpdateKeyBody = z.strictObject({
  name: Name.optional(),
  disabled: z.boolean().optional(),
  limit: Limit.optional(),
  limit_reset: LimitReset.optional(),
  include_byok_in_limit: z.boolean().optional(),
})
export type UpdateKeyBody = z.infer<typeof UpdateKeyBody>

export const ListKeysQuery = z.object({
  include_disabled: z.enum(['true', 'false']).optional(),
  offset: z.coerce.number().int().min(0).max(1_000_000).optional(),
  workspace_id: z.string().optional(),
  q: z.string().trim().min(1).max(100).optional().describe('Only keys whose name or label holds this text (any case)'),
  kind: z
    .enum(['user', 'all'])
    .optional()
    .describe(
      'Which kinds: `user` (the default: inference keys) or `all` (organization and management keys too, each with its `kind`)',
    ),
})
export type ListKeysQuery = z.infer<typeof ListKeysQuery>

/** What a key has spent, in pico-dollars (USD × 10^12), all-time and in the current UTC day, week and month. */
export interface KeySpend {
  total: bigint
  daily: bigint
  weekly: bigint
  monthly: bigint
}
export interface KeyUsage {
  credits: KeySpend
  byok: KeySpend
}
/** Where a key's spend comes from: the generations' ledger (spendFromLedger). */
export type KeyUsageSource = (keyId: string) => Promise<KeyUsage>

/** A key's spend as the ledger keeps it (the spend table), for the periods `now` falls in. */
export function spendFromLedger(db: Db, now: () => Date = () => new Date()): KeyUsageSource {
  return async (keyId) => {
    const p = spendPeriods(now())
    const rows = await spendOf(db, keyId, [p.all, p.day, p.week, p.month])
    const pick = (k: 'credits' | 'byok'): KeySpend => ({
      total: rows.get(p.all)?.[k] ?? 0n,
      daily: rows.get(p.day)?.[k] ?? 0n,
      weekly: rows.get(p.week)?.[k] ?? 0n,
      monthly: rows.get(p.month)?.[k] ?? 0n,
    })
    return { credits: pick('credits'), byok: pick('byok') }
  }
}

const toMicros = (limit: number | null | undefined) =>
  limit === undefined ? undefined : limit === null ? null : BigInt(Math.round(limit * MICROS))

/** The spend that counts against a key's limit: its window's (or all-time), BYOK's added when the key says so. */
export function spendInWindow(row: Pick<ManagedKeyRow, 'limit_reset' | 'include_byok_in_limit'>, u: KeyUsage): bigint {
  const window = row.limit_reset ?? 'total'
  return u.credits[window] + (row.include_byok_in_limit ? u.byok[window] : 0n)
}

/** Remaining USD under the limit (never below 0); null without a limit. */
export function limitRemaining(row: ManagedKeyRow, u: KeyUsage): number | null {
  if (row.limit_micros === null) return null
  const left = row.limit_micros * PICO_PER_MICRO - spendInWindow(row, u)
  return usdOfPico(left > 0n ? left : 0n)
}

const hex = (hash: Uint8Array) => Buffer.from(hash).toString('hex')
const iso = (d: Date | null) => (d ? d.toISOString() : null)

/** The fields a key and the caller's own key (GET /key) share. */
function limitFields(row: ManagedKeyRow, u: KeyUsage) {
  return {
    label: row.label ?? `${row.prefix}...`,
    limit: row.limit_micros === null ? null : Number(row.limit_micros) / MICROS,
    limit_remaining: limitRemaining(row, u),
    limit_reset: row.limit_reset,
    include_byok_in_limit: row.include_byok_in_limit,
    usage: usdOfPico(u.credits.total),
    usage_daily: usdOfPico(u.credits.daily),
    usage_weekly: usdOfPico(u.credits.weekly),
    usage_monthly: usdOfPico(u.credits.monthly),
    byok_usage: usdOfPico(u.byok.total),
    byok_usage_daily: usdOfPico(u.byok.daily),
    byok_usage_weekly: usdOfPico(u.byok.weekly),
    byok_usage_monthly: usdOfPico(u.byok.monthly),
    expires_at: iso(row.expires_at),
    creator_user_id: row.user_id,
  }
}

/** The ApiKey object (§1.1): 22 keys. */
export function apiKeyView(row: ManagedKeyRow, u: KeyUsage) {
  return {
    hash: hex(row.hash),
    // Beyond the contract's 22 fields (clients that check them drop it): what io_logging_api_key_ids names.
    number: Number(row.number),
    name: row.name,
    disabled: row.disabled,
    ...limitFields(row, u),
    created_at: row.created_at.toISOString(),
    updated_at: iso(row.updated_at),
    // Beyond the contract's fields too: when it last authenticated a request (to the minute).
    last_used_at: iso(row.last_used_at),
    external_user: row.external_user,
    workspace_id: row.workspace_id,
  }
}

/**
 * The caller's account, when it holds a management key; otherwise 403 where the client knows a 403
 * for the operation (`op: 'create'`), else 401. `what` says what needed it.
 */
export function assertManagementKey(caller: Caller, op: 'create' | 'other', what = 'managing API keys'): string {
  if (managesAccount(caller)) return caller.accountId
  const message = `${what} needs a management key`
  throw op === 'create' ? new AppError('management_key_required', message) : new AppError('unauthorized', message)
}

/** A key's `hash` from a path: 64 hex digits, or the one not-found answer. */
function digestOf(hash: string): Buffer {
  if (!/^[0-9a-f]{64}$/i.test(hash)) throw keyNotFound(hash)
  return Buffer.from(hash, 'hex')
}
const keyNotFound = (hash: string) =>
  new AppError('not_found', `no API key ${JSON.stringify(hash.slice(0, 80))} in this account`)

/**
 * Whose keys an operation may touch: an account's, in `workspaceId` unless the operation names
 * another of the account's workspaces (a management key's account and workspace; the admin CLI's
 * choice).
 */
export interface KeyScope {
  accountId: string
  workspaceId: string
  /** Only this member's own keys, in their own workspace (a member signed in to the console as themselves). */
  userId?: string
}
export const scopeOf = (caller: Caller): KeyScope => ({ accountId: caller.accountId, workspaceId: caller.workspaceId })

/**
 * The workspace a key op names, by id or slug as every other group takes it (the scope's own when
 * none is named): one of the scope's account's, or 400.
 */
async function workspaceFor(db: Db, scope: KeyScope, workspaceId: string | undefined): Promise<string> {
  if (workspaceId === undefined) return scope.workspaceId
  const w = await workspaceByRef(db, scope.accountId, workspaceId)
  if (!w) throw new AppError('invalid_body', `no workspace ${JSON.stringify(workspaceId.slice(0, 80))} in this account`)
  return w.id
}

export interface KeyDeps {
  db: Db
  usage: KeyUsageSource
  /** Told of a key whose settings changed or that was deleted (its digest), so every process forgets what it cached of it. */
  changed: (hash: Buffer) => void | Promise<void>
  now?: () => number
}

/** POST /keys: a new key; its secret in `key`, shown this once. */
export async function createKey(deps: KeyDeps, scope: KeyScope, body: CreateKeyBody) {
  const { db } = deps
  const workspaceId = await workspaceFor(db, scope, body.workspace_id)
  if (scope.userId !== undefined) {
    // A member makes keys of their own, in their own workspace.
    if (workspaceId !== scope.workspaceId || (body.creator_user_id != null && body.creator_user_id !== scope.userId))
      throw new AppError('management_key_required', 'a member makes keys for themselves, in their own workspace')
    body = { ...body, creator_user_id: scope.userId }
  }
  if (body.expires_at && Date.parse(body.expires_at) <= (deps.now ?? Date.now)())
    throw new AppError('invalid_body', 'expires_at must be in the future')
  if (body.creator_user_id != null) {
    const ok =
      z.uuid().safeParse(body.creator_user_id).success && (await isMember(db, workspaceId, body.creator_user_id))
    if (!ok)
      throw new AppError(
        'invalid_body',
        `creator_user_id ${JSON.stringify(body.creator_user_id.slice(0, 80))} is not a member of the key's workspace`,
      )
  }
  const { plaintext, hash, prefix } = generateApiKey()
  const row = await db.$transaction(async (tx) => {
    // No member named: the key acts for a new member of its own.
    const userId = body.creator_user_id ?? (await insertUser(tx, workspaceId))
    return insertManagedKey(tx, {
      workspaceId,
      userId,
      hash,
      prefix,
      label: `${plaintext.slice(0, prefix.length - 3)}...${plaintext.slice(-3)}`,
      name: body.name,
      limitMicros: toMicros(body.limit) ?? null,
      limitReset: body.limit_reset ?? null,
      includeByokInLimit: body.include_byok_in_limit ?? false,
      expiresAt: body.expires_at ? new Date(body.expires_at) : null,
      externalUser: body.external?.user ?? null,
      externalKeyHash: body.external?.api_key ? hashApiKey(body.external.api_key) : null,
    })
  })
  return { data: apiKeyView(row, await deps.usage(row.id)), key: plaintext }
}

/** GET /keys: a page of a workspace's keys, `{data}` alone. */
export async function listKeys(deps: KeyDeps, scope: KeyScope, q: ListKeysQuery) {
  const workspaceId = await workspaceFor(deps.db, scope, q.workspace_id)
  const rows = await managedKeyPage(deps.db, {
    accountId: scope.accountId,
    workspaceId,
    includeDisabled: q.include_disabled === 'true',
    nameHolds: q.q,
    kinds: q.kind === 'all' && scope.userId === undefined ? ['user', 'organization', 'management'] : ['user'],
    userId: scope.userId,
    offset: q.offset ?? 0,
    limit: KEYS_PAGE_SIZE,
  })
  return {
    data: await Promise.all(
      rows.map(async (r) => ({
        ...apiKeyView(r, await deps.usage(r.id)),
        ...(q.kind === 'all' ? { kind: r.kind } : {}),
      })),
    ),
  }
}

export async function getKey(deps: KeyDeps, scope: KeyScope, hash: string) {
  const row = await managedKeyByHash(deps.db, scope.accountId, digestOf(hash), false, scope.userId)
  if (!row) throw keyNotFound(hash)
  return { data: apiKeyView(row, await deps.usage(row.id)) }
}

/** PATCH /keys/{hash}: omitted fields stay; null clears a limit or its reset. Applies at once on every process. */
export async function updateKey(deps: KeyDeps, scope: KeyScope, hash: string, body: UpdateKeyBody) {
  const digest = digestOf(hash)
  const row = await deps.db.$transaction(async (tx) => {
    const found = await managedKeyByHash(tx, scope.accountId, digest, true, scope.userId)
    if (!found) throw keyNotFound(hash)
    return updateManagedKey(tx, found.id, {
      name: body.name,
      disabled: body.disabled,
      limitMicros: toMicros(body.limit),
      limitReset: body.limit_reset,
      includeByokInLimit: body.include_byok_in_limit,
    })
  })
  if (!row) throw keyNotFound(hash)
  await deps.changed(digest)
  return { data: apiKeyView(row, await deps.usage(row.id)) }
}

/** DELETE /keys/{hash}: the key stops authenticating at once, on every process. */
export async function deleteKey(deps: KeyDeps, scope: KeyScope, hash: string) {
  const digest = digestOf(hash)
  const row = await managedKeyByHash(deps.db, scope.accountId, digest, false, scope.userId)
  if (!row || !(await revokeKey(deps.db, row.id))) throw keyNotFound(hash)
  await deps.changed(digest)
  return { deleted: true as const }
}

/** The regions Roster serves from (no guardrail narrows them yet). */
const ALL_REGIONS = ['global', 'europe', 'us'] as const

/** GET /key: the calling key's own settings and spend (CurrentKey, §1.2), for a key of any kind. */
export async function currentKey(deps: KeyDeps, keyId: string) {
  const row = await keyById(deps.db, keyId)
  if (!row) throw new AppError('unauthorized', 'a valid API key is required')
  const management = row.kind === 'management'
  return {
    data: {
      ...limitFields(row, await deps.usage(row.id)),
      workspace_id: row.workspace_id,
      organization_id: row.account_id,
      is_management_key: management,
      is_provisioning_key: management,
      is_free_tier: false,
      allowed_data_regions: [...ALL_REGIONS],
      // Roster serves no free model variants.
      free_model_daily_requests: { limit: 0, remaining: 0, used: 0 },
      rate_limit: { requests: -1, interval: '10s', note: 'deprecated: always -1' },
    },
  }
}

/**
 * The account's live keys named by hash in a body's `field` (64 hex digits each, any case), by
 * lowercase hash: 400 naming the first that is not a hash, or not a key of the account.
 */
export async function keysNamedByHash(db: Db, accountId: string, hashes: string[], field: string) {
  const wanted = [...new Set(hashes.map((h) => h.toLowerCase()))]
  const bad = wanted.find((h) => !/^[0-9a-f]{64}$/.test(h))
  if (bad)
    throw new AppError(
      'invalid_body',
      `${field}: ${JSON.stringify(bad.slice(0, 80))} is not a key's hash (64 hex digits)`,
    )
  const keys = await keysOfAccount(
    db,
    accountId,
    wanted.map((h) => Buffer.from(h, 'hex')),
  )
  const byHash = new Map(keys.map((k) => [Buffer.from(k.hash).toString('hex'), k]))
  const missing = wanted.find((h) => !byHash.has(h))
  if (missing) throw new AppError('invalid_body', `${field}: no API key ${missing} in this account`)
  return byHash
}
