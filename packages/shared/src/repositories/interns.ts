import { randomInt } from 'node:crypto'
import { pgErrorCode, Prisma, type Db } from '../db.js'
import { Reasons, type Reason } from '@roster/protocol'
import type { InternProgress, InternStatus } from '@roster/protocol'
import type { NewVault } from '../vault/local-vault.js'
import type { InternRecord } from '../interns/view.js'
import { QUOTA_SHARDS } from '../interns/quota.js'
import type { FleetTimes } from '../fleet/times.js'
import { likeLiteral } from '../like-pattern.js'

/** The columns every intern read selects (an InternRecord), in one place. */
export const INTERN_COLUMNS = Prisma.raw(`id, name, description, instructions, model, status::text AS status,
  last_failure_message, progress, hostname, workspace_id, vault_id, attached_vault_id, created_at, updated_at,
  creator_user_id, icon_sha256`)

/** The database, or a transaction a caller writes beside (a create with rows of its own). */
type Tx = Db | Prisma.TransactionClient

// The interns table's statements, all of them, with the records an intern's create and teardown
// write beside it in the same statement or transaction (its idempotency record, its place in the
// member's quota shards, its private vault). Sections: create · reads · status · placement · upkeep.
// What the statements mean (which transitions are allowed, who may see what) is the domain
// modules' (interns/, intern-state.ts, fleet/); here is only how the record is read and written.

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
              AND l.status NOT IN ('destroying', 'destroy_failed')))
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
export async function idempotencyRecord(db: Db, keyId: string, key: string, fingerprint: Buffer) {
  const rows = await db.$queryRaw<{ matches: boolean; intern: InternRecord | null }[]>`
    SELECT r.fingerprint = ${fingerprint} AS matches,
           (SELECT row_to_json(i) FROM (SELECT ${INTERN_COLUMNS} FROM interns WHERE id = r.intern_id) i) AS intern
    FROM idempotency_records r WHERE r.api_key_id = ${keyId}::uuid AND r.key = ${key}`
  return rows[0]
}

// ── reads ────────────────────────────────────────────────────────────────────────────────────────

/** An intern's row. */
export async function internRecord(db: Db, id: string): Promise<InternRecord | undefined> {
  const rows = await db.$queryRaw<InternRecord[]>`SELECT ${INTERN_COLUMNS} FROM interns WHERE id = ${id}::uuid`
  return rows[0]
}

/** Interns by id, those that exist (in no order). */
export function internRecords(db: Db, ids: readonly string[]): Promise<InternRecord[]> {
  return db.$queryRaw<InternRecord[]>`SELECT ${INTERN_COLUMNS} FROM interns WHERE id = ANY(${ids}::uuid[])`
}

/** An intern's status (undefined: no such intern). */
export async function internStatus(db: Db, id: string): Promise<InternStatus | undefined> {
  return (await db.intern.findUnique({ where: { id }, select: { status: true } }))?.status
}

/** What access to an intern and its vaults turns on. */
export async function internScope(db: Db, id: string) {
  const rows = await db.$queryRaw<
    { id: string; workspace_id: string; status: string; vault_id: string | null; attached_vault_id: string | null }[]
  >`SELECT id, workspace_id, status::text AS status, vault_id, attached_vault_id FROM interns WHERE id = ${id}::uuid`
  return rows[0]
}

/**
 * One page of a workspace's interns, newest first, keyset-paged on (created_at, id) so it is stable
 * while interns are being created: up to `limit + 1` rows (one more says there are more).
 */
export function internPage(
  db: Db,
  workspaceId: string,
  q: { status?: InternStatus[]; nameHolds?: string; after?: { createdAt: string; id: string }; limit: number },
) {
  return db.$queryRaw<(InternRecord & { created_at_exact: string })[]>`
    SELECT ${INTERN_COLUMNS}, created_at::text AS created_at_exact FROM interns
    WHERE workspace_id = ${workspaceId}::uuid
      ${q.status ? Prisma.sql`AND status = ANY(${q.status}::intern_status[])` : Prisma.empty}
      ${q.nameHolds ? Prisma.sql`AND name ILIKE ${`%${likeLiteral(q.nameHolds)}%`}` : Prisma.empty}
      ${q.after ? Prisma.sql`AND (created_at, id) < (${q.after.createdAt}::timestamptz, ${q.after.id}::uuid)` : Prisma.empty}
    ORDER BY created_at DESC, id DESC
    LIMIT ${q.limit + 1}`
}

/** An intern's row locked for a lifecycle change (in the caller's transaction). */
export async function lockIntern(tx: Prisma.TransactionClient, id: string) {
  const rows = await tx.$queryRaw<
    (InternRecord & { workspace_archive_failed: boolean; provision_generation: number })[]
  >`
    SELECT ${INTERN_COLUMNS}, workspace_archive_failed, provision_generation FROM interns
    WHERE id = ${id}::uuid FOR UPDATE`
  return rows[0]
}

/** Changes an intern's own fields (undefined: kept; null: cleared); its row as it now is. */
export async function updateInternFields(
  tx: Prisma.TransactionClient,
  id: string,
  fields: { name?: string; description?: string | null; instructions?: string | null; model?: string | null },
): Promise<InternRecord> {
  const sets: Prisma.Sql[] = [Prisma.sql`updated_at = now()`]
  if (fields.name !== undefined) sets.push(Prisma.sql`name = ${fields.name}`)
  if (fields.description !== undefined) sets.push(Prisma.sql`description = ${fields.description}`)
  if (fields.instructions !== undefined) sets.push(Prisma.sql`instructions = ${fields.instructions}`)
  if (fields.model !== undefined) sets.push(Prisma.sql`model = ${fields.model}`)
  const rows = await tx.$queryRaw<InternRecord[]>`
    UPDATE interns SET ${Prisma.join(sets, ', ')} WHERE id = ${id}::uuid RETURNING ${INTERN_COLUMNS}`
  return rows[0]!
}

// ── icon ─────────────────────────────────────────────────────────────────────────────────────────
// An intern's icon is its intern_icons row; the intern's row carries the icon's digest (for views).

/** Sets an intern's icon and its digest on the intern, in one transaction. */
export async function putIcon(db: Db, internId: string, icon: { contentType: string; bytes: Buffer; sha256: string }) {
  const bytes = new Uint8Array(icon.bytes)
  await db.$transaction([
    db.internIcon.upsert({
      where: { internId },
      create: { internId, contentType: icon.contentType, bytes, sha256: icon.sha256 },
      update: { contentType: icon.contentType, bytes, sha256: icon.sha256, updatedAt: new Date() },
    }),
    db.intern.update({ where: { id: internId }, data: { iconSha256: icon.sha256 } }),
  ])
}

/** Removes an intern's icon (none is fine). */
export async function deleteIcon(db: Db, internId: string) {
  await db.$transaction([
    db.internIcon.deleteMany({ where: { internId } }),
    db.intern.update({ where: { id: internId }, data: { iconSha256: null } }),
  ])
}

export async function iconOf(db: Db, internId: string) {
  const icon = await db.internIcon.findUnique({ where: { internId } })
  return icon && { contentType: icon.contentType, bytes: Buffer.from(icon.bytes), sha256: icon.sha256 }
}

// ── status ───────────────────────────────────────────────────────────────────────────────────────

export interface TransitionChange {
  progress?: InternProgress | null
  hostname?: string | null
  /** Sets the hostname only if the intern has none yet (a retried run keeps its reservation). */
  reserveHostname?: string
  lastFailureMessage?: string | null
  /** Starts a new provisioning run: jobs of older runs find their guard failing and stop. */
  bumpGeneration?: true
}

/** What a transition returns about the intern it changed. */
export interface TransitionedIntern {
  id: string
  name: string
  instructions: string | null
  model: string | null
  hostname: string | null
  vault_id: string | null
  provision_generation: number
}

export interface TransitionRequest {
  internId: string
  from: readonly InternStatus[]
  to: InternStatus
  /** When set, the update applies only to this provisioning run. */
  generation?: number
  set?: TransitionChange
}

/** One guarded status change (`WHERE status = ANY(from)`, and the run's generation when given); null when it did not apply. */
export async function updateStatus(
  db: Db | Prisma.TransactionClient,
  req: TransitionRequest,
): Promise<TransitionedIntern | null> {
  const set = req.set ?? {}
  const sets: Prisma.Sql[] = [Prisma.sql`status = ${req.to}::intern_status`, Prisma.sql`updated_at = now()`]
  if ('progress' in set) {
    sets.push(Prisma.sql`progress = ${set.progress === null ? null : JSON.stringify(set.progress)}::jsonb`)
  }
  if ('hostname' in set) sets.push(Prisma.sql`hostname = ${set.hostname}`)
  if (set.reserveHostname !== undefined) sets.push(Prisma.sql`hostname = COALESCE(hostname, ${set.reserveHostname})`)
  if ('lastFailureMessage' in set) sets.push(Prisma.sql`last_failure_message = ${set.lastFailureMessage}`)
  if (set.bumpGeneration) sets.push(Prisma.sql`provision_generation = provision_generation + 1`)
  const generation =
    req.generation === undefined ? Prisma.empty : Prisma.sql`AND provision_generation = ${req.generation}`
  const rows = await db.$queryRaw<TransitionedIntern[]>`
    UPDATE interns SET ${Prisma.join(sets, ', ')}
    WHERE id = ${req.internId}::uuid
      AND status = ANY(${req.from as InternStatus[]}::intern_status[])
      ${generation}
    RETURNING id, name, instructions, model, hostname, vault_id, provision_generation`
  return rows[0] ?? null
}

/** Many guarded transitions (distinct interns) in one UPDATE over arrays. */
export async function updateStatusMany(db: Db, reqs: TransitionRequest[]): Promise<Map<string, TransitionedIntern>> {
  const col = <T>(f: (r: TransitionRequest) => T) => reqs.map(f)
  const has = (r: TransitionRequest, k: keyof TransitionChange) => r.set !== undefined && k in r.set
  const rows = await db.$queryRaw<TransitionedIntern[]>`
    WITH v AS (
      SELECT * FROM unnest(
        ${col((r) => r.internId)}::uuid[], ${col((r) => r.from.join(','))}::text[], ${col((r) => r.to)}::intern_status[],
        ${col((r) => r.generation ?? null)}::int[],
        ${col((r) => has(r, 'progress'))}::bool[], ${col((r) => (r.set?.progress ? JSON.stringify(r.set.progress) : null))}::jsonb[],
        ${col((r) => has(r, 'hostname'))}::bool[], ${col((r) => r.set?.hostname ?? null)}::text[],
        ${col((r) => r.set?.reserveHostname ?? null)}::text[],
        ${col((r) => has(r, 'lastFailureMessage'))}::bool[], ${col((r) => r.set?.lastFailureMessage ?? null)}::text[],
        ${col((r) => r.set?.bumpGeneration === true)}::bool[]
      ) AS t(id, from_list, to_status, generation, set_progress, progress, set_hostname, hostname, reserve,
             set_failure, failure, bump)
    )
    UPDATE interns i SET
      status = v.to_status,
      updated_at = now(),
      progress = CASE WHEN v.set_progress THEN v.progress ELSE i.progress END,
      hostname = CASE WHEN v.set_hostname THEN v.hostname
                      WHEN v.reserve IS NOT NULL THEN COALESCE(i.hostname, v.reserve)
                      ELSE i.hostname END,
      last_failure_message = CASE WHEN v.set_failure THEN v.failure ELSE i.last_failure_message END,
      provision_generation = i.provision_generation + CASE WHEN v.bump THEN 1 ELSE 0 END
    FROM v
    WHERE i.id = v.id
      AND i.status::text = ANY(string_to_array(v.from_list, ','))
      AND (v.generation IS NULL OR i.provision_generation = v.generation)
    RETURNING i.id, i.name, i.instructions, i.model, i.hostname, i.vault_id, i.provision_generation`
  return new Map(rows.map((r) => [r.id, r]))
}

// ── placement ────────────────────────────────────────────────────────────────────────────────────

/** Whether the fleet is moving an intern: placed again lately (its host died or drained), and not suspended since. */
export async function internMoving(db: Db, internId: string): Promise<boolean> {
  const [row] = await db.$queryRaw<{ moving: boolean }[]>`
    SELECT status IN ('queued', 'provisioning', 'running') AND moved_at > now() - interval '10 minutes' AS moving
    FROM interns WHERE id = ${internId}::uuid`
  return row?.moving === true
}

/** Marks an intern placed again by the fleet (a chat meanwhile waits for it: CHAT_MOVE_WAIT_MS). */
export const markMoved = (tx: Prisma.TransactionClient, internId: string) =>
  tx.$executeRaw`UPDATE interns SET moved_at = now() WHERE id = ${internId}::uuid`

/**
 * The statuses in which an intern is held by the host it is placed on: provisioning and running, and
 * destroying (its host takes the last snapshot of its workspace for the archive, then removes it).
 * A stopped intern's workspace is its latest snapshot: its host drops it.
 */
export const HELD_BY_HOST = Prisma.raw(`('provisioning', 'running', 'destroying')`)

/** The interns the record has a host hold, with their generations. */
export async function placementsOf(db: Db, hostId: string): Promise<{ id: string; generation: number }[]> {
  return db.$queryRaw<{ id: string; generation: number }[]>`
    SELECT id, placement_generation AS generation FROM interns
    WHERE runtime_host_id = ${hostId} AND status IN ${HELD_BY_HOST}`
}

/** Whether the record places `internId` on `hostId` under `generation`. */
export async function isPlaced(db: Db, internId: string, hostId: string, generation: number): Promise<boolean> {
  const rows = await db.$queryRaw<{ ok: number }[]>`
    SELECT 1 AS ok FROM interns WHERE id = ${internId}::uuid AND runtime_host_id = ${hostId} AND placement_generation = ${generation}
      AND status IN ${HELD_BY_HOST}`
  return rows.length > 0
}

export interface PlacedOn {
  hostId: string
  address: string
  epoch: number
  generation: number
  /** From a placement: the digest of the intern's latest workspace snapshot (null: none). */
  snapshot?: string | null
}

/**
 * Places an intern for its provisioning run `generation`: on the host it is on, if that host is live
 * and still has its room, else on the live host with the most free room (ties at random). One
 * statement (the `place_intern` function of the migrations): the chosen host's row is locked and its
 * count of placed interns (kept by a trigger) read again under the lock, so concurrent placements
 * never overfill it, and the lock is held for that statement alone. Undefined when no live host has
 * room (the run waits for one), or the run is no longer the intern's latest.
 */
export async function placeIntern(
  db: Db,
  internId: string,
  generation: number,
  times: FleetTimes,
): Promise<PlacedOn | undefined> {
  const fresh = new Date(Date.now() - (times.placeWithinMs ?? times.deadAfterMs))
  const [row] = await db.$queryRaw<{ host_id: string; address: string; epoch: number; snapshot: string | null }[]>`
    SELECT host_id, address, epoch, snapshot FROM place_intern(${internId}::uuid, ${generation}::int, ${fresh})`
  return row && { hostId: row.host_id, address: row.address, epoch: row.epoch, generation, snapshot: row.snapshot }
}

/**
 * Takes back a placement its host could not be reached for (it may have died and not yet been
 * declared dead): the run's next attempt places the intern anew. Only that placement: a later one
 * is left alone.
 */
export async function unplace(db: Db, internId: string, at: { hostId: string; generation: number }): Promise<void> {
  await db.$executeRaw`UPDATE interns SET runtime_host_id = NULL WHERE id = ${internId}::uuid AND runtime_host_id = ${at.hostId} AND placement_generation = ${at.generation}`
}

/** Where an intern is placed now (its host's address and epoch) and its status, or undefined when it is not placed. */
export async function placementOf(db: Db, internId: string): Promise<(PlacedOn & { status: string }) | undefined> {
  const [row] = await db.$queryRaw<(PlacedOn & { status: string })[]>`
    SELECT h.id AS "hostId", h.address, h.epoch, i.placement_generation AS generation, i.status::text AS status
    FROM interns i JOIN runtime_hosts h ON h.id = i.runtime_host_id WHERE i.id = ${internId}::uuid`
  return row
}

/** Interns held by a host that is dead or has finished draining (at most 5,000 at a time). */
export async function strandedInterns(db: Db): Promise<string[]> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    SELECT i.id FROM interns i JOIN runtime_hosts h ON h.id = i.runtime_host_id
    WHERE i.status IN ('provisioning', 'running') AND (h.state = 'dead' OR (h.state = 'draining' AND h.drained))
    LIMIT 5000`
  return rows.map((r) => r.id)
}

/** An intern taken off its host by the fleet, marked moved (a chat meanwhile waits for it). */
export const unplaceMoved = (tx: Prisma.TransactionClient, internId: string) =>
  tx.$executeRaw`UPDATE interns SET runtime_host_id = NULL, moved_at = now() WHERE id = ${internId}::uuid`

// ── upkeep ───────────────────────────────────────────────────────────────────────────────────────
// The worker's upkeep of the record: what the reconciler looks for (interns a host no longer runs,
// teardowns and provisioning runs whose jobs vanished, forgotten idempotency keys) and what a
// teardown deletes (the intern, its private vault, its place in the member's quota).

/** Running interns placed on a host, unchanged for 2 s (a fresh one gets that grace). */
export const runningOnHost = (db: Db, hostId: string, limit = 5_000) =>
  db.$queryRaw<{ id: string; hostname: string | null; generation: number }[]>`
    SELECT id, hostname, placement_generation AS generation FROM interns
    WHERE status = 'running' AND runtime_host_id = ${hostId} AND updated_at < now() - interval '2 seconds' LIMIT ${limit}`

/** What the record says of interns a host reports running. */
export const recordsOf = (db: Db, ids: string[]) =>
  db.$queryRaw<{ id: string; status: string; updated_at: Date; runtime_host_id: string | null; generation: number }[]>`
    SELECT id, status::text AS status, updated_at, runtime_host_id, placement_generation AS generation
    FROM interns WHERE id = ANY(${ids}::uuid[])`

/** Teardowns with no progress since `before` and no job waiting in the outbox. */
export const stuckTeardowns = (db: Db, before: Date, limit = 1_000) =>
  db.$queryRaw<{ id: string; updated_at: Date }[]>`
    SELECT i.id, i.updated_at FROM interns i
    WHERE i.status = 'destroying' AND i.updated_at < ${before}
      AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.payload->>'internId' = i.id::text)
    LIMIT ${limit}`

/** Queued or provisioning interns with no progress since `before` and no job waiting in the outbox. */
export const stuckProvisioning = (db: Db, before: Date, limit = 2_000) =>
  db.$queryRaw<{ id: string; generation: number }[]>`
    SELECT i.id, i.provision_generation AS generation FROM interns i
    WHERE i.status IN ('queued', 'provisioning') AND i.updated_at < ${before}
      AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.payload->>'internId' = i.id::text)
    ORDER BY i.updated_at LIMIT ${limit}`

/** Forgets idempotency records made before `cutoff`, at most `batch` of them (the BRIN index on created_at finds them). */
export const forgetIdempotencyRecords = (db: Db, cutoff: Date, batch = 5_000) =>
  db.$executeRaw`
    DELETE FROM idempotency_records WHERE ctid = ANY(ARRAY(
      SELECT ctid FROM idempotency_records WHERE created_at < ${cutoff} LIMIT ${batch}))`

/** Locks an intern being torn down, with what its deletion takes along; undefined when it is not (any more) being torn down. */
export async function lockTeardown(tx: Prisma.TransactionClient, internId: string) {
  const [held] = await tx.$queryRaw<{ id: string; vaultId: string | null; creatorUserId: string | null }[]>`
    SELECT id, vault_id AS "vaultId", creator_user_id AS "creatorUserId" FROM interns
    WHERE id = ${internId}::uuid AND status = 'destroying' FOR UPDATE`
  return held
}

/**
 * The intern gone from the record, with its private vault (secrets included: they cascade) and its
 * place in its creator's quota; its keys cascade with it, and interns that borrowed the vault lose
 * the attachment.
 */
export async function deleteInternRecord(
  tx: Prisma.TransactionClient,
  intern: { id: string; vaultId: string | null; creatorUserId: string | null },
) {
  await tx.$executeRaw`DELETE FROM interns WHERE id = ${intern.id}::uuid`
  if (intern.vaultId) await tx.$executeRaw`DELETE FROM vaults WHERE id = ${intern.vaultId}::uuid`
  if (intern.creatorUserId) {
    await tx.$executeRaw`
      UPDATE member_quota_shards SET used = used - 1
      WHERE (user_id, shard) = (
        SELECT user_id, shard FROM member_quota_shards WHERE user_id = ${intern.creatorUserId}::uuid AND used > 0
        ORDER BY shard LIMIT 1 FOR UPDATE)`
  }
}

/** Whether a failed teardown lost the workspace's archive (deleting it again then needs acknowledge_workspace_loss). */
export const markArchiveFailed = (tx: Prisma.TransactionClient, internId: string, failed: boolean) =>
  tx.$executeRaw`UPDATE interns SET workspace_archive_failed = ${failed} WHERE id = ${internId}::uuid`
