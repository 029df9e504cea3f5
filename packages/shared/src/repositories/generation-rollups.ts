import { Prisma, type Db } from '../db.js'
import { NIL } from './generations.js'

/** Pico-dollars in a dollar. */
const PICO = 1e12

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

/** Each metric an analytics query may ask for, as its sum over the rollups (`r`). */
export const ROLLUP_METRICS = {
  request_count: 'sum(r.requests)',
  prompt_tokens: 'sum(r.tokens_prompt)',
  completion_tokens: 'sum(r.tokens_completion)',
  reasoning_tokens: 'sum(r.tokens_reasoning)',
  cached_tokens: 'sum(r.tokens_cached)',
  total_tokens: 'sum(r.tokens_prompt + r.tokens_completion)',
  usage: `sum(r.credits_pico) / ${PICO}`,
  byok_usage: `sum(r.byok_pico) / ${PICO}`,
  total_cost: `sum(r.credits_pico + r.byok_pico) / ${PICO}`,
  avg_latency: 'sum(r.latency_ms)::float8 / nullif(sum(r.requests), 0)',
  avg_ttft: 'sum(r.ttft_ms)::float8 / nullif(sum(r.ttft_count), 0)',
  cancelled_count: 'sum(r.cancelled)',
} as const
export type RollupMetric = keyof typeof ROLLUP_METRICS

/** Each dimension a query may group and filter by: its rollup column, and whether it holds ids (uuids). */
export const ROLLUP_DIMENSIONS = {
  model: { column: 'r.model', id: false },
  provider: { column: 'r.provider', id: false },
  workspace: { column: 'r.workspace_id', id: true },
  api_key_id: { column: 'r.key_id', id: true },
  user: { column: 'r.user_id', id: true },
} as const
export type RollupDimension = keyof typeof ROLLUP_DIMENSIONS

/** One analytics query, as names and values (its SQL is made here, from the tables above alone). */
export interface AnalyticsPlan {
  accountId: string
  start: Date
  end: Date
  /** Buckets of the zone's hours, days, weeks or months, named by the instant each starts (an IANA zone, already checked). */
  bucket?: { granularity: 'hour' | 'day' | 'week' | 'month'; zone: string }
  dimensions: RollupDimension[]
  metrics: RollupMetric[]
  /** Rows whose dimension is (or, negated, is not) one of `values`; `includeUnset` also takes rows without it. */
  filters: { field: RollupDimension; values: string[]; negated: boolean; includeUnset: boolean }[]
  order: { field: 'date' | RollupDimension | RollupMetric; direction: 'asc' | 'desc' }
  limit: number
  /** Only the `top` groups of the dimensions with the most of the first metric. */
  top?: number
  timeoutMs: number
}

const UTC_ZONES = new Set(['UTC', 'Etc/UTC'])

/**
 * One analytics query: the rollups of the range grouped by the bucket and the dimensions, summed
 * as the metrics, filtered, ordered; `top` keeps only the groups of the dimensions with the most of
 * the first metric, ranked over the grouped rows (one pass over the rollups). Runs under a
 * statement timeout; more than `limit` rows means truncated.
 */
export async function analyticsRows(db: Db, q: AnalyticsPlan): Promise<Record<string, unknown>[]> {
  const column = (d: RollupDimension) => Prisma.raw(ROLLUP_DIMENSIONS[d].column)
  const metric = (m: RollupMetric) => Prisma.raw(`(${ROLLUP_METRICS[m]})`)
  // Buckets start at the zone's midnights (weeks on its Mondays), each named by that instant. The
  // rollups are hourly: a zone whose offset is not whole hours puts each hour in the bucket its start
  // falls in. The daily rollups are UTC days, so another zone's days are summed from the hours.
  const { bucket: b } = q
  const bucket = b
    ? Prisma.raw(`(date_trunc('${b.granularity}', r.hour AT TIME ZONE '${b.zone}') AT TIME ZONE '${b.zone}')`)
    : undefined
  const hourly = b !== undefined && (b.granularity === 'hour' || !UTC_ZONES.has(b.zone))
  const from = rollupsIn(q.accountId, q.start, q.end, hourly)
  const conditions = q.filters.map((f) => {
    const col = column(f.field)
    const id = ROLLUP_DIMENSIONS[f.field].id
    // Ids compared as uuids, so a key's or a workspace's rows are read through their index.
    const match = f.values.length
      ? Prisma.sql`${col} ${Prisma.raw(f.negated ? '<>' : '=')} ${Prisma.raw(f.negated ? 'ALL' : 'ANY')}(${f.values}::${Prisma.raw(id ? 'uuid[]' : 'text[]')})`
      : Prisma.raw(f.negated ? 'true' : 'false')
    const unset = id ? Prisma.sql`${col} = ${NIL}::uuid` : Prisma.sql`${col} = ''`
    return f.includeUnset ? Prisma.sql`(${match} OR ${unset})` : match
  })
  const where = conditions.length ? Prisma.sql`WHERE ${Prisma.join(conditions, ' AND ')}` : Prisma.empty
  const groups = [...(bucket ? [bucket] : []), ...q.dimensions.map(column)]
  const select = Prisma.join(
    [
      ...(bucket ? [Prisma.sql`${bucket} AS date`] : []),
      ...q.dimensions.map((d) => Prisma.raw(`${ROLLUP_DIMENSIONS[d].column}::text AS "${d}"`)),
      ...q.metrics.map((m) => Prisma.raw(`(${ROLLUP_METRICS[m]})::float8 AS "${m}"`)),
    ],
    ', ',
  )
  const { field } = q.order
  const order =
    field === 'date'
      ? bucket!
      : field in ROLLUP_DIMENSIONS
        ? column(field as RollupDimension)
        : metric(field as RollupMetric)
  const columns = [...(bucket ? ['date'] : []), ...q.dimensions, ...q.metrics]
  const quoted = (names: string[]) => Prisma.raw(names.map((n) => `"${n}"`).join(', '))
  const ranked = q.top && q.dimensions.length
  const top = ranked
    ? Prisma.sql`WHERE (${quoted(q.dimensions)}) IN (
        SELECT ${quoted(q.dimensions)} FROM g GROUP BY ${quoted(q.dimensions)}
        ORDER BY sum(g.__rank) DESC NULLS LAST LIMIT ${q.top})`
    : Prisma.empty
  const direction = Prisma.raw(q.order.direction === 'asc' ? 'ASC' : 'DESC')
  return db.$transaction(
    async (tx) => {
      await tx.$executeRawUnsafe(`SET LOCAL statement_timeout = ${Math.max(1, Math.floor(q.timeoutMs))}`)
      return tx.$queryRaw<Record<string, unknown>[]>`
        WITH g AS (
          SELECT ${select}, ${order} AS __order, ${ranked ? metric(q.metrics[0]!) : Prisma.raw('NULL')} AS __rank
          FROM ${from} r ${where}
          ${groups.length ? Prisma.sql`GROUP BY ${Prisma.join(groups)}` : Prisma.empty})
        SELECT ${quoted(columns)} FROM g ${top}
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
  return new Map([...(await keyNames(db, ids))].map(([id, k]) => [id, k.number]))
}

/** The numbers and names of keys by id. */
export async function keyNames(db: Db, ids: string[]) {
  const rows = await db.$queryRaw<{ id: string; number: bigint; name: string }[]>`
    SELECT id, number, name FROM api_keys WHERE id = ANY(${ids}::uuid[])`
  return new Map(rows.map((r) => [r.id, { number: Number(r.number), name: r.name }]))
}
