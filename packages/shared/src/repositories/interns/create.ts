import { randomInt } from 'node:crypto'
import { pgErrorCode, Prisma, type Db } from '../../db.js'
import { Reasons, type Reason } from '@roster/protocol'
import type { InternStatus } from '@roster/protocol'
import type { NewVault } from '../../vault/local-vault.js'
import type { InternRecord } from '../../interns/view.js'
import { QUOTA_SHARDS } from '../../interns/quota.js'
import { INTERN_COLUMNS, statusIn, type Tx } from './columns.js'

// The interns table's statements: creating an intern, with its idempotency record, its place in the member's quota shards and its private vault, in one statement (repositories/interns.ts holds the reads and the index).

// ── create ───────────────────────────────────────────────────────────────────────────────────────

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
 * Creates in ONE SQL statement: a chain of data-modifying CTEs over the creates as arrays (unnest),
 * atomic as a statement, one round trip, one plan and one commit however many creates it carries.
 * Each step feeds the next, so nothing after a refused step is written:
 *
 *   claim   the idempotency keys (ON CONFLICT DO NOTHING: a concurrent create with the same key
 *           waits for the first to commit and then finds nothing to claim, so it replays; a key
 *           twice in one batch is claimed once)
 *   vault → intern
 *   quota   one guarded UPDATE per quota shard the creates land on, exact under concurrency (no
 *           shard passes its cap, and the caps add up to the limit). It comes last on purpose: the
 *           shards stay locked only from here to commit, and are locked in one global order so
 *           concurrent statements never deadlock on them
 *   lender  the intern that owns each vault to borrow, when one is asked for
 *   outbox  the provisioning jobs, for the relay to publish
 *
 * It is all or nothing: a refusal (a full quota shard, a vault that cannot be attached) raises via
 * roster_refuse() and a duplicate name fails on the unique index, rolling the whole statement back.
 *
 * Each create counts on a random shard (so one member's concurrent creates rarely meet on a row),
 * or, with `firstWithRoom`, on the first shard that still has room, locked as it is chosen (so a
 * shard filled meanwhile is passed over for the next, not refused).
 */
function insertStatement(db: Tx, items: PreparedCreate[], limit: number, firstWithRoom: boolean) {
  const col = <T>(f: (p: PreparedCreate) => T) => items.map(f)
  const shards = col(() => (firstWithRoom ? null : randomInt(QUOTA_SHARDS)))
  return db.$queryRaw<{ interns: InternRecord[] | null }[]>`
    WITH items AS (
      SELECT * FROM unnest(
        ${col((p) => p.keyId)}::uuid[], ${col((p) => p.key)}::text[], ${col((p) => p.fingerprint)}::bytea[],
        ${col((p) => p.internId)}::uuid[], ${col((p) => p.vault.id)}::uuid[], ${col((p) => p.workspaceId)}::uuid[],
        ${col((p) => p.vault.masterKeyId)}::uuid[], ${col((p) => p.vault.sealedDataKey)}::bytea[],
        ${col((p) => p.userId)}::uuid[], ${col((p) => p.name)}::text[], ${col((p) => p.description)}::text[],
        ${col((p) => p.instructions)}::text[], ${col((p) => p.status)}::intern_status[], ${col((p) => p.generation)}::int[],
        ${col((p) => p.borrow)}::uuid[], ${col((p) => p.provision)}::bool[], ${shards}::smallint[],
        ${col((p) => p.jobId)}::text[], ${col((p) => JSON.stringify(p.job))}::jsonb[], ${col((p) => p.trace)}::jsonb[]
      ) AS t(key_id, key, fingerprint, intern_id, vault_id, workspace_id, master_key_id, sealed_data_key,
             user_id, name, description, instructions, status, generation, borrow, provision, shard, job_id, payload, trace_context)
    ), claim AS (
      INSERT INTO idempotency_records (api_key_id, key, fingerprint, intern_id)
      SELECT key_id, key, fingerprint, intern_id FROM items
      ON CONFLICT DO NOTHING
      RETURNING intern_id
    ), mine AS (
      SELECT items.key_id, items.intern_id, items.vault_id, items.workspace_id, items.master_key_id,
             items.sealed_data_key, items.user_id, items.name, items.description, items.instructions,
             items.status, items.generation, items.borrow, items.provision, items.job_id, items.payload,
             items.trace_context,
             coalesce(items.shard, (
               SELECT q.shard FROM member_quota_shards q
               WHERE q.user_id = items.user_id AND q.used < ${cap(Prisma.sql`q.shard`, limit)}
               ORDER BY q.shard LIMIT 1 FOR UPDATE)) AS shard
      FROM items JOIN claim USING (intern_id)
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
              AND NOT ${statusIn('deleting', 'l.status')}))
          THEN roster_refuse('vault_not_attachable')
        ELSE 'created'
      END AS outcome,
      (SELECT json_agg(row_to_json(intern)) FROM intern) AS interns`
}

/** Each create's outcome by intern id: created with its row, or a replay of a key claimed already. */
async function insert(db: Tx, items: PreparedCreate[], limit: number, firstWithRoom: boolean) {
  const rows = await insertStatement(db, items, limit, firstWithRoom)
  const created = new Map((rows[0]?.interns ?? []).map((r) => [r.id, r]))
  return new Map<string, InsertOutcome>(
    items.map((p) => {
      const intern = created.get(p.internId)
      return [p.internId, intern ? { outcome: 'created', intern } : { outcome: 'replay' }]
    }),
  )
}

/**
 * One create. If its random shard is full, a second pass takes the first shard that still has
 * room; only when no shard has room is the create refused.
 */
export async function insertOne(db: Db, p: PreparedCreate, limit: number): Promise<InsertOutcome> {
  let outcomes
  try {
    outcomes = await insert(db, [p], limit, false)
  } catch (err) {
    if (refusedReason(err) !== 'intern_limit_reached') throw err
    outcomes = await insert(db, [p], limit, true)
  }
  return outcomes.get(p.internId)!
}

/**
 * One create inside the caller's transaction (with rows of its own written beside it): the first
 * shard with room is taken at once, as a refused statement would abort the transaction and leave
 * no second pass.
 */
export async function insertOneInTx(tx: Prisma.TransactionClient, p: PreparedCreate, limit: number) {
  return (await insert(tx, [p], limit, true)).get(p.internId)!
}

/**
 * Many creates, so concurrent creates share one statement. Any refusal rolls the whole batch back
 * (two creates of one name in the batch included), and the caller then runs each create alone,
 * where the refusal lands on the create it belongs to. Keys claimed already (or twice in the batch)
 * are not an error: those creates come back as replays.
 */
export function insertMany(db: Db, items: PreparedCreate[], limit: number): Promise<Map<string, InsertOutcome>> {
  return insert(db, items, limit, false)
}

/** The reason roster_refuse() raised, if that is what failed. */
export function refusedReason(err: unknown): Reason | undefined {
  if (pgErrorCode(err) !== 'RS409') return undefined
  const text = String((err as { message?: string })?.message ?? '')
  return (Object.keys(Reasons) as Reason[]).find((r) => text.includes(r))
}

/** The idempotency record of (key id, key): whether its fingerprint matches, and the intern it made (null: deleted since). */
/** Forgets a key's create whose intern has since been deleted (and only such a one). */
export async function forgetDeletedCreate(db: Db, keyId: string, key: string): Promise<void> {
  await db.$executeRaw`
    DELETE FROM idempotency_records r
    WHERE r.api_key_id = ${keyId}::uuid AND r.key = ${key}
      AND NOT EXISTS (SELECT 1 FROM interns i WHERE i.id = r.intern_id)`
}

export async function idempotencyRecord(db: Db, keyId: string, key: string, fingerprint: Buffer) {
  const rows = await db.$queryRaw<{ matches: boolean; intern: InternRecord | null }[]>`
    SELECT r.fingerprint = ${fingerprint} AS matches,
           (SELECT row_to_json(i) FROM (SELECT ${INTERN_COLUMNS} FROM interns WHERE id = r.intern_id) i) AS intern
    FROM idempotency_records r WHERE r.api_key_id = ${keyId}::uuid AND r.key = ${key}`
  return rows[0]
}
