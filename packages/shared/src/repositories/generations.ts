import { Prisma, type Db } from '../db.js'
import { generationTimeOf, storableJson } from '@roster/protocol'
import type { GenerationContentRecord, GenerationRecord, GenerationRow } from '@roster/protocol'
import { ensureGenerationPartitions, missingPartition } from './generations/partitions.js'

// The generations, spend, generation_rollups and generation_content tables' statements.

/** The rollups' stand-in for a missing owner (their key has no nulls). */
export const NIL = '00000000-0000-0000-0000-000000000000'

/**
 * The written generations (`written`) added to a rollup table per `bucket` (an hour, a UTC day):
 * summed per bucket and who, in key order (concurrent drains upsert alike, never deadlocking).
 */
const rollup = (table: Prisma.Sql, column: Prisma.Sql, bucket: Prisma.Sql) => Prisma.sql`
      INSERT INTO ${table} (account_id, workspace_id, key_id, user_id, model, provider, ${column}, requests,
        tokens_prompt, tokens_completion, tokens_reasoning, tokens_cached, credits_pico, byok_pico, latency_ms, ttft_ms,
        ttft_count, cancelled)
      SELECT w.account_id, coalesce(w.workspace_id, ${NIL}::uuid), coalesce(w.key_id, ${NIL}::uuid),
             coalesce(w.user_id, ${NIL}::uuid), w.model, coalesce(w.provider, ''), ${bucket},
             count(*), sum(w.tokens_prompt), sum(w.tokens_completion), sum(w.tokens_reasoning), sum(w.tokens_cached),
             sum(CASE WHEN w.is_byok THEN 0 ELSE w.cost_pico END), sum(CASE WHEN w.is_byok THEN w.cost_pico ELSE 0 END),
             sum(coalesce(w.latency_ms, 0)), sum(coalesce(w.ttft_ms, 0)), count(w.ttft_ms),
             count(*) FILTER (WHERE w.cancelled)
      FROM written w WHERE w.account_id IS NOT NULL
      GROUP BY 1, 2, 3, 4, 5, 6, 7 ORDER BY 1, 7, 2, 3, 4, 5, 6
      ON CONFLICT (account_id, ${column}, workspace_id, key_id, user_id, model, provider) DO UPDATE
        SET requests = ${table}.requests + EXCLUDED.requests,
            tokens_prompt = ${table}.tokens_prompt + EXCLUDED.tokens_prompt,
            tokens_completion = ${table}.tokens_completion + EXCLUDED.tokens_completion,
            tokens_reasoning = ${table}.tokens_reasoning + EXCLUDED.tokens_reasoning,
            tokens_cached = ${table}.tokens_cached + EXCLUDED.tokens_cached,
            credits_pico = ${table}.credits_pico + EXCLUDED.credits_pico,
            byok_pico = ${table}.byok_pico + EXCLUDED.byok_pico,
            latency_ms = ${table}.latency_ms + EXCLUDED.latency_ms,
            ttft_ms = ${table}.ttft_ms + EXCLUDED.ttft_ms,
            ttft_count = ${table}.ttft_count + EXCLUDED.ttft_count,
            cancelled = ${table}.cancelled + EXCLUDED.cancelled
      RETURNING 1`

/**
 * Writes generations, each once (a record already written is skipped, so a retried batch counts
 * nothing twice), adds what the new ones cost to their key's, workspace's, account's and member's spend for
 * each period they fall in (all-time, UTC day, UTC week from Monday, UTC month), adds them to
 * their hour's rollup (what analytics read), and keeps the content that came with them: one statement. Answers the records that were new.
 */
export async function insertGenerations(
  db: Db | Prisma.TransactionClient,
  records: GenerationRecord[],
): Promise<GenerationRecord[]> {
  try {
    return await insertOnce(db, records)
  } catch (err) {
    // A day the worker has not made a partition for yet (repositories/generations/partitions.ts): made, then written.
    if (!missingPartition(err) || !('$transaction' in db)) throw err
    await ensureGenerationPartitions(
      db as Db,
      records.map((r) => new Date(r.created_at)),
    )
    return insertOnce(db, records)
  }
}

async function insertOnce(db: Db | Prisma.TransactionClient, records: GenerationRecord[]): Promise<GenerationRecord[]> {
  if (records.length === 0) return []
  const rows = await db.$queryRaw<{ written: string[] | null }[]>`
    WITH g AS (
      SELECT * FROM jsonb_to_recordset(${storableJson(records)}::jsonb) AS t(
        id text, request_id text, created_at timestamptz, key_id uuid, workspace_id uuid, account_id uuid,
        user_id uuid, intern_id uuid, model text, provider text, upstream_model text, door text,
        tokens_prompt int, tokens_completion int, tokens_reasoning int, tokens_cached int, cost_pico bigint,
        is_byok boolean, latency_ms int, generation_time_ms int, ttft_ms int, streamed boolean, cancelled boolean,
        tokens_counted_by text, pass_through boolean, finish_reason text, upstream_id text, session_id text, http_referer text, app_title text, user_agent text,
        external_user text, preset_id text, provider_responses jsonb, content jsonb)
    ), written AS (
      INSERT INTO generations (id, request_id, created_at, key_id, workspace_id, account_id, user_id, intern_id,
        model, provider, upstream_model, door, tokens_prompt, tokens_completion, tokens_reasoning, tokens_cached,
        cost_pico, is_byok, latency_ms, generation_time_ms, ttft_ms, streamed, cancelled, tokens_counted_by,
        pass_through, finish_reason, upstream_id, session_id, http_referer, app_title, user_agent, external_user, preset_id,
        provider_responses)
      SELECT DISTINCT ON (id) id, request_id, created_at, key_id, workspace_id, account_id, user_id, intern_id,
        model, provider, upstream_model, door, tokens_prompt, tokens_completion, tokens_reasoning, tokens_cached,
        cost_pico, is_byok, latency_ms, generation_time_ms, ttft_ms, streamed, cancelled,
        coalesce(tokens_counted_by, 'provider'), coalesce(pass_through, false), finish_reason,
        upstream_id, session_id, http_referer, app_title, user_agent, external_user, preset_id,
        coalesce(provider_responses, '[]'::jsonb)
      FROM g ORDER BY id
      ON CONFLICT (id, created_at) DO NOTHING
      RETURNING id, key_id, workspace_id, account_id, user_id, created_at, cost_pico, is_byok, model, provider,
        tokens_prompt, tokens_completion, tokens_reasoning, tokens_cached, latency_ms, ttft_ms, cancelled
    ), spent AS (
      SELECT o.owner_id, p.period,
             sum(CASE WHEN w.is_byok THEN 0 ELSE w.cost_pico END) AS credits,
             sum(CASE WHEN w.is_byok THEN w.cost_pico ELSE 0 END) AS byok
      FROM written w
      -- The member's spend in the workspace (memberSpendOwner) too: what member guardrails bound.
      CROSS JOIN LATERAL (VALUES (w.key_id), (w.workspace_id), (w.account_id),
        (md5(w.workspace_id::text || '/' || w.user_id::text)::uuid)) AS o(owner_id)
      CROSS JOIN LATERAL (VALUES
        ('all'),
        ('d' || to_char(w.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')),
        ('w' || to_char(date_trunc('week', w.created_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD')),
        ('m' || to_char(w.created_at AT TIME ZONE 'UTC', 'YYYY-MM'))) AS p(period)
      WHERE o.owner_id IS NOT NULL
      GROUP BY o.owner_id, p.period
    ), counted AS (
      INSERT INTO spend (owner_id, period, credits_pico, byok_pico)
      SELECT owner_id, period, credits, byok FROM spent ORDER BY owner_id, period
      ON CONFLICT (owner_id, period) DO UPDATE
        SET credits_pico = spend.credits_pico + EXCLUDED.credits_pico,
            byok_pico = spend.byok_pico + EXCLUDED.byok_pico
      RETURNING 1
    ), rolled AS (${rollup(Prisma.raw('generation_rollups'), Prisma.raw('hour'), Prisma.raw("date_trunc('hour', w.created_at)"))}
    ), rolled_daily AS (${rollup(
      Prisma.raw('generation_rollups_daily'),
      Prisma.raw('day'),
      Prisma.raw("date_trunc('day', w.created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'"),
    )}
    ), kept AS (
      INSERT INTO generation_content (request_id, account_id, input, output, error)
      SELECT g.request_id, g.account_id, g.content->'input', g.content->'output', g.content->'error'
      FROM g JOIN written w ON w.id = g.id
      WHERE g.content IS NOT NULL AND g.account_id IS NOT NULL
      ON CONFLICT (request_id) DO NOTHING
      RETURNING 1
    )
    SELECT (SELECT array_agg(id) FROM written) AS written, (SELECT count(*) FROM counted)::int AS counted,
           (SELECT count(*) FROM rolled)::int AS rolled, (SELECT count(*) FROM rolled_daily)::int AS rolled_daily,
           (SELECT count(*) FROM kept)::int AS kept`
  const written = new Set(rows[0]?.written ?? [])
  return records.filter((r) => written.delete(r.id))
}

/** What a key, workspace or account spent in each of `periods`, in pico-dollars (absent periods: nothing spent). */
export async function spendOf(db: Db, ownerId: string, periods: string[]) {
  const rows = await db.$queryRaw<{ period: string; credits: string; byok: string }[]>`
    SELECT period, credits_pico::text AS credits, byok_pico::text AS byok FROM spend
    WHERE owner_id = ${ownerId}::uuid AND period = ANY(${periods}::text[])`
  return new Map(rows.map((r) => [r.period, { credits: BigInt(r.credits), byok: BigInt(r.byok) }]))
}

/**
 * What each owner spent in its period, in one statement: a map from `owner/period` to the spend
 * (absent: nothing spent). The spend check's read of every limit a request counts against.
 */
export async function spendOfOwners(db: Db, wanted: readonly { owner: string; period: string }[]) {
  const rows = await db.$queryRaw<{ owner: string; period: string; credits: string; byok: string }[]>`
    SELECT s.owner_id::text AS owner, s.period, s.credits_pico::text AS credits, s.byok_pico::text AS byok
    FROM spend s
    JOIN unnest(${wanted.map((w) => w.owner)}::uuid[], ${wanted.map((w) => w.period)}::text[]) AS w(owner_id, period)
      ON s.owner_id = w.owner_id AND s.period = w.period`
  return new Map(rows.map((r) => [`${r.owner}/${r.period}`, { credits: BigInt(r.credits), byok: BigInt(r.byok) }]))
}

/**
 * The days of created_at the generations of these ids fall in, where every id says when its request
 * began (generationTimeOf): from an hour before the first (clocks of two processes) to two days after
 * the last (a request that runs long). A lookup reads only those days' partitions; an id that does not
 * say (one made before ids did) reads them all.
 */
export function generationDays(ids: string[], column = Prisma.raw('created_at')): Prisma.Sql {
  const times = ids.map(generationTimeOf)
  if (times.length === 0 || times.some((t) => !t)) return Prisma.empty
  const ms = times.map((t) => t!.getTime())
  const from = new Date(Math.min(...ms) - 3_600_000)
  const to = new Date(Math.max(...ms) + 2 * 86_400_000)
  return Prisma.sql`AND ${column} >= ${from} AND ${column} < ${to}`
}

/** A generation of `accountId` by id (undefined: none, or another account's). */
export async function generationById(db: Db, accountId: string, id: string) {
  const rows = await db.$queryRaw<GenerationRow[]>`
    SELECT * FROM generations WHERE id = ${id} AND account_id = ${accountId}::uuid ${generationDays([id])}`
  return rows[0]
}

/** The content kept for a generation's request (undefined: none kept). */
export async function generationContent(db: Db, accountId: string, requestId: string) {
  const rows = await db.$queryRaw<Pick<GenerationContentRecord, 'input' | 'output' | 'error'>[]>`
    SELECT input, output, error FROM generation_content
    WHERE request_id = ${requestId} AND account_id = ${accountId}::uuid`
  return rows[0]
}

/** Keeps feedback on a generation. */
export async function insertFeedback(
  db: Db,
  f: { generationId: string; keyId: string; category: string; comment: string | null },
): Promise<void> {
  await db.$executeRaw`
    INSERT INTO generation_feedback (id, generation_id, key_id, category, comment)
    VALUES (gen_random_uuid(), ${f.generationId}, ${f.keyId}::uuid, ${f.category}, ${f.comment})`
}

/**
 * A page of an account's generations, newest first, keyset-paged on (created_at, id): only one
 * key's when `keyId` is given, and only those matching the other filters; up to `limit + 1` rows
 * (one more says there are more).
 */
export function generationPage(
  db: Db,
  q: {
    accountId: string
    keyId?: string
    /** Only the calls of this member's keys. */
    userId?: string
    sessionId?: string
    model?: string
    from?: Date
    to?: Date
    after?: { createdAt: Date; id: string }
    /** Only the calls that failed (finish reason `error`). */
    failed?: boolean
    limit: number
  },
) {
  const and = (cond: boolean, sql: Prisma.Sql) => (cond ? sql : Prisma.empty)
  return db.$queryRaw<(GenerationRow & { key_number: bigint | null; key_name: string | null })[]>`
    SELECT g.*, k.number AS key_number, k.name AS key_name FROM generations g LEFT JOIN api_keys k ON k.id = g.key_id
    WHERE g.account_id = ${q.accountId}::uuid
      ${and(q.keyId !== undefined, Prisma.sql`AND g.key_id = ${q.keyId}::uuid`)}
      ${and(q.userId !== undefined, Prisma.sql`AND g.user_id = ${q.userId}::uuid`)}
      ${and(q.sessionId !== undefined, Prisma.sql`AND g.session_id = ${q.sessionId}`)}
      ${and(q.model !== undefined, Prisma.sql`AND g.model = ${q.model}`)}
      ${and(q.from !== undefined, Prisma.sql`AND g.created_at >= ${q.from}`)}
      ${and(q.to !== undefined, Prisma.sql`AND g.created_at < ${q.to}`)}
      ${and(!!q.failed, Prisma.sql`AND g.finish_reason = 'error'`)}
      ${and(q.after !== undefined, Prisma.sql`AND (g.created_at, g.id) < (${q.after?.createdAt}, ${q.after?.id})`)}
    ORDER BY g.created_at DESC, g.id DESC
    LIMIT ${q.limit + 1}`
}

/** Removes kept request bodies older than `before`, a batch at a time; how many went. */
export async function pruneGenerationContent(db: Db, before: Date, batch = 10_000): Promise<number> {
  let total = 0
  for (;;) {
    const gone = await db.$executeRaw`
      DELETE FROM generation_content WHERE request_id IN (
        SELECT request_id FROM generation_content WHERE created_at < ${before} LIMIT ${batch})`
    total += gone
    if (gone < batch) return total
  }
}
