import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OpenRouter } from '@openrouter/sdk'
import { BadRequestResponseError, ForbiddenResponseError, NotFoundResponseError } from '@openrouter/sdk/models/errors'
import { type GenerationRecord } from '@roster/shared'
import { insertGenerations } from '@roster/shared/repositories'
import { generationRecord, makeTenant, useTestTenant, type Tenant } from '@roster/testing'
import { buildTestApp } from './helpers.js'

// Analytics through the official client (governance-contract.md §9), over generations written the
// way the ledger writes them (insertGenerations, which keeps the hourly rollups analytics read):
// each answer is checked against sums computed straight from the generations table.
const env = useTestTenant()
let app: Awaited<ReturnType<typeof buildTestApp>>
let base: string
let t: Tenant
let lab: { id: string }
const keys: { id: string; hash: string; number: number }[] = []
const DAY = 86_400_000
const today = new Date(new Date().toISOString().slice(0, 10) + 'T00:00:00Z').getTime()

beforeAll(async () => {
  app = await buildTestApp(env.t.db)
  base = `${await app.listen({ port: 0, host: '127.0.0.1' })}/api/v1`
  t = await makeTenant(env.t.db)
  const admin = sdk(t.keys.management)
  lab = (await admin.workspaces.create({ createWorkspaceRequest: { name: 'Lab', slug: 'lab' } })).data
  await admin.workspaces.bulkAddMembers({ id: 'lab', bulkAddWorkspaceMembersRequest: { userIds: [t.userId] } })
  for (const [name, workspaceId] of [
    ['a', t.workspaceId],
    ['b', t.workspaceId],
    ['c', lab.id],
  ] as const) {
    const k = await admin.apiKeys.create({ requestBody: { name, creatorUserId: t.userId, workspaceId } })
    const row = await env.t.db.apiKey.findFirstOrThrow({ where: { hash: Buffer.from(k.data.hash, 'hex') } })
    keys.push({ id: row.id, hash: k.data.hash, number: Number(row.number) })
  }
  // 600 generations over the last 40 days (and today), three keys, three models, two providers,
  // some BYOK; written in batches, one of them twice (a retried batch counts once).
  const records: GenerationRecord[] = []
  for (let i = 0; i < 600; i++) {
    const key = keys[i % 3]!
    records.push(
      generationRecord({
        id: `an-${i}`,
        created_at: new Date(today - (i % 41) * DAY + ((i * 7919) % DAY)).toISOString(),
        key_id: key.id,
        workspace_id: i % 3 === 2 ? lab.id : t.workspaceId,
        account_id: t.accountId,
        user_id: t.userId,
        model: ['sim/a', 'sim/b', 'sim/c'][(i % 5) % 3]!,
        provider: i % 4 === 0 ? 'p2' : 'p1',
        tokens_prompt: 10 + (i % 13),
        tokens_completion: 5 + (i % 7),
        tokens_reasoning: i % 3,
        cost_pico: String(1_000_000 + i * 1000),
        is_byok: i % 10 === 0,
        latency_ms: 100 + (i % 50),
        ttft_ms: i % 2 ? 20 + (i % 10) : null,
      }),
    )
  }
  for (let i = 0; i < records.length; i += 100) await insertGenerations(env.t.db, records.slice(i, i + 100))
  await insertGenerations(env.t.db, records.slice(0, 100))
})
afterAll(async () => {
  await app?.closeAll()
})

const sdk = (key: string) => new OpenRouter({ apiKey: key, serverURL: base, retryConfig: { strategy: 'none' } })
const fails = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  )
const get = async (path: string, key = t.keys.management) => {
  const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${key}` } })
  return { status: res.status, body: (await res.json()) as any }
}
const query = async (body: object, key = t.keys.management) => {
  const res = await fetch(`${base}/analytics/query`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  return { status: res.status, body: (await res.json()) as any }
}
/** Sums straight from the generations table: the answer analytics must match. */
const sums = (where: string, group: string) =>
  env.t.db.$queryRawUnsafe<Record<string, unknown>[]>(`
    SELECT ${group} AS g, count(*)::int AS requests, sum(tokens_prompt)::int AS prompt,
           sum(CASE WHEN is_byok THEN 0 ELSE cost_pico END)::float8 / 1e12 AS usage,
           sum(CASE WHEN is_byok THEN cost_pico ELSE 0 END)::float8 / 1e12 AS byok
    FROM generations WHERE account_id = '${t.accountId}' AND ${where} GROUP BY 1 ORDER BY 1`)

describe('analytics', () => {
  it('answers the last 30 completed UTC days by date, model and provider, and per workspace', async () => {
    const activity = await sdk(t.keys.management).analytics.getUserActivity()
    const from = new Date(today - 30 * DAY).toISOString()
    const expected = await sums(
      `created_at >= '${from}' AND created_at < '${new Date(today).toISOString()}'`,
      `to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') || ' ' || model || ' ' || provider`,
    )
    const got = activity.data
      .map((a) => ({
        g: `${a.date} ${a.model} ${a.providerName}`,
        requests: a.requests,
        prompt: a.promptTokens,
        usage: a.usage,
        byok: a.byokUsageInference,
      }))
      .sort((x, y) => (x.g < y.g ? -1 : 1))
    expect(got.map((r) => [r.g, r.requests, r.prompt])).toEqual(expected.map((r) => [r.g, r.requests, r.prompt]))
    got.forEach((r, i) => {
      expect(r.usage).toBeCloseTo(expected[i]!.usage as number, 12)
      expect(r.byok).toBeCloseTo(expected[i]!.byok as number, 12)
    })
    // Today and day 31 are not in it.
    expect(got.every((r) => r.g.slice(0, 10) < new Date(today).toISOString().slice(0, 10))).toBe(true)
    expect(got.every((r) => r.g.slice(0, 10) >= from.slice(0, 10))).toBe(true)

    const byWorkspace = await get('/activity?group_by=workspace')
    expect(new Set(byWorkspace.body.data.map((r: { workspace_id: string }) => r.workspace_id))).toEqual(
      new Set([t.workspaceId, lab.id]),
    )
    const day = new Date(today - 3 * DAY).toISOString().slice(0, 10)
    const oneDay = await get(`/activity?date=${day}&api_key_hash=${keys[0]!.hash}`)
    expect(oneDay.status).toBe(200)
    const dayExpected = await sums(
      `key_id = '${keys[0]!.id}' AND to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') = '${day}'`,
      `'x'`,
    )
    expect(oneDay.body.data.reduce((n: number, r: { requests: number }) => n + r.requests, 0)).toBe(
      dayExpected[0]?.requests ?? 0,
    )
    expect(oneDay.body.data.every((r: { date: string }) => r.date === day)).toBe(true)
    expect((await get(`/activity?workspace_id=lab`)).body.data.length).toBeGreaterThan(0)

    // Refusals the client maps.
    const admin = sdk(t.keys.management)
    expect(await fails(admin.analytics.getUserActivity({ date: '2001-01-01' }))).toBeInstanceOf(BadRequestResponseError)
    expect(await fails(admin.analytics.getUserActivity({ apiKeyHash: '0'.repeat(64) }))).toBeInstanceOf(
      NotFoundResponseError,
    )
    expect(await fails(admin.analytics.getUserActivity({ workspaceId: 'nowhere' }))).toBeInstanceOf(
      NotFoundResponseError,
    )
    expect(await fails(sdk(t.keys.user).analytics.getUserActivity())).toBeInstanceOf(ForbiddenResponseError)
    const stranger = await makeTenant(env.t.db)
    expect((await sdk(stranger.keys.management).analytics.getUserActivity()).data).toEqual([])
  })

  it('describes what a query may name', async () => {
    const meta = await sdk(t.keys.management).analytics.getAnalyticsMeta()
    expect(meta.data.metrics.map((m) => m.name)).toContain('request_count')
    expect(meta.data.metrics.find((m) => m.name === 'avg_latency')).toMatchObject({
      isRate: true,
      displayFormat: 'latency',
    })
    expect(meta.data.dimensions.map((d) => d.name)).toEqual(['model', 'provider', 'workspace', 'api_key_id', 'user'])
    expect(meta.data.granularities.map((g) => g.name)).toEqual(['hour', 'day', 'week', 'month'])
    expect(meta.data.operators).toContainEqual({ name: 'in', valueType: 'array' })
  })

  it('sums metrics by dimension and granularity, filtered, ordered and limited, matching the generations', async () => {
    const start = new Date(today - 45 * DAY).toISOString()
    const end = new Date(today + DAY).toISOString()
    // Through the client: accepted (its row schema shows rows as {}).
    const viaClient = await sdk(t.keys.management).analytics.queryAnalytics({
      requestBody: { metrics: ['request_count'], timeRange: { start: new Date(start), end: new Date(end) } } as never,
    })
    expect(viaClient.data.metadata.rowCount).toBe(1)

    const byModel = await query({
      metrics: ['request_count', 'prompt_tokens', 'usage', 'byok_usage'],
      dimensions: ['model'],
      time_range: { start, end },
      order_by: { field: 'model', direction: 'asc' },
    })
    expect(byModel.status).toBe(200)
    const expected = await sums('true', 'model')
    expect(byModel.body.data.data.map((r: any) => [r.model, r.request_count, r.prompt_tokens])).toEqual(
      expected.map((r) => [r.g, r.requests, r.prompt]),
    )
    byModel.body.data.data.forEach((r: any, i: number) => expect(r.usage).toBeCloseTo(expected[i]!.usage as number, 12))
    expect(byModel.body.data.metadata).toMatchObject({ row_count: 3, truncated: false })

    // A range that cuts days: its whole days from the daily rollups, its edges from the hourly ones.
    const cutStart = new Date(today - 10 * DAY + 3 * 3_600_000 + 1_234).toISOString()
    const cutEnd = new Date(today - 2 * DAY + 5 * 3_600_000 + 60_000).toISOString()
    // Every hour the range touches counts (rollups are hourly).
    const hourOf = (iso: string, up = false) =>
      new Date((up ? Math.ceil : Math.floor)(Date.parse(iso) / 3_600_000) * 3_600_000).toISOString()
    const inRange = await sums(`created_at >= '${hourOf(cutStart)}' AND created_at < '${hourOf(cutEnd, true)}'`, `'x'`)
    for (const granularity of [undefined, 'hour', 'day']) {
      const cut = await query({
        metrics: ['request_count', 'usage'],
        ...(granularity ? { granularity } : {}),
        time_range: { start: cutStart, end: cutEnd },
      })
      const total = cut.body.data.data.reduce((n: number, r: any) => n + r.request_count, 0)
      expect(total, String(granularity)).toBe(inRange[0]!.requests)
    }

    // By day for one key (by its number), in another workspace (by slug), with a key filtered by hash.
    const perDay = await query({
      metrics: ['request_count'],
      granularity: 'day',
      filters: [
        { field: 'api_key_id', operator: 'eq', value: keys[2]!.number },
        { field: 'workspace', operator: 'in', value: ['lab'] },
      ],
      time_range: { start, end },
    })
    const perDayExpected = await sums(`key_id = '${keys[2]!.id}'`, `date_trunc('day', created_at AT TIME ZONE 'UTC')`)
    expect(perDay.body.data.data.map((r: any) => [r.date.slice(0, 10), r.request_count])).toEqual(
      perDayExpected.map((r) => [(r.g as Date).toISOString().slice(0, 10), r.requests]),
    )
    const byHash = await query({
      metrics: ['request_count'],
      dimensions: ['api_key_id', 'provider'],
      filters: [{ field: 'api_key_id', operator: 'not_in', value: [keys[0]!.hash] }],
      order_by: { field: 'request_count', direction: 'desc' },
      time_range: { start, end },
    })
    expect(new Set(byHash.body.data.data.map((r: any) => r.api_key_id))).toEqual(
      new Set([keys[1]!.number, keys[2]!.number]),
    )

    // Limits: rows past the limit are cut and said so; group_limit keeps the top groups.
    const limited = await query({
      metrics: ['request_count'],
      granularity: 'day',
      limit: 5,
      time_range: { start, end },
    })
    expect(limited.body.data.metadata).toMatchObject({ row_count: 5, truncated: true })
    const top = await query({
      metrics: ['usage'],
      dimensions: ['model'],
      granularity: 'week',
      group_limit: 1,
      time_range: { start, end },
    })
    const best = [...expected].sort((a, b) => (b.usage as number) - (a.usage as number))[0]!.g
    expect(new Set(top.body.data.data.map((r: any) => r.model))).toEqual(new Set([best]))

    // A filter naming nothing of the account: a warning, and nothing matched.
    const unknown = await query({
      metrics: ['request_count'],
      filters: [{ field: 'workspace', operator: 'eq', value: 'nowhere' }],
      time_range: { start, end },
    })
    expect(unknown.body.data.warnings[0]).toMatch(/nowhere/)
    expect(unknown.body.data.data[0].request_count).toBeNull()
  })

  it('buckets days in a chosen time zone: each bucket starts at that zone’s midnight and holds that day’s calls', async () => {
    for (const zone of ['America/New_York', 'Asia/Tokyo', 'UTC']) {
      const res = await query({
        metrics: ['request_count', 'usage'],
        granularity: 'day',
        time_zone: zone,
        time_range: { start: new Date(today - 45 * DAY).toISOString(), end: new Date(today + 2 * DAY).toISOString() },
      })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      const expected = await env.t.db.$queryRawUnsafe<{ day: Date; requests: number }[]>(`
        SELECT (date_trunc('day', created_at AT TIME ZONE '${zone}') AT TIME ZONE '${zone}') AS day, count(*)::int AS requests
        FROM generations WHERE account_id = '${t.accountId}' GROUP BY 1 ORDER BY 1`)
      expect(
        res.body.data.data.map((r: { date: string; request_count: number }) => [r.date, r.request_count]),
        zone,
      ).toEqual(expected.map((r) => [r.day.toISOString(), r.requests]))
      // Every bucket starts at a midnight of the zone.
      for (const r of res.body.data.data as { date: string }[]) {
        const local = new Intl.DateTimeFormat('en-GB', {
          timeZone: zone,
          hour: '2-digit',
          minute: '2-digit',
          hourCycle: 'h23',
        })
        expect(local.format(new Date(r.date))).toBe('00:00')
      }
    }
  })

  it('refuses bad queries (400) and other keys (403)', async () => {
    for (const body of [
      {},
      { metrics: [] },
      { metrics: ['money'] },
      { metrics: ['request_count'], dimensions: ['colour'] },
      { metrics: ['request_count'], granularity: 'minute' },
      { metrics: ['request_count'], order_by: { field: 'date', direction: 'asc' } },
      { metrics: ['request_count'], order_by: { field: 'usage', direction: 'asc' } },
      { metrics: ['request_count'], filters: [{ field: 'model', operator: 'in', value: 'sim/a' }] },
      { metrics: ['request_count'], filters: [{ field: 'model', operator: 'like', value: 'sim' }] },
      { metrics: ['request_count'], time_range: { start: '2026-01-02T00:00:00Z', end: '2026-01-01T00:00:00Z' } },
      { metrics: ['request_count'], time_range: { start: '2020-01-01T00:00:00Z', end: '2026-01-01T00:00:00Z' } },
      { metrics: ['request_count'], limit: 0 },
      { metrics: ['request_count'], sql: 'DROP TABLE generations' },
      { metrics: ['request_count'], granularity: 'day', time_zone: 'Mars/Olympus_Mons' },
      { metrics: ['request_count'], granularity: 'day', time_zone: "UTC'; DROP TABLE generations; --" },
    ]) {
      const res = await query(body)
      expect(res.status, JSON.stringify(body)).toBe(400)
      expect(res.body.error.code).toBe(400)
    }
    expect(
      await fails(sdk(t.keys.user).analytics.queryAnalytics({ requestBody: { metrics: ['request_count'] } as never })),
    ).toBeInstanceOf(ForbiddenResponseError)
    expect((await get('/analytics/meta', t.keys.user)).status).toBe(403)
  })
})
