// The generations at scale (`npm run bench -- generations-scale`, only when named): the partitioned
// table (a partition per UTC day) holding BENCH_SCALE_STEPS generations in turn (10 and 100 million
// by default), spread over its last 30 days as the drain would write them (ids carrying their second,
// as the gateway's do), and at each size, in one run: the drain's insert rate (records appended to
// the Redis stream, written by the worker into today's partition), `GET /generation` for random ids
// among them (p50 / p95), and `GET /activity` (the rollups: p50 / p95). The rows are written straight
// into Postgres (generate_series), with their hourly and daily rollups.
import pg from 'pg'
import Redis from 'ioredis'
import { record } from './generations.mjs'
import { rollUpGenerations } from './analytics.mjs'

const DAY = 86_400_000
const hex8 = (ms) =>
  Math.floor(ms / 1000)
    .toString(16)
    .padStart(8, '0')
/** A generation's id as the gateway writes one: `resp_`, its second, then 24 hex digits (here its number). */
const idSql = (ms, i) => `'resp_' || lpad(to_hex(${ms} / 1000), 8, '0') || lpad(to_hex(${i}), 24, '0')`
/**
 * When generation `i` of `total` was made (epoch ms), as the SQL below places it: on day `i % 30` of the
 * 30 from `start`, in order within its day, so that each step adds rows to every day and a day's rows
 * are written one partition at a time (as the drain writes them: today's only).
 */
const placed = (start, i, total) =>
  Number(BigInt(start) + BigInt(i % 30) * 86_400_000n + (BigInt(Math.floor(i / 30)) * 2_592_000_000n) / BigInt(total))
const PLACED_SQL = `$4::bigint + (i % 30) * 86400000 + (i / 30) * 2592000000 / $5::bigint`

export async function benchGenerationsScale({ key, managementKey, db, base, queuePrefix }) {
  // 100 million rows take ~45 GB of disk (and ~10 minutes to write here).
  const steps = (process.env.BENCH_SCALE_STEPS ?? '10000000,100000000').split(',').map(Number)
  const lookups = Number(process.env.BENCH_SCALE_LOOKUPS ?? 2000)
  const appends = Number(process.env.BENCH_SCALE_APPENDS ?? 100_000)
  const me = await (await fetch(`${base}/key`, { headers: { authorization: `Bearer ${key}` } })).json()
  const accountId = me.data.organization_id
  const client = new pg.Client({ connectionString: db })
  await client.connect()
  await client.query('SET synchronous_commit = off')
  const start = Math.floor(Date.now() - 30 * DAY)
  await dayPartitions(client, start)
  const rows = []
  let have = 0
  for (const n of steps) {
    const t0 = performance.now()
    for (let from = have; from < n; from += 1_000_000) {
      const to = Math.min(n, from + 1_000_000) - 1
      // Each day's share of this million, one statement (one partition) at a time.
      for (let d = 0; d < 30; d++)
        await client.query(
          `INSERT INTO generations (id, request_id, created_at, account_id, model, provider, door, tokens_prompt,
             tokens_completion, tokens_reasoning, tokens_cached, cost_pico, is_byok, latency_ms, ttft_ms, streamed, cancelled)
           SELECT ${idSql('ms', 'i')}, ${idSql('ms', 'i')}, to_timestamp(ms / 1000.0), $1::uuid, 'bench/model-' || (i % 23),
                  'provider-' || (i % 4), 'chat_completions', 10 + i % 500, 5 + i % 300, i % 50, i % 7,
                  (1000000 + i % 100000)::bigint, i % 10 = 0, 100 + i % 900, 20 + i % 80, i % 2 = 0, false
           FROM generate_series($2::bigint, $3::bigint, 30) i, LATERAL (SELECT ${PLACED_SQL} AS ms) x`,
          [accountId, from + ((d - (from % 30) + 30) % 30), to, start, steps.at(-1)],
        )
      process.stderr.write(`bench: generations-scale: ${(to + 1).toLocaleString('en-US')} generations\n`)
    }
    const filled = performance.now() - t0
    const t1 = performance.now()
    await rollUpGenerations(client, accountId)
    const rolled = performance.now() - t1
    await client.query('ANALYZE generations')
    // What the seed wrote is flushed before anything is timed: the drain's rate is not the checkpoint's.
    await client.query('CHECKPOINT')
    have = n
    const size = Number(
      (
        await client.query(
          `SELECT sum(pg_total_relation_size(inhrelid)) AS b FROM pg_inherits WHERE inhparent = 'generations'::regclass`,
        )
      ).rows[0]?.b ?? 0,
    )
    const parts = Number(
      (await client.query(`SELECT count(*) FROM pg_inherits WHERE inhparent = 'generations'::regclass`)).rows[0].count,
    )
    const label = `${(n / 1e6).toLocaleString('en-US')} M`
    rows.push({
      scenario: `generations-scale ${label}: written straight (s), rolled up (s); partitions`,
      metric: 's; n',
      value: `${(filled / 1000).toFixed(0)}, ${(rolled / 1000).toFixed(0)}; ${parts}${size ? ` (${(size / 2 ** 30).toFixed(1)} GiB)` : ''}`,
      target: '',
    })
    rows.push({
      ...(await drainRate(client, accountId, appends, queuePrefix, n)),
      scenario: `  ${label}: drain into today's partition`,
    })
    rows.push({
      ...(await timed(lookups, async () => {
        const i = Math.floor(Math.random() * n)
        const id = `resp_${hex8(placed(start, i, steps.at(-1)))}${i.toString(16).padStart(24, '0')}`
        const res = await fetch(`${base}/generation?id=${id}`, { headers: { authorization: `Bearer ${key}` } })
        await res.text()
        if (res.status !== 200) throw new Error(`GET /generation ${id}: ${res.status}`)
      })),
      scenario: `  ${label}: GET /generation, a random id of them`,
    })
    rows.push({
      ...(await timed(20, async () => {
        const res = await fetch(`${base}/activity`, { headers: { authorization: `Bearer ${managementKey}` } })
        await res.text()
        if (res.status !== 200) throw new Error(`GET /activity: ${res.status}`)
      })),
      scenario: `  ${label}: GET /activity (30 days)`,
    })
    // Each size's rows as soon as they are measured (a run stopped at the next size keeps them).
    for (const r of rows.slice(-4)) process.stderr.write(`bench: ${r.scenario.trim()}: ${r.value}\n`)
  }
  await client.end()
  return rows
}

/** One partition a day over the seeded days and the week ahead, the empty history partition of a fresh database dropped. */
async function dayPartitions(client, start) {
  await client.query(`DO $$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM generations_history LIMIT 1) THEN
      ALTER TABLE generations DETACH PARTITION generations_history; DROP TABLE generations_history;
    END IF; END $$`)
  await client.query(
    `DO $$ DECLARE d date; BEGIN
       FOR d IN SELECT generate_series($1::date, (now() + interval '7 days')::date, interval '1 day')::date LOOP
         EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF generations FOR VALUES FROM (%L) TO (%L)',
           'generations_d' || to_char(d, 'YYYYMMDD'), d::timestamp AT TIME ZONE 'UTC', (d + 1)::timestamp AT TIME ZONE 'UTC');
       END LOOP; END $$`.replace('$1::date', `'${new Date(start - DAY).toISOString().slice(0, 10)}'::date`),
  )
}

/** `n` records appended to the stream the worker drains (dated now: today's partition); records/s written. */
async function drainRate(client, accountId, n, queuePrefix, step) {
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379')
  const stream = `${queuePrefix}:generations`
  const prefix = `resp_${hex8(Date.now())}${step.toString(16).padStart(14, '0')}`
  const count = async () =>
    Number(
      (
        await client.query(
          `SELECT count(*) FROM generations WHERE id LIKE $1 AND created_at > now() - interval '1 hour'`,
          [`${prefix}%`],
        )
      ).rows[0].count,
    )
  const t0 = performance.now()
  for (let i = 0; i < n; i += 1_000) {
    const p = redis.pipeline()
    for (let j = i; j < Math.min(n, i + 1_000); j++)
      p.xadd(stream, '*', 'g', JSON.stringify(record(j, accountId, { prefix })))
    await p.exec()
  }
  while ((await count()) < n) await new Promise((r) => setTimeout(r, 100))
  const ms = performance.now() - t0
  redis.disconnect()
  return {
    metric: 'records/s',
    value: Math.round(n / (ms / 1000)).toLocaleString('en-US'),
    target: 'unchanged from 10 M',
  }
}

/** `run` `n` times one after another: p50 / p95 ms. */
async function timed(n, run) {
  const times = []
  for (let i = 0; i < n; i++) {
    const t = performance.now()
    await run()
    times.push(performance.now() - t)
  }
  times.sort((a, b) => a - b)
  const at = (p) => times[Math.min(n - 1, Math.floor(p * n))]
  return {
    metric: `p50 / p95 ms (${n})`,
    value: `${at(0.5).toFixed(1)} / ${at(0.95).toFixed(1)}`,
    target: 'p95 unchanged from 10 M',
  }
}
