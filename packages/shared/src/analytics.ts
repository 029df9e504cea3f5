import { z } from 'zod'
import type { Db } from './db.js'
import { AppError } from '@roster/protocol'
import { ownOnly, type Caller } from './caller.js'
import { assertManagementKey } from './managed-keys.js'
import {
  activityRows,
  analyticsRows,
  keyIdsOf,
  keyNumbers,
  type AnalyticsPlan,
  type RollupDimension,
  type RollupMetric,
} from './repositories/generation-rollups.js'
import { NIL } from './repositories/generations.js'
import { accountUsers, workspaceByRef } from './repositories/workspaces.js'
import { isUuid } from './interns/access.js'

// Analytics (`client.analytics`, governance-contract.md §9): where the money and the tokens went,
// for an account's management keys. Everything is read from the hourly rollups kept as generations
// are written, so a query costs the same on a log of ten million generations as on ten thousand.

const PICO = 1e12

/** How the client shows each metric a query may ask for (their sums: ROLLUP_METRICS). */
const METRICS = {
  request_count: { label: 'Requests', format: 'number', rate: false },
  prompt_tokens: { label: 'Prompt tokens', format: 'number', rate: false },
  completion_tokens: { label: 'Completion tokens', format: 'number', rate: false },
  reasoning_tokens: { label: 'Reasoning tokens', format: 'number', rate: false },
  cached_tokens: { label: 'Cached prompt tokens', format: 'number', rate: false },
  total_tokens: { label: 'Total tokens', format: 'number', rate: false },
  usage: { label: 'Spend (credits)', format: 'currency', rate: false },
  byok_usage: { label: 'Spend (own provider keys)', format: 'currency', rate: false },
  total_cost: { label: 'Total cost', format: 'currency', rate: false },
  avg_latency: { label: 'Average latency (ms)', format: 'latency', rate: true },
  avg_ttft: { label: 'Average time to first token (ms)', format: 'latency', rate: true },
  cancelled_count: { label: 'Cancelled requests', format: 'number', rate: false },
} as const satisfies Record<RollupMetric, { label: string; format: string; rate: boolean }>
type Metric = RollupMetric

/** How the client shows each dimension a query may group and filter by (their columns: ROLLUP_DIMENSIONS). */
const DIMENSIONS = {
  model: { label: 'Model' },
  provider: { label: 'Provider' },
  workspace: { label: 'Workspace' },
  api_key_id: { label: 'API key' },
  user: { label: 'Member' },
} as const satisfies Record<RollupDimension, { label: string }>
type Dimension = RollupDimension

const GRANULARITIES = { hour: 'Hour', day: 'Day', week: 'Week', month: 'Month' } as const
const OPERATORS = { eq: 'scalar', neq: 'scalar', in: 'array', not_in: 'array' } as const

const oneOf = <T extends string>(names: readonly T[], what: string) =>
  z.string().refine((s): s is T => (names as readonly string[]).includes(s), {
    message: `not a ${what} this Roster knows (it knows ${names.join(', ')})`,
  })
const metricNames = Object.keys(METRICS) as Metric[]
const dimensionNames = Object.keys(DIMENSIONS) as Dimension[]
const Value = z.union([z.string().max(200), z.number()])
const When = z.iso.datetime({ offset: true })

export const AnalyticsQueryBody = z.strictObject({
  metrics: z.array(oneOf(metricNames, 'metric')).min(1, 'name at least one metric').max(metricNames.length),
  dimensions: z.array(oneOf(dimensionNames, 'dimension')).max(dimensionNames.length).optional(),
  filters: z
    .array(
      z.strictObject({
        field: oneOf(dimensionNames, 'dimension to filter by'),
        operator: oneOf(Object.keys(OPERATORS), 'operator'),
        value: z.union([Value, z.array(Value).min(1).max(500)]),
        include_unset: z.boolean().optional(),
      }),
    )
    .max(20)
    .optional(),
  granularity: oneOf(Object.keys(GRANULARITIES) as (keyof typeof GRANULARITIES)[], 'granularity').optional(),
  /** Ours: the IANA time zone whose days, weeks and months the buckets follow (default UTC). */
  time_zone: z
    .string()
    .max(64)
    .refine(isTimeZone, { message: 'not an IANA time zone (such as Europe/Paris or UTC)' })
    .optional(),
  time_range: z.strictObject({ start: When, end: When }).optional(),
  order_by: z.strictObject({ field: z.string().max(64), direction: z.enum(['asc', 'desc']) }).optional(),
  limit: z.number().int().min(1).max(10_000).optional(),
  group_limit: z.number().int().min(1).max(1_000).optional(),
  classifier_dimensions: z.unknown().optional(),
  classifier_filters: z.unknown().optional(),
})
type Query = z.infer<typeof AnalyticsQueryBody>

export const ActivityQuery = z.object({
  api_key_hash: z.string().max(200).optional(),
  date: z.string().max(32).optional(),
  group_by: z.string().max(32).optional(),
  user_id: z.string().max(200).optional(),
  workspace_id: z.string().max(200).optional(),
})

/** How long a query may run before it answers 408. */
const QUERY_TIMEOUT_MS = 10_000
/** The widest time range one query may cover. */
const MAX_RANGE_MS = 400 * 86_400_000

/** An IANA zone name, as both Node's Intl and Postgres know them (its characters checked: it is written into SQL). */
function isTimeZone(name: string): boolean {
  if (!/^[A-Za-z][A-Za-z0-9_+\-/]{0,63}$/.test(name)) return false
  try {
    new Intl.DateTimeFormat('en', { timeZone: name })
    return true
  } catch {
    return false
  }
}

/**
 * Whose generations the caller may sum: its account's (a management key, an admin signed in as
 * themselves), or a member's own (a member signed in to the console as themselves).
 */
export function analyticsScope(caller: Caller): { accountId: string; userId?: string } {
  const userId = ownOnly(caller)
  if (userId) return { accountId: caller.accountId, userId }
  return { accountId: assertManagementKey(caller, 'create', 'reading analytics') }
}
const account = (caller: Caller) => analyticsScope(caller).accountId

/** `GET /analytics/meta`: what a query may name. */
export function analyticsMeta(caller: Caller) {
  account(caller)
  return {
    data: {
      dimensions: dimensionNames.map((name) => ({ name, display_label: DIMENSIONS[name].label })),
      granularities: Object.entries(GRANULARITIES).map(([name, display_label]) => ({ name, display_label })),
      metrics: metricNames.map((name) => ({
        name,
        display_label: METRICS[name].label,
        display_format: METRICS[name].format,
        is_rate: METRICS[name].rate,
      })),
      operators: Object.entries(OPERATORS).map(([name, value_type]) => ({ name, value_type })),
    },
  }
}

/**
 * A filter's values as the rollups hold them (ids): workspaces by id or slug, keys by number or
 * hash, members and models as given. Values that name nothing of the account are dropped, with a
 * warning ("filter resolution issues").
 */
async function resolved(db: Db, accountId: string, field: Dimension, values: (string | number)[], warnings: string[]) {
  const out: string[] = []
  if (field === 'workspace') {
    for (const v of values) {
      const w = await workspaceByRef(db, accountId, String(v))
      if (w) out.push(w.id)
      else warnings.push(`workspace ${JSON.stringify(String(v).slice(0, 80))} is not one of this account's`)
    }
  } else if (field === 'api_key_id') {
    const numbers = values.filter((v) => /^\d{1,18}$/.test(String(v))).map((v) => BigInt(v))
    const hashes = values.filter((v) => /^[0-9a-f]{64}$/i.test(String(v))).map((v) => Buffer.from(String(v), 'hex'))
    const keys = await keyIdsOf(db, accountId, { numbers, hashes })
    for (const v of values) {
      const k = keys.find(
        (k) => String(k.number) === String(v) || Buffer.from(k.hash).toString('hex') === String(v).toLowerCase(),
      )
      if (k) out.push(k.id)
      else warnings.push(`api_key_id ${JSON.stringify(String(v).slice(0, 80))} names no key of this account`)
    }
  } else if (field === 'user') {
    const ids = values.map(String).filter(isUuid)
    const known = await accountUsers(db, accountId, ids)
    for (const v of values) {
      if (known.has(String(v))) out.push(String(v))
      else warnings.push(`user ${JSON.stringify(String(v).slice(0, 80))} is not a member of this account`)
    }
  } else out.push(...values.map(String))
  return out
}

/** `POST /analytics/query`: metrics over the account's generations, grouped, filtered, ordered. */
export async function queryAnalytics(db: Db, caller: Caller, q: Query) {
  const { accountId, userId: ownOnly } = analyticsScope(caller)
  const started = performance.now()
  const now = Date.now()
  const end = q.time_range ? new Date(q.time_range.end) : new Date(now)
  const start = q.time_range ? new Date(q.time_range.start) : new Date(now - 30 * 86_400_000)
  if (!(start < end)) throw new AppError('invalid_body', 'time_range: start must be before end')
  if (end.getTime() - start.getTime() > MAX_RANGE_MS)
    throw new AppError('invalid_body', 'time_range: at most 400 days in one query')
  const dimensions = [...new Set(q.dimensions ?? [])] as Dimension[]
  const metrics = [...new Set(q.metrics)] as Metric[]
  const warnings: string[] = []

  // A member sums their own generations, whatever else the query filters on.
  const filters: AnalyticsPlan['filters'] = ownOnly
    ? [{ field: 'user', values: [ownOnly], negated: false, includeUnset: false }]
    : []
  for (const f of q.filters ?? []) {
    const scalar = OPERATORS[f.operator as keyof typeof OPERATORS] === 'scalar'
    if (scalar === Array.isArray(f.value))
      throw new AppError('invalid_body', `filters: ${f.operator} takes ${scalar ? 'one value' : 'an array of values'}`)
    filters.push({
      field: f.field,
      values: await resolved(db, accountId, f.field, Array.isArray(f.value) ? f.value : [f.value], warnings),
      negated: f.operator === 'neq' || f.operator === 'not_in',
      includeUnset: f.include_unset ?? false,
    })
  }

  const bucketed = q.granularity !== undefined
  const order = q.order_by
  const orderable = new Set<string>([...metrics, 'request_count', ...dimensions, ...(bucketed ? ['date'] : [])])
  if (order && !orderable.has(order.field))
    throw new AppError(
      'invalid_body',
      `order_by.field: order by a metric of the query, request_count, a dimension of the query${bucketed ? ', or date' : ''}`,
    )
  const orderField = (order?.field ?? (bucketed ? 'date' : metrics[0]!)) as AnalyticsPlan['order']['field']
  const limit = q.limit ?? 1000
  let rows: Record<string, unknown>[]
  try {
    rows = await analyticsRows(db, {
      accountId,
      start,
      end,
      bucket: q.granularity ? { granularity: q.granularity, zone: q.time_zone ?? 'UTC' } : undefined,
      dimensions,
      metrics,
      filters,
      order: { field: orderField, direction: order?.direction ?? (orderField === 'date' ? 'asc' : 'desc') },
      limit,
      top: q.group_limit,
      timeoutMs: QUERY_TIMEOUT_MS,
    })
  } catch (err) {
    if (String((err as Error).message).includes('statement timeout') || (err as { code?: string }).code === '57014')
      throw new AppError(
        'timeout',
        `the query ran past ${QUERY_TIMEOUT_MS / 1000} s: narrow its time range or dimensions`,
      )
    throw err
  }
  const truncated = rows.length > limit
  const page = truncated ? rows.slice(0, limit) : rows
  // Keys are named by their number, as the filters take them.
  const numbers = dimensions.includes('api_key_id')
    ? await keyNumbers(
        db,
        [...new Set(page.map((r) => String(r.api_key_id)))].filter((id) => id !== NIL),
      )
    : undefined
  const data = page.map((r) => {
    const row: Record<string, unknown> = {}
    if (bucketed) row.date = (r.date as Date).toISOString()
    for (const d of dimensions) {
      const v = String(r[d])
      row[d] = v === NIL || v === '' ? null : d === 'api_key_id' ? (numbers!.get(v) ?? null) : v
    }
    for (const m of metrics) row[m] = r[m] === null ? null : Number(r[m])
    return row
  })
  return {
    data: {
      data,
      metadata: { query_time_ms: Math.round(performance.now() - started), row_count: data.length, truncated },
      ...(warnings.length ? { warnings } : {}),
    },
  }
}

/** `GET /activity`: the last 30 completed UTC days, by date, model and provider (and workspace). */
export async function userActivity(db: Db, caller: Caller, q: z.infer<typeof ActivityQuery>) {
  const { accountId, userId: ownOnly } = analyticsScope(caller)
  if (ownOnly && q.user_id !== undefined && q.user_id !== ownOnly)
    throw new AppError('management_key_required', "another member's activity needs a management key")
  const today = new Date(new Date().toISOString().slice(0, 10) + 'T00:00:00Z')
  let from = new Date(today.getTime() - 30 * 86_400_000)
  let to = today
  if (q.date !== undefined) {
    const day = /^\d{4}-\d{2}-\d{2}$/.test(q.date) ? new Date(`${q.date}T00:00:00Z`) : undefined
    if (!day || Number.isNaN(day.getTime()) || day.toISOString().slice(0, 10) !== q.date || day < from || day >= to)
      throw new AppError('invalid_body', 'date must be one UTC day (YYYY-MM-DD) of the last 30 completed days')
    from = day
    to = new Date(day.getTime() + 86_400_000)
  }
  if (q.group_by !== undefined && q.group_by !== 'workspace')
    throw new AppError('invalid_body', 'group_by: only "workspace"')
  let workspaceId: string | undefined
  if (q.workspace_id !== undefined) {
    const w = await workspaceByRef(db, accountId, q.workspace_id)
    if (!w)
      throw new AppError('not_found', `no workspace ${JSON.stringify(q.workspace_id.slice(0, 80))} in this account`)
    workspaceId = w.id
  }
  let keyId: string | undefined
  if (q.api_key_hash !== undefined) {
    const hash = /^[0-9a-f]{64}$/i.test(q.api_key_hash) ? Buffer.from(q.api_key_hash, 'hex') : undefined
    const [k] = hash ? await keyIdsOf(db, accountId, { numbers: [], hashes: [hash] }) : []
    if (!k) throw new AppError('not_found', `no API key ${JSON.stringify(q.api_key_hash.slice(0, 80))} in this account`)
    keyId = k.id
  }
  if (q.user_id !== undefined && !(await accountUsers(db, accountId, isUuid(q.user_id) ? [q.user_id] : [])).size)
    throw new AppError('not_found', `no member ${JSON.stringify(q.user_id.slice(0, 80))} in this account`)
  const byWorkspace = q.group_by === 'workspace'
  const userId = ownOnly ?? q.user_id
  const rows = await activityRows(db, { accountId, from, to, workspaceId, keyId, userId, byWorkspace })
  return {
    data: rows.map((r) => ({
      date: r.date,
      model: r.model,
      model_permaslug: r.model,
      endpoint_id: `${r.provider}/${r.model}`,
      provider_name: r.provider,
      requests: Number(r.requests),
      prompt_tokens: Number(r.prompt_tokens),
      completion_tokens: Number(r.completion_tokens),
      reasoning_tokens: Number(r.reasoning_tokens),
      usage: Number(r.credits_pico) / PICO,
      byok_usage_inference: Number(r.byok_pico) / PICO,
      ...(byWorkspace ? { workspace_id: r.workspace_id } : {}),
    })),
  }
}
