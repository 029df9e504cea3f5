import { Prisma, type Db } from '../db.js'

// Analytics' reads of the generation_rollups table (insertGenerations in generations.ts writes it,
// in the statement that writes the generations). A query never scans the generations themselves.

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

/** An account's activity per UTC day, model and provider (and workspace), from `from` (inclusive) to `to` (exclusive). */
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
    SELECT to_char(date_trunc('day', r.hour AT TIME ZONE 'UTC'), 'YYYY-MM-DD') AS date, r.model, r.provider,
           ${ws} AS workspace_id, sum(r.requests)::bigint AS requests, sum(r.tokens_prompt)::bigint AS prompt_tokens,
           sum(r.tokens_completion)::bigint AS completion_tokens, sum(r.tokens_reasoning)::bigint AS reasoning_tokens,
           sum(r.credits_pico)::text AS credits_pico, sum(r.byok_pico)::text AS byok_pico
    FROM generation_rollups r
    WHERE r.account_id = ${f.accountId}::uuid AND r.hour >= ${f.from} AND r.hour < ${f.to}
      ${f.workspaceId ? Prisma.sql`AND r.workspace_id = ${f.workspaceId}::uuid` : Prisma.empty}
      ${f.keyId ? Prisma.sql`AND r.key_id = ${f.keyId}::uuid` : Prisma.empty}
      ${f.userId ? Prisma.sql`AND r.user_id = ${f.userId}::uuid` : Prisma.empty}
    GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`
}

/**
 * One analytics query, its parts built by the caller from whitelisted column expressions (never
 * from what a request said): grouped by `groups`, summed as `metrics`, over the account's rollups in
 * the time range, filtered by `where`; `top` keeps only the groups with the most of the first metric.
 * Runs under a statement timeout; more than `limit` rows means truncated.
 */
export async function analyticsRows(
  db: Db,
  q: {
    accountId: string
    start: Date
    end: Date
    select: Prisma.Sql
    groups: Prisma.Sql[]
    where: Prisma.Sql[]
    orderBy: Prisma.Sql
    limit: number
    top?: { count: number; groups: Prisma.Sql[]; measure: Prisma.Sql }
    timeoutMs: number
  },
): Promise<Record<string, unknown>[]> {
  const base = Prisma.sql`r.account_id = ${q.accountId}::uuid AND r.hour >= ${q.start} AND r.hour < ${q.end}
    ${q.where.length ? Prisma.sql`AND ${Prisma.join(q.where, ' AND ')}` : Prisma.empty}`
  const top = q.top
    ? Prisma.sql`AND (${Prisma.join(q.top.groups)}) IN (
        SELECT ${Prisma.join(q.top.groups)} FROM generation_rollups r WHERE ${base}
        GROUP BY ${Prisma.join(q.top.groups)} ORDER BY ${q.top.measure} DESC NULLS LAST LIMIT ${q.top.count})`
    : Prisma.empty
  return db.$transaction(async (tx) => {
    await tx.$executeRawUnsafe(`SET LOCAL statement_timeout = ${Math.max(1, Math.floor(q.timeoutMs))}`)
    return tx.$queryRaw<Record<string, unknown>[]>`
      SELECT ${q.select} FROM generation_rollups r
      WHERE ${base} ${top}
      ${q.groups.length ? Prisma.sql`GROUP BY ${Prisma.join(q.groups)}` : Prisma.empty}
      ORDER BY ${q.orderBy} LIMIT ${q.limit + 1}`
  })
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
