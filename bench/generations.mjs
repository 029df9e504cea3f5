// The generations ledger (`npm run bench -- generations`): how many records per second the
// worker's drain writes into Postgres from the Redis stream the API appends to, and how fast
// GET /generation answers for them.
import autocannon from 'autocannon'
import pg from 'pg'
import Redis from 'ioredis'

/** One generation as the API appends it (`prefix` + i as its id), of `accountId` (and `workspaceId`). */
export const record = (i, accountId, { prefix = 'resp_bench', workspaceId = null } = {}) => ({
  id: `${prefix}${String(i).padStart(10, '0')}`,
  request_id: `${prefix}${String(i).padStart(10, '0')}`,
  created_at: new Date().toISOString(),
  key_id: null,
  workspace_id: workspaceId,
  account_id: accountId,
  user_id: null,
  intern_id: null,
  model: 'bench/chat',
  provider: 'bench',
  upstream_model: 'sim',
  door: 'chat_completions',
  tokens_prompt: 12,
  tokens_completion: 6,
  tokens_reasoning: 0,
  tokens_cached: 0,
  cost_pico: '24000000',
  is_byok: false,
  latency_ms: 3,
  generation_time_ms: 2,
  ttft_ms: 1,
  streamed: false,
  cancelled: false,
  finish_reason: 'stop',
  upstream_id: null,
  session_id: null,
  http_referer: null,
  app_title: null,
  user_agent: 'bench',
  external_user: null,
  preset_id: null,
  provider_responses: [{ provider_name: 'bench', status: 200, latency: 3 }],
})

export async function benchGenerations({ key, db, base, queuePrefix }) {
  const n = Number(process.env.BENCH_GENERATIONS ?? 200_000)
  const me = await (await fetch(`${base}/key`, { headers: { authorization: `Bearer ${key}` } })).json()
  const accountId = me.data.organization_id
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379')
  const client = new pg.Client({ connectionString: db })
  await client.connect()
  const stream = `${queuePrefix}:generations`
  const count = async () => Number((await client.query('SELECT count(*) FROM generations')).rows[0].count)
  const before = await count()
  // Appended as fast as this process can (faster than API processes serving requests would), while
  // the worker drains: the rate is the drain's.
  const t0 = performance.now()
  for (let i = 0; i < n; i += 1_000) {
    const p = redis.pipeline()
    for (let j = i; j < Math.min(n, i + 1_000); j++) p.xadd(stream, '*', 'g', JSON.stringify(record(j, accountId)))
    await p.exec()
  }
  const appended = performance.now() - t0
  while ((await count()) - before < n) await new Promise((r) => setTimeout(r, 50))
  const drained = performance.now() - t0
  const rows = [
    {
      scenario: `generations: ${n.toLocaleString('en-US')} appended to the stream, drained into Postgres by one worker`,
      metric: 'records/s (appended in s)',
      value: `${Math.round(n / (drained / 1000)).toLocaleString('en-US')} (${(appended / 1000).toFixed(1)})`,
      target: '≥ 5,000',
    },
  ]
  // GET /generation for random ids among them, 64 connections, 10 s.
  const result = await autocannon({
    url: base.replace(/\/api\/v1$/, ''),
    connections: 64,
    duration: Number(process.env.BENCH_SECONDS ?? 10),
    requests: [
      {
        method: 'GET',
        setupRequest: (req) => ({
          ...req,
          path: `/api/v1/generation?id=resp_bench${String(Math.floor(Math.random() * n)).padStart(10, '0')}`,
          headers: { authorization: `Bearer ${key}` },
        }),
      },
    ],
  })
  rows.push({
    scenario: 'GET /generation (random ids of those), 64 connections',
    metric: 'req/s; p50 / p99 ms; non-2xx',
    value: `${Math.round(result.requests.average)}; ${result.latency.p50} / ${result.latency.p99}; ${result.non2xx}`,
    target: '',
  })
  await client.end()
  redis.disconnect()
  return rows
}
