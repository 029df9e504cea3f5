// Analytics (`npm run bench -- analytics`): GET /activity and POST /analytics/query over an account
// with BENCH_ANALYTICS_GENERATIONS (10 million) generations in its last 30 days: 199 keys in 10
// workspaces, 100 members, 23 models on 4 providers. The generations are written straight into
// Postgres (generate_series: far faster than the drain) and rolled up by the statements the
// migration backfills with (the drain keeps the same rollups as it writes); every query is then
// timed through the API, one at a time, and its p50 / p95 printed.
import pg from 'pg'

const DAY = 86_400_000

export async function benchAnalytics({ managementKey, db, base }) {
  const n = Number(process.env.BENCH_ANALYTICS_GENERATIONS ?? 10_000_000)
  const runs = Number(process.env.BENCH_ANALYTICS_RUNS ?? 20)
  const client = new pg.Client({ connectionString: db })
  await client.connect()
  const me = await (await fetch(`${base}/key`, { headers: { authorization: `Bearer ${managementKey}` } })).json()
  const accountId = me.data.organization_id
  const workspaceId = me.data.workspace_id
  const { filled, rolled } = await seedGenerations(client, { accountId, workspaceId, n })
  const rollups = Number((await client.query('SELECT count(*) FROM generation_rollups')).rows[0].count)
  const daily = Number((await client.query('SELECT count(*) FROM generation_rollups_daily')).rows[0].count)
  const aKey = (await client.query(`SELECT number FROM api_keys WHERE name = 'bench 7'`)).rows[0].number
  const now = new Date().toISOString()
  const monthAgo = new Date(Date.now() - 30 * DAY).toISOString()
  const weekAgo = new Date(Date.now() - 7 * DAY).toISOString()
  const queries = {
    'activity (30 days by date, model, provider)': { path: '/activity' },
    'activity per workspace': { path: '/activity?group_by=workspace' },
    'request_count + usage by model, 30 days': {
      body: { metrics: ['request_count', 'usage'], dimensions: ['model'], time_range: { start: monthAgo, end: now } },
    },
    'usage by day and workspace, 30 days': {
      body: {
        metrics: ['usage', 'total_tokens'],
        dimensions: ['workspace'],
        granularity: 'day',
        time_range: { start: monthAgo, end: now },
      },
    },
    'one key by hour, 7 days': {
      body: {
        metrics: ['request_count', 'avg_latency'],
        granularity: 'hour',
        filters: [{ field: 'api_key_id', operator: 'eq', value: Number(aKey) }],
        time_range: { start: weekAgo, end: now },
      },
    },
    'top 10 keys by cost, by week, 30 days': {
      body: {
        metrics: ['total_cost'],
        dimensions: ['api_key_id'],
        granularity: 'week',
        group_limit: 10,
        time_range: { start: monthAgo, end: now },
      },
    },
  }
  const rows = [
    {
      scenario: `analytics: ${n.toLocaleString('en-US')} generations written (s), rolled up (s)`,
      metric: 'hourly / daily rollup rows',
      value: `${(filled / 1000).toFixed(0)} s, ${(rolled / 1000).toFixed(0)} s; ${rollups.toLocaleString('en-US')} / ${daily.toLocaleString('en-US')}`,
      target: '',
    },
  ]
  for (const [name, q] of Object.entries(queries)) {
    const times = []
    for (let i = 0; i < runs; i++) {
      const t = performance.now()
      const res = q.body
        ? await fetch(`${base}/analytics/query`, {
            method: 'POST',
            headers: { authorization: `Bearer ${managementKey}`, 'content-type': 'application/json' },
            body: JSON.stringify(q.body),
          })
        : await fetch(`${base}${q.path}`, { headers: { authorization: `Bearer ${managementKey}` } })
      const body = await res.text()
      if (res.status !== 200) throw new Error(`${name}: ${res.status} ${body.slice(0, 300)}`)
      times.push(performance.now() - t)
    }
    times.sort((a, b) => a - b)
    const at = (p) => times[Math.min(times.length - 1, Math.floor(p * times.length))]
    rows.push({
      scenario: `  ${name}`,
      metric: `p50 / p95 ms (${runs} runs)`,
      value: `${at(0.5).toFixed(0)} / ${at(0.95).toFixed(0)}`,
      target: 'p95 ≤ 500',
    })
  }
  await client.end()
  return rows
}

/**
 * `n` generations over the last 30 days in the account (199 keys of its workspace, 100 members, 23
 * models on 4 providers), written straight into Postgres, and their hourly and daily rollups, as
 * the drain would keep them. Answers how long each part took (ms).
 */
export async function seedGenerations(client, { accountId, workspaceId, n }) {
  const t0 = performance.now()
  // Keys (in the default workspace: they only need to be the account's) and the generations.
  await client.query(
    `INSERT INTO api_keys (id, kind, workspace_id, hash, prefix, name)
     SELECT gen_random_uuid(), 'user', $1::uuid, sha256(('bench-key-' || k)::bytea), 'sk-bench', 'bench ' || k
     FROM generate_series(0, 198) k`,
    [workspaceId],
  )
  await client.query('SET synchronous_commit = off')
  const start = Date.now() - 30 * DAY
  const chunk = 1_000_000
  // Key kk of 199 (each in one of 10 workspaces, for one of 100 members) calls model m of 23 (on
  // one of 4 providers): coprime cycles, so every key uses every model within the hour, the most
  // rollup rows 10 million generations can make here (a worst case: real keys use a few models).
  for (let from = 0; from < n; from += chunk) {
    await client.query(
      `WITH ks AS (SELECT array_agg(id ORDER BY (substr(name, 7))::int) AS ids FROM api_keys WHERE name LIKE 'bench %')
       INSERT INTO generations (id, request_id, created_at, key_id, workspace_id, account_id, user_id, model, provider,
         door, tokens_prompt, tokens_completion, tokens_reasoning, tokens_cached, cost_pico, is_byok, latency_ms, ttft_ms,
         streamed, cancelled)
       SELECT 'gen-bench-' || i, 'gen-bench-' || i,
              to_timestamp(($2::bigint + (i::bigint * 2592000000 / $3)) / 1000.0),
              ks.ids[1 + (i * 37) % 199], md5('ws' || ((i * 37) % 199 % 10))::uuid, $1::uuid,
              md5('user' || ((i * 37) % 199 % 100))::uuid,
              'bench/model-' || ((i * 13) % 23), 'provider-' || ((i * 13) % 23 % 4), 'chat_completions',
              10 + i % 500, 5 + i % 300, i % 50, i % 7, (1000000 + i % 100000)::bigint, i % 10 = 0,
              100 + i % 900, 20 + i % 80, i % 2 = 0, i % 97 = 0
       FROM generate_series($4::bigint, $5::bigint) i, ks`,
      [accountId, start, n, from, Math.min(n, from + chunk) - 1],
    )
    process.stderr.write(`bench: analytics: ${Math.min(n, from + chunk).toLocaleString('en-US')} generations\n`)
  }
  const filled = performance.now() - t0
  const t1 = performance.now()
  await rollUpGenerations(client, accountId)
  const rolled = performance.now() - t1
  return { filled, rolled }
}

/** The rollups' stand-in for an owner a generation has none of. */
const NIL = `'00000000-0000-0000-0000-000000000000'::uuid`

/**
 * The account's hourly and daily rollups made again from its generations, as the drain keeps them
 * (for generations written straight into Postgres).
 */
export async function rollUpGenerations(client, accountId) {
  await client.query(`DELETE FROM generation_rollups WHERE account_id = $1::uuid`, [accountId])
  await client.query(`DELETE FROM generation_rollups_daily WHERE account_id = $1::uuid`, [accountId])
  await client.query(
    `INSERT INTO generation_rollups (account_id, workspace_id, key_id, user_id, model, provider, hour, requests,
       tokens_prompt, tokens_completion, tokens_reasoning, tokens_cached, credits_pico, byok_pico, latency_ms, ttft_ms,
       ttft_count, cancelled)
     SELECT account_id, coalesce(workspace_id, ${NIL}), coalesce(key_id, ${NIL}), coalesce(user_id, ${NIL}), model,
            provider, date_trunc('hour', created_at), count(*),
            sum(tokens_prompt), sum(tokens_completion), sum(tokens_reasoning), sum(tokens_cached),
            sum(CASE WHEN is_byok THEN 0 ELSE cost_pico END), sum(CASE WHEN is_byok THEN cost_pico ELSE 0 END),
            sum(latency_ms), sum(ttft_ms), count(ttft_ms), count(*) FILTER (WHERE cancelled)
     FROM generations WHERE account_id = $1::uuid GROUP BY 1, 2, 3, 4, 5, 6, 7`,
    [accountId],
  )
  await client.query(
    `INSERT INTO generation_rollups_daily (account_id, workspace_id, key_id, user_id, model, provider, day, requests,
       tokens_prompt, tokens_completion, tokens_reasoning, tokens_cached, credits_pico, byok_pico, latency_ms, ttft_ms,
       ttft_count, cancelled)
     SELECT account_id, workspace_id, key_id, user_id, model, provider,
            date_trunc('day', hour AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', sum(requests), sum(tokens_prompt),
            sum(tokens_completion), sum(tokens_reasoning), sum(tokens_cached), sum(credits_pico), sum(byok_pico),
            sum(latency_ms), sum(ttft_ms), sum(ttft_count), sum(cancelled)
     FROM generation_rollups WHERE account_id = $1::uuid GROUP BY 1, 2, 3, 4, 5, 6, 7`,
    [accountId],
  )
  await client.query('ANALYZE generation_rollups')
  await client.query('ANALYZE generation_rollups_daily')
}
