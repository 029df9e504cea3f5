import { Prisma, type Db } from '../db.js'

// Analytics' reads of the generation_rollups and generation_rollups_daily tables (insertGenerations
// in generations.ts writes both, in the statement that writes the generations). A query never scans
// the generations themselves; whole UTC days are read from the daily rollups (a day is one row per
// who and model there, 24 in the hourly ones), the hours at a range's edges from the hourly ones.

export interface ActivityRow {
  date: string
  model: string
  provider: string
  workspace_id: string | null
  requests: bigint
  prompt_tokens: bigint
  completion_tokens: bigint
  reasoning_tokens: bigint
  credits_pico: string
  byok_pico: string
}

/** An account's activity per UTC day, model and provider (and workspace), from `from` (inclusive) to `to` (exclusive): whole days. */
export function activityRows(
  db: Db,
  f: {
    accountId: string
    from: Date
    to: Date
    workspaceId?: string
    keyId?: string
    userId?: string
    byWorkspace: boolean
  },
) {
  const ws = f.byWorkspace ? Prisma.sql`r.workspace_id::text` : Prisma.sql`NULL::text`
  return db.$queryRaw<ActivityRow[]>`
    SELECT to_char(r.day AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS date, r.model, r.provider,
           ${ws} AS workspace_id, sum(r.requests)::bigint AS requests, sum(r.tokens_prompt)::bigint AS prompt_tokens,
           sum(r.tokens_completion)::bigint AS completion_tokens, sum(r.tokens_reasoning)::bigint AS reasoning_tokens,
           sum(r.credits_pico)::text AS credits_pico, sum(r.byok_pico)::text AS byok_pico
    FROM generation_rollups_daily r
    WHERE r.account_id = ${f.accountId}::uuid AND r.day >= ${f.from} AND r.day < ${f.to}
      ${f.workspaceId ? Prisma.sql`AND r.workspace_id = ${f.workspaceId}::uuid` : Prisma.empty}
      ${f.keyId ? Prisma.sql`AND r.key_id = ${f.keyId}::uuid` : Prisma.empty}
      ${f.userId ? Prisma.sql`AND r.user_id = ${f.userId}::uuid` : Prisma.empty}
    GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`
}

/**
 * One analytics query, its parts built by the caller from whitelisted column expressions (never
 * from what a request said): the rollups of the range grouped by `groups` and summed as `select`
 * (its output `columns`), filtered by `where`, ordered by `order`; `top` keeps only the groups of
 * `dimensions` with the most of `measure`, ranked over the grouped rows (one pass over the rollups).
 * Runs under a statement timeout; more than `limit` rows means truncated.
 */
export async function analyticsRows(
  db: Db,
  q: {
    accountId: string
    start: Date
    end: Date
    /** Hour buckets asked for: the hourly rollups alone. */
    hourly: boolean
    select: Prisma.Sql
    columns: string[]
    groups: Prisma.Sql[]
    where: Prisma.Sql[]
    order: { expr: Prisma.Sql; direction: 'asc' | 'desc' }
    limit: number
    top?: { count: number; dimensions: string[]; measure: Prisma.Sql }
    timeoutMs: number
  },
): Promise<Record<string, unknown>[]> {
  const from = rollupsIn(q.accountId, q.start, q.end, q.hourly)
  const where = q.where.length ? Prisma.sql`WHERE ${Prisma.join(q.where, ' AND ')}` : Prisma.empty
  const quoted = (names: string[]) => Prisma.raw(names.map((n) => `"${n}"`).join(', '))
  const top = q.top
    ? Prisma.sql`WHERE (${quoted(q.top.dimensions)}) IN (
        SELECT ${quoted(q.top.dimensions)} FROM g GROUP BY ${quoted(q.top.dimensions)}
        ORDER BY sum(g.__rank) DESC NULLS LAST LIMIT ${q.top.count})`
    : Prisma.empty
  const direction = Prisma.raw(q.order.direction === 'asc' ? 'ASC' : 'DESC')
  return db.$transaction(
    async (tx) => {
      await tx.$executeRawUnsafe(`SET LOCAL statement_timeout = ${Math.max(1, Math.floor(q.timeoutMs))}`)
      return tx.$queryRaw<Record<string, unknown>[]>`
        WITH g AS (
          SELECT ${q.select}, ${q.order.expr} AS __order, ${q.top?.measure ?? Prisma.raw('NULL')} AS __rank
          FROM ${from} r ${where}
          ${q.groups.length ? Prisma.sql`GROUP BY ${Prisma.join(q.groups)}` : Prisma.empty})
        SELECT ${quoted(q.columns)} FROM g ${top}
        ORDER BY g.__order ${direction} NULLS LAST LIMIT ${q.limit + 1}`
    },
    // The statement timeout bounds the query; the transaction waits for it.
    { timeout: q.timeoutMs + 5_000 },
  )
}

const SUMS = Prisma.raw(`account_id, workspace_id, key_id, user_id, model, provider, requests, tokens_prompt,
  tokens_completion, tokens_reasoning, tokens_cached, credits_pico, byok_pico, latency_ms, ttft_ms, ttft_count, cancelled`)

const DAY_MS = 86_400_000

/**
 * An account's rollups over the hours [from, end) touches, as one relation with an `hour` column: the whole UTC days
 * inside from the daily rollups (their `hour` is the day's midnight), the hours at the edges from
 * the hourly ones; the hourly ones alone when hours are asked for.
 */
function rollupsIn(accountId: string, from: Date, end: Date, hourly: boolean): Prisma.Sql {
  // Every hour the range touches: one that starts at 10:20 counts the whole 10:00 hour.
  const start = new Date(Math.floor(from.getTime() / 3_600_000) * 3_600_000)
  const hours = (a: Date, b: Date) => Prisma.sql`
    SELECT ${SUMS}, hour FROM generation_rollups
    WHERE account_id = ${accountId}::uuid AND hour >= ${a} AND hour < ${b}`
  const firstDay = new Date(Math.ceil(start.getTime() / DAY_MS) * DAY_MS)
  const lastDay = new Date(Math.floor(end.getTime() / DAY_MS) * DAY_MS)
  if (hourly || firstDay >= lastDay) return Prisma.sql`(${hours(start, end)})`
  const parts = [
    Prisma.sql`SELECT ${SUMS}, day AS hour FROM generation_rollups_daily
      WHERE account_id = ${accountId}::uuid AND day >= ${firstDay} AND day < ${lastDay}`,
  ]
  if (start < firstDay) parts.push(hours(start, firstDay))
  if (lastDay < end) parts.push(hours(lastDay, end))
  return Prisma.sql`(${Prisma.join(parts, ' UNION ALL ')})`
}

/** Of `refs` (keys' numbers or hashes), the account's keys' ids; and each key's number by id. */
export async function keyIdsOf(db: Db, accountId: string, refs: { numbers: bigint[]; hashes: Buffer[] }) {
  return db.$queryRaw<{ id: string; number: bigint; hash: Uint8Array }[]>`
    SELECT k.id, k.number, k.hash FROM api_keys k JOIN workspaces w ON w.id = k.workspace_id
    WHERE w.account_id = ${accountId}::uuid
      AND (k.number = ANY(${refs.numbers}::bigint[]) OR k.hash = ANY(${refs.hashes}::bytea[]))`
}

/** The numbers of keys by id (analytics name keys by their number). */
export async function keyNumbers(db: Db, ids: string[]) {
  const rows = await db.$queryRaw<{ id: string; number: bigint }[]>`
    SELECT id, number FROM api_keys WHERE id = ANY(${ids}::uuid[])`
  return new Map(rows.map((r) => [r.id, Number(r.number)]))
}
