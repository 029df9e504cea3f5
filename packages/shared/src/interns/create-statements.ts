import { randomInt } from 'node:crypto'
import { pgErrorCode, Prisma, type Db } from '../db.js'
import { Reasons, type Reason } from '../errors.js'
import type { InternStatus } from '../contracts/interns.js'
import type { NewVault } from '../vault/local-vault.js'
import { INTERN_COLUMNS, type InternRecord } from './view.js'
import { QUOTA_SHARDS } from './quota.js'

/** One create, with every id, key and sealed secret decided before any SQL runs. */
export interface PreparedCreate {
  keyId: string
  key: string
  fingerprint: Buffer
  internId: string
  vault: NewVault
  workspaceId: string
  userId: string
  name: string
  description: string | null
  instructions: string | null
  status: InternStatus
  generation: number
  borrow: string | null
  provision: boolean
  jobId: string
  job: { internId: string; generation: number }
  /** The creating request's trace context (tracing on), for the outbox row: JSON, or null. */
  trace: string | null
}

/** created: the intern row; replay: the key was claimed already (by an earlier or concurrent create). */
export type InsertOutcome = { outcome: 'created'; intern: InternRecord } | { outcome: 'replay' }

/** Shard i may hold limit / QUOTA_SHARDS interns, plus one when i < limit % QUOTA_SHARDS. */
const cap = (shard: Prisma.Sql, limit: number) =>
  Prisma.sql`(${limit}::int / ${QUOTA_SHARDS}::int + CASE WHEN ${shard} < ${limit}::int % ${QUOTA_SHARDS}::int THEN 1 ELSE 0 END)`

/**
 * One create in ONE SQL statement: a chain of data-modifying CTEs, atomic as a statement, one
 * round trip. Each step feeds the next, so nothing after a refused step is written:
 *
 *   claim   the idempotency key (ON CONFLICT DO NOTHING: a concurrent create with the same key
 *           waits for the first to commit and then finds nothing to claim, so it replays)
 *   vault → intern
 *   quota   one guarded UPDATE of one of the member's quota shards, exact under concurrency (no
 *           shard passes its cap, and the caps add up to the limit). It comes last on purpose:
 *           the shard stays locked only from here to commit
 *   lender  the intern that owns the vault to borrow, when one is asked for
 *   outbox  the provisioning job, for the relay to publish
 *
 * A refusal inside the statement (limit, vault) raises via roster_refuse(), which rolls the whole
 * statement back; a duplicate name fails on the unique index. Either way nothing is left behind.
 *
 * The first pass counts the intern on a random shard, so one member's concurrent creates rarely
 * meet on a row. If that shard is full, a second pass takes the first shard that still has room,
 * waiting for it if need be; only when no shard has room is the create refused.
 */
export async function insertOne(db: Db, p: PreparedCreate, limit: number): Promise<InsertOutcome> {
  const attempt = (pick: Prisma.Sql) => db.$queryRaw<{ outcome: 'created' | 'replay'; intern: InternRecord | null }[]>`
    WITH claim AS (
      INSERT INTO idempotency_records (api_key_id, key, fingerprint, intern_id)
      VALUES (${p.keyId}::uuid, ${p.key}, ${p.fingerprint}, ${p.internId}::uuid)
      ON CONFLICT DO NOTHING
      RETURNING intern_id
    ), lender AS (
      SELECT id FROM interns
      WHERE vault_id = ${p.borrow}::uuid AND workspace_id = ${p.workspaceId}::uuid
        AND status NOT IN ('destroying', 'destroy_failed')
    ), vault AS (
      INSERT INTO vaults (id, workspace_id, master_key_id, sealed_data_key)
      SELECT ${p.vault.id}::uuid, ${p.workspaceId}::uuid, ${p.vault.masterKeyId}::uuid, ${p.vault.sealedDataKey} FROM claim
      RETURNING id
    ), intern AS (
      INSERT INTO interns (id, workspace_id, creator_user_id, name, description, instructions, status,
                           provision_generation, vault_id, attached_vault_id, updated_at)
      SELECT ${p.internId}::uuid, ${p.workspaceId}::uuid, ${p.userId}::uuid, ${p.name},
             ${p.description}, ${p.instructions}, ${p.status}::intern_status,
             ${p.generation}, vault.id, ${p.borrow}::uuid, now()
      FROM vault
      RETURNING ${INTERN_COLUMNS}
    ), quota AS (
      UPDATE member_quota_shards q SET used = q.used + 1
      WHERE q.user_id = ${p.userId}::uuid AND q.shard = ${pick} AND EXISTS (SELECT 1 FROM intern)
        AND q.used < ${cap(Prisma.sql`q.shard`, limit)}
      RETURNING q.shard
    ), outbox AS (
      INSERT INTO outbox (kind, job_id, payload, trace_context)
      SELECT 'intern.provision', ${p.jobId}, ${JSON.stringify(p.job)}::jsonb, ${p.trace}::jsonb
      FROM intern WHERE ${p.provision}
      RETURNING id
    )
    SELECT CASE
        WHEN NOT EXISTS (SELECT 1 FROM claim) THEN 'replay'
        WHEN NOT EXISTS (SELECT 1 FROM quota) THEN roster_refuse('intern_limit_reached')
        WHEN ${p.borrow}::uuid IS NOT NULL AND NOT EXISTS (SELECT 1 FROM lender) THEN roster_refuse('vault_not_attachable')
        ELSE 'created'
      END AS outcome,
      (SELECT row_to_json(intern) FROM intern) AS intern`

  let rows
  try {
    rows = await attempt(Prisma.sql`${randomInt(QUOTA_SHARDS)}::smallint`)
  } catch (err) {
    if (refusedReason(err) !== 'intern_limit_reached') throw err
    rows = await attempt(Prisma.sql`(
        SELECT shard FROM member_quota_shards
        WHERE user_id = ${p.userId}::uuid AND used < ${cap(Prisma.sql`shard`, limit)}
        ORDER BY shard LIMIT 1 FOR UPDATE)`)
  }
  const row = rows[0]
  return row?.outcome === 'created' && row.intern ? { outcome: 'created', intern: row.intern } : { outcome: 'replay' }
}

/**
 * Many creates in ONE statement, the same steps over arrays (unnest), so concurrent creates share
 * one round trip, one plan and one commit. It is all or nothing: any refusal (a name taken, a
 * full quota shard, a vault that cannot be attached, two creates of one name in the batch) raises
 * and rolls the whole batch back, and the caller then runs each create alone, where the refusal
 * lands on the create it belongs to. Keys claimed already (or twice in the batch) are not an
 * error: those creates come back as replays.
 */
export async function insertMany(db: Db, items: PreparedCreate[], limit: number): Promise<Map<string, InsertOutcome>> {
  const col = <T>(f: (p: PreparedCreate) => T) => items.map(f)
  const rows = await db.$queryRaw<{ interns: InternRecord[] | null }[]>`
    WITH items AS (
      SELECT * FROM unnest(
        ${col((p) => p.keyId)}::uuid[], ${col((p) => p.key)}::text[], ${col((p) => p.fingerprint)}::bytea[],
        ${col((p) => p.internId)}::uuid[], ${col((p) => p.vault.id)}::uuid[], ${col((p) => p.workspaceId)}::uuid[],
        ${col((p) => p.vault.masterKeyId)}::uuid[], ${col((p) => p.vault.sealedDataKey)}::bytea[],
        ${col((p) => p.userId)}::uuid[], ${col((p) => p.name)}::text[], ${col((p) => p.description)}::text[],
        ${col((p) => p.instructions)}::text[], ${col((p) => p.status)}::intern_status[], ${col((p) => p.generation)}::int[],
        ${col((p) => p.borrow)}::uuid[], ${col((p) => p.provision)}::bool[], ${col(() => randomInt(QUOTA_SHARDS))}::smallint[],
        ${col((p) => p.jobId)}::text[], ${col((p) => JSON.stringify(p.job))}::jsonb[], ${col((p) => p.trace)}::jsonb[]
      ) AS t(key_id, key, fingerprint, intern_id, vault_id, workspace_id, master_key_id, sealed_data_key,
             user_id, name, description, instructions, status, generation, borrow, provision, shard, job_id, payload, trace_context)
    ), claim AS (
      INSERT INTO idempotency_records (api_key_id, key, fingerprint, intern_id)
      SELECT key_id, key, fingerprint, intern_id FROM items
      ON CONFLICT DO NOTHING
      RETURNING intern_id
    ), mine AS (
      SELECT items.* FROM items JOIN claim USING (intern_id)
    ), vault AS (
      INSERT INTO vaults (id, workspace_id, master_key_id, sealed_data_key)
      SELECT vault_id, workspace_id, master_key_id, sealed_data_key FROM mine
      RETURNING id
    ), intern AS (
      INSERT INTO interns (id, workspace_id, creator_user_id, name, description, instructions, status,
                           provision_generation, vault_id, attached_vault_id, updated_at)
      SELECT intern_id, workspace_id, user_id, name, description, instructions, status,
             generation, vault_id, borrow, now()
      FROM mine
      RETURNING ${INTERN_COLUMNS}
    ), wanted AS (
      SELECT user_id, shard, count(*)::int AS n FROM mine GROUP BY user_id, shard
    ), locked AS (
      -- Shard rows are locked in one global order, so concurrent batches never deadlock on them.
      SELECT q.user_id, q.shard FROM member_quota_shards q JOIN wanted w USING (user_id, shard)
      ORDER BY q.user_id, q.shard
      FOR UPDATE OF q
    ), quota AS (
      UPDATE member_quota_shards q SET used = q.used + w.n
      FROM wanted w JOIN locked l USING (user_id, shard)
      WHERE q.user_id = w.user_id AND q.shard = w.shard AND q.used + w.n <= ${cap(Prisma.sql`q.shard`, limit)}
      RETURNING q.user_id
    ), outbox AS (
      INSERT INTO outbox (kind, job_id, payload, trace_context)
      SELECT 'intern.provision', job_id, payload, trace_context FROM mine WHERE provision
      RETURNING id
    )
    SELECT CASE
        WHEN (SELECT count(*) FROM quota) < (SELECT count(*) FROM wanted) THEN roster_refuse('intern_limit_reached')
        WHEN EXISTS (
          SELECT 1 FROM mine m WHERE m.borrow IS NOT NULL AND NOT EXISTS (
            SELECT 1 FROM interns l WHERE l.vault_id = m.borrow AND l.workspace_id = m.workspace_id
              AND l.status NOT IN ('destroying', 'destroy_failed')))
          THEN roster_refuse('vault_not_attachable')
        ELSE 'created'
      END AS outcome,
      (SELECT json_agg(row_to_json(intern)) FROM intern) AS interns`
  const created = new Map((rows[0]?.interns ?? []).map((r) => [r.id, r]))
  return new Map(
    items.map((p) => {
      const intern = created.get(p.internId)
      return [p.internId, intern ? { outcome: 'created', intern } : { outcome: 'replay' }]
    }),
  )
}

/** The reason roster_refuse() raised, if that is what failed. */
export function refusedReason(err: unknown): Reason | undefined {
  if (pgErrorCode(err) !== 'RS409') return undefined
  const text = String((err as { message?: string })?.message ?? '')
  return (Object.keys(Reasons) as Reason[]).find((r) => text.includes(r))
}
