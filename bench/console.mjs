// The console beside the gateway (`npm run bench -- console`): 50 members with the spend page open
// refresh it at once, every BENCH_CONSOLE_EVERY_MS (2 s: more often than the console itself ever
// asks; each refresh is what the page asks for: index.html, the session, and its one analytics
// query: 30 days by model, bucketed by day in a time zone), while
// the gateway takes /chat/completions at a fixed rate. The gateway's latency is measured in rounds
// that alternate without and with the console's load, in one run; issue 47 asks that its p99 with
// the load stay within 1.2× of its p99 without. The account holds BENCH_CONSOLE_GENERATIONS
// (1,000,000) generations of the last 30 days, so the spend query reads real rollups.
import pg from 'pg'
import { Pool } from 'undici'
import { seedGenerations } from './analytics.mjs'
import { doorTargets, fixedRate, pct } from './gateway.mjs'

const DAY = 86_400_000

export async function benchConsole({ key, managementKey, base, db }) {
  const members = Number(process.env.BENCH_CONSOLE_MEMBERS ?? 50)
  const every = Number(process.env.BENCH_CONSOLE_EVERY_MS ?? 2_000)
  const rate = Number(process.env.BENCH_RATE ?? 500)
  const seconds = Number(process.env.BENCH_SECONDS ?? 20)
  const rounds = Number(process.env.BENCH_ROUNDS ?? 4)
  const n = Number(process.env.BENCH_CONSOLE_GENERATIONS ?? 1_000_000)
  const origin = new URL(base).origin

  const client = new pg.Client({ connectionString: db })
  const me = await (await fetch(`${base}/key`, { headers: { authorization: `Bearer ${managementKey}` } })).json()
  await client.connect()
  await seedGenerations(client, { accountId: me.data.organization_id, workspaceId: me.data.workspace_id, n })
  await client.end()

  // Each member signs in once (a session of the management key, as the console makes it).
  const cookies = []
  for (let i = 0; i < members; i++) {
    const res = await fetch(`${base}/console/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-roster-console': '1', origin },
      body: JSON.stringify({ key: managementKey }),
    })
    if (res.status !== 201) throw new Error(`sign-in: ${res.status} ${await res.text()}`)
    cookies.push(res.headers.get('set-cookie').split(';')[0])
  }
  const pool = new Pool(origin, { connections: members })
  const etag = (await fetch(`${origin}/console/`, { headers: { 'accept-encoding': 'br, gzip' } })).headers.get('etag')
  const spendQuery = () => {
    const end = new Date(Math.ceil(Date.now() / 3_600_000) * 3_600_000)
    return JSON.stringify({
      metrics: ['total_cost', 'request_count'],
      dimensions: ['model'],
      granularity: 'day',
      time_zone: 'Europe/Paris',
      time_range: { start: new Date(end.getTime() - 30 * DAY).toISOString(), end: end.toISOString() },
      limit: 10_000,
    })
  }
  const pageTimes = []
  let pageErrors = 0
  /** One member's refresh of the spend page: its three calls at once. */
  const refresh = async (cookie) => {
    const t0 = performance.now()
    const calls = [
      // index.html is never cached but always revalidated, as a browser does (304 while unchanged).
      pool.request({
        method: 'GET',
        path: '/console/',
        headers: { cookie, 'accept-encoding': 'br, gzip', ...(etag && { 'if-none-match': etag }) },
      }),
      pool.request({ method: 'GET', path: '/api/v1/console/session', headers: { cookie } }),
      pool.request({
        method: 'POST',
        path: '/api/v1/analytics/query',
        headers: { cookie, 'content-type': 'application/json', 'x-roster-console': '1', origin },
        body: spendQuery(),
      }),
    ]
    for (const res of await Promise.all(calls)) {
      await res.body.text()
      if (res.statusCode !== 200 && res.statusCode !== 304) pageErrors++
    }
    pageTimes.push(performance.now() - t0)
  }
  /** Every member refreshes at once, every `every` ms, until `until()` says stop. */
  const crowd = async (until) => {
    while (!until()) {
      const next = performance.now() + every
      await Promise.all(cookies.map(refresh))
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - performance.now())))
    }
  }

  const target = doorTargets(base, key)['roster-chat']
  const gatewayPool = new Pool(target.origin, { connections: 128 })
  await fixedRate(target, rate, Number(process.env.BENCH_WARMUP_SECONDS ?? 10), gatewayPool)
  const lat = { quiet: [], console: [] }
  const errors = { quiet: 0, console: 0 }
  for (let r = 0; r < rounds; r++) {
    for (const kind of r % 2 ? ['console', 'quiet'] : ['quiet', 'console']) {
      let stop = false
      const load = kind === 'console' ? [crowd(() => stop)] : []
      const round = await fixedRate(target, rate, seconds / rounds, gatewayPool)
      stop = true
      await Promise.all(load)
      lat[kind].push(...round.latencies)
      errors[kind] += round.errors
      await new Promise((resolve) => setTimeout(resolve, 500))
    }
  }
  await Promise.all([pool.close(), gatewayPool.close()])
  for (const k of Object.keys(lat)) lat[k].sort((a, b) => a - b)
  pageTimes.sort((a, b) => a - b)
  const f = (x) => x.toFixed(2)
  const p99 = (k) => pct(lat[k], 0.99)
  return [
    {
      scenario: `console: gateway /chat/completions at ${rate}/s, ${seconds} s in ${rounds} rounds each: without the console`,
      metric: 'p50 / p99 ms',
      value: `${f(pct(lat.quiet, 0.5))} / ${f(p99('quiet'))}`,
      target: errors.quiet ? `${errors.quiet} errors!` : '',
    },
    {
      scenario: `  with ${members} members refreshing the spend page at once every ${every / 1000} s (${n.toLocaleString('en-US')} generations)`,
      metric: 'p50 / p99 ms',
      value: `${f(pct(lat.console, 0.5))} / ${f(p99('console'))}`,
      target: errors.console ? `${errors.console} errors!` : '',
    },
    {
      scenario: '  gateway p99 with / without the console',
      metric: '×',
      value: (p99('console') / p99('quiet')).toFixed(2),
      target: '≤ 1.2',
    },
    {
      scenario: `  the spend page (3 calls), ${pageTimes.length} refreshes`,
      metric: 'p50 / p99 ms',
      value: `${pct(pageTimes, 0.5).toFixed(0)} / ${pct(pageTimes, 0.99).toFixed(0)}`,
      target: pageErrors ? `${pageErrors} errors!` : '',
    },
  ]
}
