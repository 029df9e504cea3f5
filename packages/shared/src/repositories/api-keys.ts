import { Prisma, type Db } from '../db.js'
import { likeLiteral } from '../like-pattern.js'
import type { ApiKeyKind } from '../api-keys.js'
import type { GuardrailRules } from '@roster/protocol'

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
  /** Epoch milliseconds after which the key no longer authenticates; null: never. */
  expires_ms: number | null
  limit_micros: bigint | null
  limit_reset: 'daily' | 'weekly' | 'monthly' | null
  include_byok_in_limit: boolean
  /** The account's credits, USD × 10^6 (null: unlimited). */
  credits_micros: bigint | null
  /** The share of the workspace's requests whose content is kept (0: private logging off, or not for this key). */
  io_logging_rate: number
  /** The workspace's budgets (limits as decimal strings of micro-dollars). */
  budgets: { interval: 'daily' | 'weekly' | 'monthly' | 'lifetime'; limit_micros: string }[]
  include_byok_in_budgets: boolean
  disabled_server_tools: string[] | null
  /** The guardrails in force: the workspace's default, the key's, its member's (default first). */
  guardrails: CallerGuardrail[]
  /** Whether the workspace has provider keys of its own (BYOK) its requests may use. */
  has_byok: boolean
}

/** A guardrail in force on a key, and why: the workspace's default, assigned to the key, to its member (or both). */
export interface CallerGuardrail {
  id: string
  name: string
  rules: GuardrailRules
  /** USD × 10^6, as a decimal string (null: no limit). */
  limit_micros: string | null
  reset: 'daily' | 'weekly' | 'monthly' | null
  byok: boolean
  is_default: boolean
  on_key: boolean
  on_member: boolean
}

/** The live key with this digest, with its workspace's and account's switches: one indexed lookup. */
export async function keyByHash(db: Db, hash: Buffer): Promise<CallerRow | undefined> {
  const rows = await db.$queryRaw<CallerRow[]>`
    SELECT k.id, k.kind::text AS kind, k.hash, k.workspace_id, k.user_id, k.intern_id,
           w.account_id, w.interns_enabled, a.in_programme, a.lifecycle_writes, a.vault_writes,
           (extract(epoch FROM k.expires_at) * 1000)::float8 AS expires_ms,
           k.limit_micros, k.limit_reset, k.include_byok_in_limit, a.credits_micros,
           CASE WHEN w.io_logging AND (w.io_logging_api_key_ids IS NULL OR w.io_logging_api_key_ids @> to_jsonb(k.number))
                THEN w.io_logging_sampling_rate ELSE 0 END AS io_logging_rate,
           (SELECT coalesce(json_agg(json_build_object('interval', b.interval, 'limit_micros', b.limit_micros::text)), '[]')
              FROM workspace_budgets b WHERE b.workspace_id = w.id) AS budgets,
           w.include_byok_in_budgets, w.disabled_server_tools,
           (SELECT coalesce(json_agg(json_build_object('id', g.id, 'name', g.name, 'rules', g.rules,
                     'limit_micros', g.limit_micros::text, 'reset', g.reset_interval, 'byok', g.include_byok_in_budgets,
                     'is_default', g.is_default, 'on_key', ka.key_id IS NOT NULL, 'on_member', ma.user_id IS NOT NULL)
                     ORDER BY g.is_default DESC, g.created_at), '[]')
              FROM guardrails g
              LEFT JOIN guardrail_key_assignments ka ON ka.guardrail_id = g.id AND ka.key_id = k.id
              LEFT JOIN guardrail_member_assignments ma ON ma.guardrail_id = g.id AND ma.user_id = k.user_id
                AND k.kind = 'user'
              WHERE g.id IN (SELECT d.id FROM guardrails d WHERE d.workspace_id = w.id AND d.is_default
                             UNION ALL SELECT a.guardrail_id FROM guardrail_key_assignments a WHERE a.key_id = k.id
                             UNION ALL SELECT m.guardrail_id FROM guardrail_member_assignments m
                                       WHERE m.user_id = k.user_id AND k.kind = 'user')
           ) AS guardrails,
           EXISTS (SELECT 1 FROM byok_keys b WHERE b.account_id = w.account_id
                     AND (b.workspace_id = w.id OR b.workspace_id IS NULL) AND b.deleted_at IS NULL AND NOT b.disabled
           ) AS has_byok
    FROM api_keys k
    JOIN workspaces w ON w.id = k.workspace_id
    JOIN accounts a ON a.id = w.account_id
    WHERE k.hash = ${hash} AND k.revoked_at IS NULL AND NOT k.disabled AND (k.expires_at IS NULL OR k.expires_at > now())
      -- A disabled member's keys act for no one.
      AND NOT EXISTS (SELECT 1 FROM users u WHERE u.id = k.user_id AND u.disabled_at IS NOT NULL)`
  return rows[0]
}

/** The digests of a member's live keys (told to every process when the member is disabled or enabled). */
export async function keyHashesOfMember(db: Db, userId: string): Promise<Buffer[]> {
  const rows = await db.apiKey.findMany({ where: { userId, revokedAt: null }, select: { hash: true } })
  return rows.map((r) => Buffer.from(r.hash))
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

// ── keys managed through the API (POST /keys and the rest) ───────────────────────────────────────

/** A managed key's row, as the key routes show it. */
export interface ManagedKeyRow {
  id: string
  kind: ApiKeyKind
  hash: Uint8Array
  prefix: string
  name: string
  label: string | null
  disabled: boolean
  limit_micros: bigint | null
  limit_reset: 'daily' | 'weekly' | 'monthly' | null
  include_byok_in_limit: boolean
  created_at: Date
  updated_at: Date | null
  last_used_at: Date | null
  expires_at: Date | null
  user_id: string | null
  external_user: string | null
  workspace_id: string
  account_id: string
  /** The key's number (a workspace's io_logging_api_key_ids name keys by it). */
  number: bigint
}

const MANAGED_COLUMNS = Prisma.raw(`k.id, k.kind::text AS kind, k.hash, k.prefix, k.name, k.label, k.disabled,
  k.limit_micros, k.limit_reset, k.include_byok_in_limit, k.created_at, k.updated_at, k.expires_at, k.last_used_at, k.user_id,
  k.external_user, k.workspace_id, w.account_id, k.number`)

export interface NewManagedKey {
  workspaceId: string
  userId: string
  hash: Buffer
  prefix: string
  label: string
  name: string
  limitMicros: bigint | null
  limitReset: string | null
  includeByokInLimit: boolean
  expiresAt: Date | null
  externalUser: string | null
  externalKeyHash: Buffer | null
}

/** A new user key (acting for `userId`) with its name, limit and expiry; its row. */
export async function insertManagedKey(db: Db | Prisma.TransactionClient, k: NewManagedKey): Promise<ManagedKeyRow> {
  const rows = await db.$queryRaw<ManagedKeyRow[]>`
    WITH k AS (
      INSERT INTO api_keys (id, kind, workspace_id, user_id, hash, prefix, label, name, limit_micros, limit_reset,
                            include_byok_in_limit, expires_at, external_user, external_key_hash, updated_at)
      VALUES (gen_random_uuid(), 'user', ${k.workspaceId}::uuid, ${k.userId}::uuid, ${k.hash}, ${k.prefix}, ${k.label},
              ${k.name}, ${k.limitMicros}, ${k.limitReset}, ${k.includeByokInLimit}, ${k.expiresAt}, ${k.externalUser},
              ${k.externalKeyHash}, now())
      RETURNING *)
    SELECT ${MANAGED_COLUMNS} FROM k JOIN workspaces w ON w.id = k.workspace_id`
  return rows[0]!
}

/**
 * The user keys of one workspace of `accountId`, newest first, from `offset`, at most `limit`
 * (disabled ones only when asked; deleted ones never).
 */
export function managedKeyPage(
  db: Db,
  q: {
    accountId: string
    workspaceId: string
    includeDisabled: boolean
    /** Only keys whose name or label holds this text, in any case. */
    nameHolds?: string
    /** The kinds listed (default: user keys, the API's own listing). */
    kinds?: readonly ('user' | 'organization' | 'management')[]
    /** Only this member's keys (a member signed in as themselves sees their own). */
    userId?: string
    offset: number
    limit: number
  },
) {
  const holds = q.nameHolds === undefined ? undefined : `%${likeLiteral(q.nameHolds)}%`
  const kinds = [...(q.kinds ?? ['user'])]
  return db.$queryRaw<ManagedKeyRow[]>`
    SELECT ${MANAGED_COLUMNS} FROM api_keys k JOIN workspaces w ON w.id = k.workspace_id
    WHERE k.workspace_id = ${q.workspaceId}::uuid AND w.account_id = ${q.accountId}::uuid
      AND k.kind::text = ANY(${kinds}::text[]) AND k.revoked_at IS NULL AND (${q.includeDisabled} OR NOT k.disabled)
      ${holds ? Prisma.sql`AND (k.name ILIKE ${holds} OR k.label ILIKE ${holds})` : Prisma.empty}
      ${q.userId ? Prisma.sql`AND k.user_id = ${q.userId}::uuid` : Prisma.empty}
    ORDER BY k.created_at DESC, k.id DESC
    LIMIT ${q.limit} OFFSET ${q.offset}`
}

/** A user key of `accountId` by its digest (undefined: none, deleted, or another account's). */
export async function managedKeyByHash(
  db: Db | Prisma.TransactionClient,
  accountId: string,
  hash: Buffer,
  lock = false,
  userId?: string,
): Promise<ManagedKeyRow | undefined> {
  const rows = await db.$queryRaw<ManagedKeyRow[]>`
    SELECT ${MANAGED_COLUMNS} FROM api_keys k JOIN workspaces w ON w.id = k.workspace_id
    WHERE k.hash = ${hash} AND w.account_id = ${accountId}::uuid AND k.kind = 'user' AND k.revoked_at IS NULL
    ${userId ? Prisma.sql`AND k.user_id = ${userId}::uuid` : Prisma.empty}
    ${lock ? Prisma.sql`FOR UPDATE OF k` : Prisma.empty}`
  return rows[0]
}

/** Any live key's row by id (the caller's own, for GET /key). */
export async function keyById(db: Db, id: string): Promise<ManagedKeyRow | undefined> {
  const rows = await db.$queryRaw<ManagedKeyRow[]>`
    SELECT ${MANAGED_COLUMNS} FROM api_keys k JOIN workspaces w ON w.id = k.workspace_id
    WHERE k.id = ${id}::uuid AND k.revoked_at IS NULL`
  return rows[0]
}

export interface ManagedKeyChange {
  name?: string
  disabled?: boolean
  limitMicros?: bigint | null
  limitReset?: string | null
  includeByokInLimit?: boolean
}

/** Changes a key's settings (undefined: kept); its row as it now is. */
export async function updateManagedKey(
  db: Db | Prisma.TransactionClient,
  id: string,
  c: ManagedKeyChange,
): Promise<ManagedKeyRow | undefined> {
  const sets: Prisma.Sql[] = [Prisma.sql`updated_at = now()`]
  if (c.name !== undefined) sets.push(Prisma.sql`name = ${c.name}`)
  if (c.disabled !== undefined) sets.push(Prisma.sql`disabled = ${c.disabled}`)
  if (c.limitMicros !== undefined) sets.push(Prisma.sql`limit_micros = ${c.limitMicros}`)
  if (c.limitReset !== undefined) sets.push(Prisma.sql`limit_reset = ${c.limitReset}`)
  if (c.includeByokInLimit !== undefined) sets.push(Prisma.sql`include_byok_in_limit = ${c.includeByokInLimit}`)
  const rows = await db.$queryRaw<ManagedKeyRow[]>`
    WITH k AS (UPDATE api_keys SET ${Prisma.join(sets, ', ')} WHERE id = ${id}::uuid AND revoked_at IS NULL RETURNING *)
    SELECT ${MANAGED_COLUMNS} FROM k JOIN workspaces w ON w.id = k.workspace_id`
  return rows[0]
}

/** Deletes a key: it stops authenticating at once and is no longer listed. False when it was gone already. */
export async function revokeKey(db: Db, id: string): Promise<boolean> {
  const n =
    await db.$executeRaw`UPDATE api_keys SET revoked_at = now(), updated_at = now() WHERE id = ${id}::uuid AND revoked_at IS NULL`
  return n > 0
}

/** Of `hashes`, the keys of `accountId` that are not deleted, with their workspace. */
export async function keysOfAccount(db: Db | Prisma.TransactionClient, accountId: string, hashes: Buffer[]) {
  return db.$queryRaw<{ id: string; hash: Uint8Array; workspace_id: string; kind: string }[]>`
    SELECT k.id, k.hash, k.workspace_id, k.kind::text AS kind FROM api_keys k JOIN workspaces w ON w.id = k.workspace_id
    WHERE w.account_id = ${accountId}::uuid AND k.revoked_at IS NULL AND k.hash = ANY(${hashes}::bytea[])`
}

/** Notes that a key authenticated a request now, unless that was noted within the minute. */
export async function noteKeyUse(db: Db, keyId: string): Promise<void> {
  await db.$executeRaw`
    UPDATE api_keys SET last_used_at = now()
    WHERE id = ${keyId}::uuid AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`
}

// ── the keys members' single sign-on console sessions act as ──────────────────────────────────

/** A member's console key (the oldest live one), if they have one. */
export async function consoleKeyOf(db: Db, userId: string): Promise<{ id: string; hash: Buffer } | undefined> {
  const row = await db.apiKey.findFirst({
    where: { userId, console: true, revokedAt: null },
    orderBy: { createdAt: 'asc' },
    select: { id: true, hash: true },
  })
  return row ? { id: row.id, hash: Buffer.from(row.hash) } : undefined
}

/** A member's console key: a user key of theirs whose secret was never kept (it makes no model call). */
export async function insertConsoleKey(
  db: Db,
  k: { workspaceId: string; userId: string; hash: Buffer; prefix: string; name: string },
): Promise<void> {
  await db.apiKey.create({
    data: {
      kind: 'user',
      workspaceId: k.workspaceId,
      userId: k.userId,
      hash: new Uint8Array(k.hash),
      prefix: k.prefix,
      name: k.name,
      label: 'console sign-in',
      console: true,
    },
  })
}
