import { randomInt, randomUUID } from 'node:crypto'
import { AppError, isAppError, Reasons, type Reason } from '../errors.js'
import { isUniqueViolation, pgErrorCode, Prisma, type Db } from '../db.js'
import type { Caller } from '../caller.js'
import type { CreateInternRequest, Intern, InternStatus } from '../contracts/interns.js'
import { INTERN_COLUMNS, toIntern, type InternRecord } from './view.js'
import { QUOTA_SHARDS } from './quota.js'
import type { VaultService } from '../vault/local-vault.js'
import { canonicalJson, sha256 } from '../canonical-json.js'
import { Jobs } from '../jobs.js'

export interface CreateInternDeps {
  db: Db
  vault: VaultService
  internLimitPerMember: number
  /** Called after an outbox row was committed, to wake the relay. */
  outboxWritten?: () => void
}

export interface CreateInternResult {
  /** 201 for a new intern, 200 for the replay of a finished create. */
  status: 201 | 200
  intern: Intern
}

/**
 * Creates an intern with its private vault, the borrowed-vault attachment and (when provisioning)
 * the outbox message, in ONE SQL statement: a chain of data-modifying CTEs, atomic as a statement,
 * one round trip. Each step feeds the next, so nothing after a refused step is written:
 *
 *   claim   the idempotency key (ON CONFLICT DO NOTHING: a concurrent create with the same key
 *           waits for the first to commit and then finds nothing to claim, so it replays)
 *   vault → intern
 *   quota   one guarded UPDATE of one of the member's quota shards, exact under concurrency (no
 *           shard passes its cap, and the caps add up to the limit). It comes last on purpose:
 *           the shard stays locked from here to commit, and SKIP LOCKED sends concurrent creates
 *           of one member to different shards instead of queueing them on one row
 *   lender  the intern that owns the vault to borrow, when one is asked for
 *   outbox  the provisioning job, for the relay to publish (the caller rings its bell)
 *
 * A refusal inside the statement (limit, vault) raises via roster_refuse(), which rolls the whole
 * statement back; a duplicate name fails on the unique index. Either way nothing is left behind,
 * and a retry with the same key starts afresh.
 */
export async function createIntern(
  deps: CreateInternDeps,
  caller: Caller,
  body: CreateInternRequest,
  idempotencyKey: string | undefined,
): Promise<CreateInternResult> {
  const userId = caller.userId
  if (!userId) throw new AppError('no_acting_user', 'this key acts for no member')
  if (body.workspace_id !== undefined && body.workspace_id !== caller.workspaceId) {
    throw new AppError('not_found', `workspace ${body.workspace_id} is not the workspace of this API key`)
  }
  const request = { ...body, workspace_id: caller.workspaceId }
  const fingerprint = sha256('POST /interns', canonicalJson(request))
  const key = idempotencyKey ?? `derived:${fingerprint.toString('hex')}`
  const internId = randomUUID()
  const vault = await deps.vault.newVault(deps.db)
  const generation = request.provision ? 1 : 0
  const status: InternStatus = request.provision ? 'queued' : 'stopped'
  const job = { internId, generation: 1 }
  const borrow = request.vault_id ?? null

  const limit = deps.internLimitPerMember
  // First pass: one shard picked at random, so one member's concurrent creates rarely meet on a
  // row. If that shard is full, a second pass takes the first shard that still has room, waiting
  // for it if need be; only when no shard has room is the create refused.
  const attempt = (pick: Prisma.Sql) => deps.db.$queryRaw<{ outcome: string; intern: InternRecord | null }[]>`
      WITH claim AS (
        INSERT INTO idempotency_records (api_key_id, key, fingerprint, intern_id)
        VALUES (${caller.keyId}::uuid, ${key}, ${fingerprint}, ${internId}::uuid)
        ON CONFLICT DO NOTHING
        RETURNING intern_id
      ), lender AS (
        SELECT id FROM interns
        WHERE vault_id = ${borrow}::uuid AND workspace_id = ${caller.workspaceId}::uuid
          AND status NOT IN ('destroying', 'destroy_failed')
      ), vault AS (
        INSERT INTO vaults (id, workspace_id, master_key_id, sealed_data_key)
        SELECT ${vault.id}::uuid, ${caller.workspaceId}::uuid, ${vault.masterKeyId}::uuid, ${vault.sealedDataKey} FROM claim
        RETURNING id
      ), intern AS (
        INSERT INTO interns (id, workspace_id, creator_user_id, name, description, instructions, status,
                             provision_generation, vault_id, attached_vault_id, updated_at)
        SELECT ${internId}::uuid, ${caller.workspaceId}::uuid, ${userId}::uuid, ${request.name},
               ${request.description ?? null}, ${request.instructions ?? null}, ${status}::intern_status,
               ${generation}, vault.id, ${borrow}::uuid, now()
        FROM vault
        RETURNING ${INTERN_COLUMNS}
      ), quota AS (
        UPDATE member_quota_shards q SET used = q.used + 1
        WHERE q.user_id = ${userId}::uuid AND q.shard = ${pick} AND EXISTS (SELECT 1 FROM intern)
          AND q.used < ${limit}::int / ${QUOTA_SHARDS}::int + CASE WHEN q.shard < ${limit}::int % ${QUOTA_SHARDS}::int THEN 1 ELSE 0 END
        RETURNING q.shard
      ), outbox AS (
        INSERT INTO outbox (kind, job_id, payload)
        SELECT 'intern.provision', ${Jobs['intern.provision'].jobId(job)}, ${JSON.stringify(job)}::jsonb
        FROM intern WHERE ${request.provision}
        RETURNING id
      )
      SELECT CASE
          WHEN NOT EXISTS (SELECT 1 FROM claim) THEN 'replay'
          WHEN NOT EXISTS (SELECT 1 FROM quota) THEN roster_refuse('intern_limit_reached')
          WHEN ${borrow}::uuid IS NOT NULL AND NOT EXISTS (SELECT 1 FROM lender) THEN roster_refuse('vault_not_attachable')
          ELSE 'created'
        END AS outcome,
        (SELECT row_to_json(intern) FROM intern) AS intern`

  let rows: { outcome: string; intern: InternRecord | null }[]
  try {
    try {
      rows = await attempt(Prisma.sql`${randomInt(QUOTA_SHARDS)}::smallint`)
    } catch (err) {
      if (refusedReason(err) !== 'intern_limit_reached') throw err
      rows = await attempt(Prisma.sql`(
          SELECT shard FROM member_quota_shards
          WHERE user_id = ${userId}::uuid
            AND used < ${limit}::int / ${QUOTA_SHARDS}::int + CASE WHEN shard < ${limit}::int % ${QUOTA_SHARDS}::int THEN 1 ELSE 0 END
          ORDER BY shard LIMIT 1 FOR UPDATE)`)
    }
  } catch (err) {
    throw refusal(err, request.name, limit, borrow) ?? err
  }

  const row = rows[0]
  if (row?.outcome === 'created' && row.intern) {
    if (request.provision) deps.outboxWritten?.()
    return { status: 201, intern: toIntern(row.intern) }
  }
  return replay(deps.db, caller.keyId, key, fingerprint)
}

function refusal(err: unknown, name: string, limit: number, vaultId: string | null): AppError | undefined {
  if (isAppError(err)) return err
  if (isUniqueViolation(err)) return new AppError('name_taken', `you already have an intern named "${name}" in this workspace`)
  if (pgErrorCode(err) === 'RS409') {
    const reason = refusedReason(err)
    if (reason === 'intern_limit_reached') {
      return new AppError(reason, `this member already has ${limit} interns, the most allowed per member`)
    }
    if (reason === 'vault_not_attachable') {
      return new AppError(reason, `vault ${vaultId} is not owned by a live intern of this workspace, so it cannot be attached`)
    }
  }
  return undefined
}

function refusedReason(err: unknown): Reason | undefined {
  if (pgErrorCode(err) !== 'RS409') return undefined
  const text = String((err as { message?: string })?.message ?? '')
  return (Object.keys(Reasons) as Reason[]).find((r) => text.includes(r))
}

async function replay(db: Db, keyId: string, key: string, fingerprint: Buffer): Promise<CreateInternResult> {
  const rows = await db.$queryRaw<{ matches: boolean; intern: InternRecord | null }[]>`
    SELECT r.fingerprint = ${fingerprint} AS matches,
           (SELECT row_to_json(i) FROM (SELECT ${INTERN_COLUMNS} FROM interns WHERE id = r.intern_id) i) AS intern
    FROM idempotency_records r WHERE r.api_key_id = ${keyId}::uuid AND r.key = ${key}`
  const record = rows[0]
  if (!record) throw new Error('idempotency record vanished while replaying')
  if (!record.matches) {
    throw new AppError('idempotency_key_reused', 'this Idempotency-Key was already used with a different request')
  }
  if (!record.intern) throw new AppError('not_found', 'the intern created with this Idempotency-Key has since been deleted')
  return { status: 200, intern: toIntern(record.intern) }
}
