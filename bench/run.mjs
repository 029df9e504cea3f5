#!/usr/bin/env node
// Roster benchmarks: `npm run bench` (after `npm run build`). Starts its own runtime host(s), API and
// one worker over a scratch database (roster_bench on DATABASE_URL's server), runs each scenario
// and prints a table. Everything, load generator included, runs on this machine.
//
//   npm run bench                 all scenarios
//   npm run bench -- create       one scenario: create-alone | create | provision | worker-alone | single | poll | list | pgbench
//                                 | gateway | ttfb | soak (soak, 10 minutes, runs only when named)
//                                 | doors-instructions (the doors' instructions per request under valgrind; only when named)
//                                 | fair-use (one key's attacks against another key's latency; only when named)
//                                 | generations (the ledger: drain rate into Postgres, GET /generation; only when named)
//                                 | analytics (queries over 10 million generations' rollups; only when named)
//                                 | generations-scale (the partitioned generations at 10 and 100 million: drain rate, GET /generation, /activity; only when named)
//                                 | governance (a governed key's CPU per request against a plain one; only when named)
//                                 | destinations (generations delivered per second to a webhook; only when named)
//                                 | floor (the doors, streamed and not, all features on, against a bare Fastify proxy; only when named)
//                                 | slack (a Slack message to the first text in its thread, against the HTTP chat; only when named)
//                                 | console (50 members refreshing the spend page at once, against the gateway's p99; only when named)
//                                 | metrics (a gateway request's metric calls: prom-client's against the tallied ones; only when named)
//                                 | fleet-provision | failover | snapshots | fleet-chat (the fleet of runtime hosts: bench/fleet.mjs; only when named)
//                                 | schedules (1,000 interns' schedules firing every minute on three hosts, a worker killed: bench/schedules.mjs; only when named)
import { spawn, spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir, cpus, totalmem } from 'node:os'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { randomBytes } from 'node:crypto'
import autocannon from 'autocannon'
import pg from 'pg'
import { deploy } from '../prisma/migrate.mjs'
import { nodeFlags } from '../scripts/node-flags.mjs'
import { benchFairUse, makeKeyWith } from './fair-use.mjs'
import { benchFailover, benchFleetChat, benchFleetProvision, benchSnapshots } from './fleet.mjs'
import { firstText as firstTextOf } from './first-text.mjs'
import { benchGenerations } from './generations.mjs'
import { benchGenerationsScale } from './generations-scale.mjs'
import { benchAnalytics } from './analytics.mjs'
import { benchConsole } from './console.mjs'
import { benchMetrics } from './metrics.mjs'
import { benchDestinations } from './destinations.mjs'
import { benchFloor } from './floor.mjs'
import { benchSlack, slackEnv } from './slack.mjs'
import { benchSchedules } from './schedules.mjs'
import {
  benchCatalogue,
  benchDoorInstructions,
  benchGatewayLatency,
  callgrind,
  benchGatewaySoak,
  benchGatewayTtfb,
  keepCoresAwake,
  keepingAwake,
  pin,
  startUpstreams,
  benchGovernance,
} from './gateway.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const only = process.argv[2]
const serverUrl = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres'
const dbUrl = (name) => Object.assign(new URL(serverUrl), { pathname: `/${name}` }).toString()
const BENCH_DB = 'roster_bench'
const API_PORT = 3900
const BEFORE_API_PORT = 3910
const RUNTIME_PORT = 3901
const base = `http://127.0.0.1:${API_PORT}/api/v1`

async function admin(sql) {
  const c = new pg.Client({ connectionString: dbUrl('postgres') })
  await c.connect()
  try {
    return await c.query(sql)
  } finally {
    await c.end()
  }
}

function start(app, env, extraFlags = [], wrap = [], from = root) {
  // Roster's processes run with the flags `npm start` gives them; `wrap` runs one under a tool
  // (valgrind: the same process, so the same pid); `from`, another checkout's build.
  const command = [...wrap, process.execPath, ...nodeFlags(), ...extraFlags, join(from, 'apps', app, 'dist', 'main.js')]
  const child = spawn(command[0], command.slice(1), {
    env: { ...process.env, ...env },
    stdio: ['ignore', process.env.BENCH_API_FLAGS && app === 'api' ? 'inherit' : 'ignore', 'inherit'],
  })
  return child
}

async function waitHttp(url, seconds = 10) {
  for (let i = 0; i < seconds * 20; i++) {
    try {
      if ((await fetch(url)).ok) return
    } catch {}
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`${url} did not come up`)
}

/** The credential the fleet gave runtime host `hostId` for its current epoch (as the API and workers derive it). */
async function hostAuth(db, masterKey, hostId) {
  const { hostCredential, hostCredentialKey } = await import('../packages/shared/dist/fleet/index.js')
  const c = new pg.Client({ connectionString: db })
  await c.connect()
  try {
    const { rows } = await c.query('SELECT epoch FROM runtime_hosts WHERE id = $1', [hostId])
    return {
      authorization: `Bearer ${hostCredential(hostCredentialKey(Buffer.from(masterKey, 'hex')), hostId, rows[0].epoch)}`,
      'content-type': 'application/json',
    }
  } finally {
    await c.end()
  }
}

/**
 * A stack over a fresh bench database: `runtimes` runtime hosts (ports from RUNTIME_PORT up, each
 * joining the fleet; room for every intern a bench makes), the API and a worker. The hosts get
 * neither the database nor the master key, as in production.
 */
async function withStack(
  work,
  {
    worker = true,
    gateway = false,
    apiWrap: wrapper,
    apiFlags = [],
    runtimes = 1,
    env: extraEnv = {},
    apiEnv = {},
    beforeApi = false,
  } = {},
) {
  // A tool the API runs under (the command line before node's), asked for when the stack starts.
  const apiWrap = wrapper?.() ?? []
  await admin(`DROP DATABASE IF EXISTS ${BENCH_DB} WITH (FORCE)`)
  await deploy(dbUrl(BENCH_DB))
  const shared = {
    QUEUE_PREFIX: `{bench-${randomBytes(3).toString('hex')}}`,
    RUNTIME_TOKEN: randomBytes(32).toString('hex'),
    ROSTER_API_URL: base,
    INTERN_DEFAULT_MODEL: 'bench/chat',
    LOG_LEVEL: 'warn',
    ...extraEnv,
  }
  const env = {
    ...shared,
    DATABASE_URL: dbUrl(BENCH_DB),
    VAULT_MASTER_KEY: randomBytes(32).toString('hex'),
    INTERN_LIMIT_PER_MEMBER: '10000000',
    DATABASE_POOL_SIZE: process.env.DATABASE_POOL_SIZE ?? '20',
  }
  let stopUpstreams = async () => {}
  if (gateway) {
    const file = join(mkdtempSync(join(tmpdir(), 'roster-bench-')), 'catalogue.json')
    writeFileSync(file, JSON.stringify(benchCatalogue))
    env.MODEL_CATALOGUE = file
    stopUpstreams = await startUpstreams(root, waitHttp)
  }
  // Runtime hosts: the fleet's credential and nothing of the database or the vault.
  const { DATABASE_URL: _d, VAULT_MASTER_KEY: _k, ...inherited } = process.env
  const hostEnv = (i) => ({
    ...shared,
    PORT: String(RUNTIME_PORT + i * 10),
    RUNTIME_HOST_ID: `bench-${i + 1}`,
    RUNTIME_CAPACITY: '100000',
    RUNTIME_DATA_DIR: mkdtempSync(join(tmpdir(), 'roster-bench-')),
  })
  const startHost = (i) => {
    const child = spawn(process.execPath, [...nodeFlags(), join(root, 'apps/runtime/dist/main.js')], {
      env: { ...inherited, ...hostEnv(i) },
      stdio: ['ignore', 'ignore', 'inherit'],
    })
    return {
      id: `bench-${i + 1}`,
      port: RUNTIME_PORT + i * 10,
      url: `http://127.0.0.1:${RUNTIME_PORT + i * 10}`,
      child,
    }
  }
  const hosts = Array.from({ length: runtimes }, (_, i) => startHost(i))
  const procs = [
    // BENCH_API_FLAGS: node flags for the API process, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof".
    start(
      'api',
      { ...env, ...apiEnv, PORT: String(API_PORT) },
      [...apiFlags, ...(process.env.BENCH_API_FLAGS ?? '').split(' ').filter(Boolean)],
      apiWrap,
    ),
    ...(worker ? [start('worker', env)] : []),
  ]
  // BENCH_BEFORE_ROOT (a checkout of an earlier build, built, over the same schema): its API beside this
  // one, over the same database, Redis and worker, for scenarios that alternate the two builds.
  const before =
    beforeApi && process.env.BENCH_BEFORE_ROOT
      ? start(
          'api',
          {
            ...env,
            ...apiEnv,
            ...(apiEnv.METRICS_PORT && { METRICS_PORT: String(Number(apiEnv.METRICS_PORT) - 1) }),
            PORT: String(BEFORE_API_PORT),
          },
          [],
          [],
          process.env.BENCH_BEFORE_ROOT,
        )
      : undefined
  if (before) procs.push(before)
  if (gateway) for (const p of [procs[0], before].filter(Boolean)) pin(p.pid, 1)
  try {
    // Under valgrind the API takes a minute or so to come up.
    await waitHttp(`http://127.0.0.1:${API_PORT}/ready`, apiWrap.length ? 300 : 10)
    if (before) await waitHttp(`http://127.0.0.1:${BEFORE_API_PORT}/ready`, 10)
    for (const h of hosts) await waitHttp(`${h.url}/ready`, 20)
    await new Promise((r) => setTimeout(r, 500)) // the worker connects
    const boot = spawnSync(process.execPath, [join(root, 'apps/cli/dist/main.js'), 'bootstrap', '--json'], {
      env: { ...process.env, DATABASE_URL: env.DATABASE_URL },
      encoding: 'utf8',
    })
    const booted = JSON.parse(boot.stdout)
    const key = booted.keys.user
    const startWorker = () => {
      const w = start('worker', env)
      procs.push(w)
      return w
    }
    /** Another runtime host joins (index `i`, its own port and id). */
    const addHost = async (i) => {
      const h = startHost(i)
      hosts.push(h)
      await waitHttp(`${h.url}/ready`, 20)
      return h
    }
    return await work({
      key,
      managementKey: booted.keys.management,
      db: dbUrl(BENCH_DB),
      startWorker,
      firstWorker: worker ? procs[1] : undefined,
      base,
      apiPid: procs[0].pid,
      before: before && {
        base: `http://127.0.0.1:${BEFORE_API_PORT}/api/v1`,
        pid: before.pid,
        root: process.env.BENCH_BEFORE_ROOT,
      },
      hosts,
      addHost,
      hostAuth: (hostId) => hostAuth(dbUrl(BENCH_DB), env.VAULT_MASTER_KEY, hostId),
      queuePrefix: shared.QUEUE_PREFIX,
    })
  } finally {
    const all = [...hosts.map((h) => h.child), ...procs]
    for (const p of all) p.kill('SIGTERM')
    await Promise.all(
      all.map((p) => new Promise((r) => (p.exitCode !== null || p.signalCode !== null ? r() : p.once('exit', r)))),
    )
    await stopUpstreams()
  }
}

/**
 * The build before the fleet (a checkout at `beforeRoot`, built): one runtime host addressed by
 * RUNTIME_URL and holding the vault, as it was run then, with the gateway's upstreams. For
 * before/after comparisons in one run.
 */
async function withBeforeStack(beforeRoot, work) {
  await admin(`DROP DATABASE IF EXISTS ${BENCH_DB} WITH (FORCE)`)
  const { deploy: deployBefore } = await import(join(beforeRoot, 'prisma/migrate.mjs'))
  await deployBefore(dbUrl(BENCH_DB))
  const file = join(mkdtempSync(join(tmpdir(), 'roster-bench-')), 'catalogue.json')
  writeFileSync(file, JSON.stringify(benchCatalogue))
  const env = {
    DATABASE_URL: dbUrl(BENCH_DB),
    VAULT_MASTER_KEY: randomBytes(32).toString('hex'),
    QUEUE_PREFIX: `{bench-${randomBytes(3).toString('hex')}}`,
    RUNTIME_URL: `http://127.0.0.1:${RUNTIME_PORT}`,
    RUNTIME_TOKEN: randomBytes(32).toString('hex'),
    RUNTIME_DATA_DIR: mkdtempSync(join(tmpdir(), 'roster-bench-')),
    ROSTER_API_URL: base,
    INTERN_DEFAULT_MODEL: 'bench/chat',
    INTERN_LIMIT_PER_MEMBER: '10000000',
    MODEL_CATALOGUE: file,
    LOG_LEVEL: 'warn',
  }
  const stopUpstreams = await startUpstreams(root, waitHttp)
  const run = (app, extra) =>
    spawn(process.execPath, [...nodeFlags(), join(beforeRoot, 'apps', app, 'dist', 'main.js')], {
      env: { ...process.env, ...env, ...extra },
      stdio: ['ignore', 'ignore', 'inherit'],
    })
  const procs = [
    run('runtime', { PORT: String(RUNTIME_PORT) }),
    run('api', { PORT: String(API_PORT) }),
    run('worker', {}),
  ]
  pin(procs[1].pid, 1)
  try {
    await waitHttp(`http://127.0.0.1:${RUNTIME_PORT}/health`)
    await waitHttp(`http://127.0.0.1:${API_PORT}/ready`)
    await new Promise((r) => setTimeout(r, 500))
    const boot = spawnSync(process.execPath, [join(beforeRoot, 'apps/cli/dist/main.js'), 'bootstrap', '--json'], {
      env: { ...process.env, DATABASE_URL: env.DATABASE_URL },
      encoding: 'utf8',
    })
    return await work({ key: JSON.parse(boot.stdout).keys.user, base, db: env.DATABASE_URL })
  } finally {
    for (const p of procs) p.kill('SIGTERM')
    await Promise.all(
      procs.map((p) => new Promise((r) => (p.exitCode !== null || p.signalCode !== null ? r() : p.once('exit', r)))),
    )
    await stopUpstreams()
  }
}

const headers = (key) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' })
let seq = 0
const nextName = (prefix) => `${prefix}${(seq++).toString(36)}`

async function countRunning(client, prefix) {
  const { rows } = await client.query(
    `SELECT count(*)::int AS n FROM interns WHERE status = 'running' AND name LIKE $1`,
    [`${prefix}%`],
  )
  return rows[0].n
}

/** Creates n interns over 64 concurrent requests (provisioned unless said otherwise). */
async function createInterns(key, prefix, n, provision = true) {
  let next = 0
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (next < n) {
        next++
        const res = await fetch(`${base}/interns`, {
          method: 'POST',
          headers: headers(key),
          body: JSON.stringify({ name: nextName(prefix), provision }),
        })
        if (res.status !== 201) throw new Error(`create answered ${res.status}`)
        await res.arrayBuffer()
      }
    }),
  )
}

/** POST /interns with provision:true and unique names at 64 connections. */
async function benchCreate({ key }, label = 'with one worker provisioning them meanwhile') {
  const prefix = 'c' + randomBytes(2).toString('hex')
  const result = await autocannon({
    url: `${base}/interns`,
    connections: 64,
    duration: Number(process.env.BENCH_SECONDS ?? 10),
    method: 'POST',
    headers: headers(key),
    requests: [
      { setupRequest: (req) => ({ ...req, body: JSON.stringify({ name: nextName(prefix), provision: true }) }) },
    ],
  })
  const ok = result['2xx']
  return [
    {
      scenario: `POST /interns (provision:true, unique names), 64 connections, ${label}`,
      metric: 'creates/s',
      value: (ok / result.duration).toFixed(0),
      target: '≥ 1,500',
    },
    {
      scenario: '  latency',
      metric: 'p50 / p99 ms',
      value: `${result.latency.p50} / ${result.latency.p99}`,
      target: 'p99 ≤ 50',
    },
    { scenario: '  non-2xx answers', metric: 'count', value: String(result.non2xx + result.errors), target: '0' },
  ]
}

/** 2,000 interns from create to running with one worker process. */
async function benchProvision({ key, db }) {
  const n = Number(process.env.BENCH_INTERNS ?? 2000)
  const prefix = 'p' + randomBytes(2).toString('hex')
  const client = new pg.Client({ connectionString: db })
  await client.connect()
  const started = performance.now()
  await createInterns(key, prefix, n)
  const created = performance.now()
  while ((await countRunning(client, prefix)) < n) await new Promise((r) => setTimeout(r, 20))
  const done = performance.now()
  await client.end()
  return [
    {
      scenario: `${n} interns, create → running, one worker`,
      metric: 'interns/s',
      value: (n / ((done - started) / 1000)).toFixed(0),
      target: '≥ 300',
    },
    {
      scenario: '  of which creating them all',
      metric: 's',
      value: ((created - started) / 1000).toFixed(2),
      target: '',
    },
  ]
}

/** Interns created first (their jobs wait: no worker runs), then `workers` worker processes started at once: interns/s until the last runs. */
async function queuedThenProvisioned({ key, db, startWorker }, workers) {
  const n = Number(process.env.BENCH_INTERNS ?? 2000)
  const prefix = 'w' + randomBytes(2).toString('hex')
  await createInterns(key, prefix, n)
  const client = new pg.Client({ connectionString: db })
  await client.connect()
  const started = performance.now()
  for (let i = 0; i < workers; i++) startWorker()
  while ((await countRunning(client, prefix)) < n) await new Promise((r) => setTimeout(r, 20))
  const done = performance.now()
  await client.end()
  return { n, rate: (n / ((done - started) / 1000)).toFixed(0) }
}

/** The worker alone: 2,000 interns created first, then one worker process started and timed to the last running. */
async function benchWorkerAlone(ctx) {
  const { n, rate } = await queuedThenProvisioned(ctx, 1)
  return [
    {
      scenario: `${n} interns already queued, one worker started → all running`,
      metric: 'interns/s',
      value: rate,
      target: '(breakdown)',
    },
  ]
}

/**
 * Provisioning rate with 1, 2 and 4 worker processes: the same interns queued first (the API alone),
 * then that many workers started at once and timed to the last running. Each count on a fresh stack.
 */
async function benchWorkersScale() {
  const rows = []
  for (const workers of (process.env.BENCH_WORKER_COUNTS ?? '1,2,4').split(',').map(Number)) {
    const { n, rate } = await withStack((ctx) => queuedThenProvisioned(ctx, workers), { worker: false })
    rows.push({
      scenario: `${n} interns queued, ${workers} worker process${workers > 1 ? 'es' : ''} started → all running`,
      metric: 'interns/s',
      value: rate,
      target: '',
    })
  }
  return rows
}

/** GET /interns/{id} polled by 64 connections, spread over 64 interns. */
async function benchPoll({ key }) {
  const prefix = 'g' + randomBytes(2).toString('hex')
  const ids = []
  for (let i = 0; i < 64; i++) {
    const res = await fetch(`${base}/interns`, {
      method: 'POST',
      headers: headers(key),
      body: JSON.stringify({ name: nextName(prefix) }),
    })
    ids.push((await res.json()).id)
  }
  let n = 0
  const result = await autocannon({
    url: `${base}/interns/${ids[0]}`,
    connections: 64,
    duration: Number(process.env.BENCH_SECONDS ?? 10),
    headers: { authorization: `Bearer ${key}` },
    requests: [{ setupRequest: (req) => ({ ...req, path: `/api/v1/interns/${ids[n++ % ids.length]}` }) }],
  })
  return [
    {
      scenario: 'GET /interns/{id}, 64 connections over 64 interns',
      metric: 'req/s',
      value: (result['2xx'] / result.duration).toFixed(0),
      target: '≥ 8,000',
    },
    {
      scenario: '  latency',
      metric: 'p50 / p99 ms',
      value: `${result.latency.p50} / ${result.latency.p99}`,
      target: 'p99 ≤ 10',
    },
  ]
}

/** GET /interns?limit=100 (pages of 100 out of 1,000 interns), 64 connections. */
async function benchList({ key }) {
  await createInterns(key, 'l' + randomBytes(2).toString('hex'), 1000, false)
  const result = await autocannon({
    url: `${base}/interns?limit=100`,
    connections: 64,
    duration: Number(process.env.BENCH_SECONDS ?? 10),
    headers: { authorization: `Bearer ${key}` },
  })
  return [
    {
      scenario: 'GET /interns?limit=100, 64 connections',
      metric: 'pages/s',
      value: (result['2xx'] / result.duration).toFixed(0),
      target: '≥ 2,000',
    },
    {
      scenario: '  latency',
      metric: 'p50 / p99 ms',
      value: `${result.latency.p50} / ${result.latency.p99}`,
      target: '',
    },
  ]
}

/** PUT /vault/secrets/{name} over 1,000 names (create, then replace), then GET pages of 100, 64 connections each. */
async function benchVault({ key }) {
  const seconds = Number(process.env.BENCH_SECONDS ?? 10)
  let n = 0
  const store = await autocannon({
    url: `${base}/vault/secrets/s0`,
    connections: 64,
    duration: seconds,
    method: 'PUT',
    headers: headers(key),
    requests: [
      {
        setupRequest: (req) => ({
          ...req,
          path: `/api/v1/vault/secrets/s${n % 1000}`,
          body: JSON.stringify({ value: `value-${n++}`, hosts: ['api.example.com'] }),
        }),
      },
    ],
  })
  const list = await autocannon({
    url: `${base}/vault/secrets?limit=100`,
    connections: 64,
    duration: seconds,
    headers: { authorization: `Bearer ${key}` },
  })
  return [
    {
      scenario: 'PUT /vault/secrets/{name} (1,000 names, create then replace), 64 connections',
      metric: 'stores/s',
      value: (store['2xx'] / store.duration).toFixed(0),
      target: '> creates/s',
    },
    { scenario: '  latency', metric: 'p50 / p99 ms', value: `${store.latency.p50} / ${store.latency.p99}`, target: '' },
    { scenario: '  non-2xx answers', metric: 'count', value: String(store.non2xx + store.errors), target: '0' },
    {
      scenario: 'GET /vault/secrets?limit=100 (of 1,000), 64 connections',
      metric: 'pages/s',
      value: (list['2xx'] / list.duration).toFixed(0),
      target: '',
    },
    { scenario: '  latency', metric: 'p50 / p99 ms', value: `${list.latency.p50} / ${list.latency.p99}`, target: '' },
  ]
}

/** One intern alone, create to running, measured by the client polling GET every 2 ms. */
async function benchSingle({ key }) {
  const runs = Number(process.env.BENCH_SINGLE_RUNS ?? 50)
  const prefix = 's' + randomBytes(2).toString('hex')
  const times = []
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now()
    const res = await fetch(`${base}/interns`, {
      method: 'POST',
      headers: headers(key),
      body: JSON.stringify({ name: nextName(prefix), provision: true }),
    })
    const { id } = await res.json()
    for (;;) {
      const got = await (await fetch(`${base}/interns/${id}`, { headers: headers(key) })).json()
      if (got.status === 'running') break
      if (got.status === 'failed') throw new Error(got.last_failure_message)
      await new Promise((r) => setTimeout(r, 2))
    }
    times.push(performance.now() - t0)
  }
  times.sort((a, b) => a - b)
  const pct = (p) => times[Math.min(times.length - 1, Math.floor(p * times.length))].toFixed(1)
  return [
    {
      scenario: `one intern alone, create → running (${runs} runs)`,
      metric: 'p50 / p99 ms',
      value: `${pct(0.5)} / ${pct(0.99)}`,
      target: 'p50 ≤ 100',
    },
  ]
}

/**
 * An intern's shell command round trip in its bubblewrap sandbox (`true`), sequentially: without
 * network, and granted the network (its egress proxy's socket bound in, the forwarder started first).
 */
/**
 * A sandboxed `true`: bare (namespaces and rlimits only), then confined as a runtime host on its
 * defaults confines (a control group per command and, as root, the unprivileged user), without and
 * with the network.
 */
async function benchSandbox() {
  const { runSandboxed, sandboxUnavailable, confineCommands } = await import('../apps/runtime/dist/sandbox.js')
  const { prepareConfinement, ownWorkspace, reachableBySandboxUser } =
    await import('../apps/runtime/dist/confinement.js')
  const { EgressProxies } = await import('../apps/runtime/dist/egress-proxy.js')
  const { RuntimeConfig } = await import('../packages/shared/dist/index.js')
  const why = sandboxUnavailable()
  if (why)
    return [
      {
        scenario: 'sandboxed `true` round trip',
        metric: 'p50 / p99 ms',
        value: `not measured: ${why}`,
        target: 'p50 ≤ 50',
      },
    ]
  const home = mkdtempSync(join(tmpdir(), 'roster-bench-ws-'))
  const workspace = join(home, 'workspace')
  mkdirSync(workspace)
  const { confinement } = prepareConfinement(
    RuntimeConfig.parse({ RUNTIME_TOKEN: 'x'.repeat(32), PORT: String(RUNTIME_PORT + 50) }),
  )
  if (confinement.user && (await reachableBySandboxUser(home, confinement.user))) delete confinement.user
  await ownWorkspace(workspace, confinement.user)
  const runs = Number(process.env.BENCH_SANDBOX_RUNS ?? 300)
  const proxies = new EgressProxies({
    dir: mkdtempSync(join(tmpdir(), 'roster-egress-')),
    allowPrivateNetworks: false,
    timeoutMs: 5_000,
    maxRequestBytes: 1024,
    socketOwner: confinement.user,
  })
  const egressSocket = await proxies.socketFor('00000000-0000-4000-8000-000000000000')
  const rows = []
  const how = `${confinement.cgroups ? `cgroup ${confinement.cgroups.kind}` : 'no control group'}, ${confinement.user ? `uid ${confinement.user.uid}` : "the host's user"}`
  for (const [label, extra, confined] of [
    [', bare', {}, undefined],
    [`, confined (${how})`, {}, confinement],
    [`, confined, granted the network`, { egressSocket }, confinement],
  ]) {
    confineCommands(confined)
    const times = []
    for (let i = 0; i < runs + 20; i++) {
      const t0 = performance.now()
      const res = await runSandboxed('true', { workspace, timeoutMs: 10_000, maxOutputBytes: 1024, ...extra })
      if (res.exitCode !== 0) throw new Error(`sandboxed true exited ${res.exitCode}: ${res.stderr}`)
      if (i >= 20) times.push(performance.now() - t0)
    }
    times.sort((a, b) => a - b)
    const pct = (p) => times[Math.min(times.length - 1, Math.floor(p * times.length))].toFixed(1)
    rows.push({
      scenario: `sandboxed \`true\` round trip${label} (${runs} runs after 20 unmeasured)`,
      metric: 'p50 / p99 ms',
      value: `${pct(0.5)} / ${pct(0.99)}`,
      target: 'p50 ≤ 50',
    })
  }
  confineCommands(undefined)
  await proxies.closeAll()
  return rows
}

/**
 * A chat turn's first chunk through the API, the runtime host and the intern's own model call,
 * against the same model call made directly to /responses (streamed, the same tools offered).
 */
async function benchChat({ key, hosts, hostAuth: authFor }) {
  const runs = Number(process.env.BENCH_CHAT_RUNS ?? 100)
  const intern = await (
    await fetch(`${base}/interns`, {
      method: 'POST',
      headers: headers(key),
      body: JSON.stringify({ name: 'bench-chat', provision: true }),
    })
  ).json()
  for (let i = 0; ; i++) {
    const got = await (await fetch(`${base}/interns/${intern.id}`, { headers: headers(key) })).json()
    if (got.status === 'running') break
    if (i > 500) throw new Error(`the intern did not run: ${got.status} ${got.last_failure_message}`)
    await new Promise((r) => setTimeout(r, 20))
  }
  const prompt = '[sim] say hello there from the bench'
  const tool = (name) => ({ type: 'function', name, parameters: { type: 'object', properties: {} } })
  /** Milliseconds from sending to the first chunk that holds text; the rest is read to the end. */
  const firstText = (url, body, isText, auth = headers(key)) =>
    firstTextOf(url, { headers: auth, body: JSON.stringify(body) }, isText)
  const direct = []
  const chat = []
  const host = []
  const hostAuth = await authFor(hosts[0].id)
  for (let i = 0; i < runs + 10; i++) {
    const d = await firstText(
      `${base}/responses`,
      {
        model: 'bench/chat',
        stream: true,
        input: [{ type: 'message', role: 'user', content: prompt }],
        tools: ['shell', 'ask_user', 'read_file', 'write_file', 'list_files', 'http_request'].map(tool),
      },
      (t) => t.includes('"response.output_text.delta"'),
    )
    const c = await firstText(
      `${base}/interns/${intern.id}/chat/completions`,
      { stream: true, session_id: `bench-${i}`, messages: [{ role: 'user', content: prompt }] },
      (t) => t.includes('"content":"hello'),
    )
    // The runtime host alone (the API's chat route skipped): where the added time goes.
    const h = await firstText(
      `${hosts[0].url}/v1/interns/${intern.id}/chat`,
      { session_id: `bench-host-${i}`, message: prompt },
      (t) => t.includes('"type":"text"'),
      hostAuth,
    )
    if (i >= 10) (direct.push(d), chat.push(c), host.push(h))
  }
  const p50 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  const p99 = (xs) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.99))]

  // 100 interns, one turn each, all at once on one host.
  const many = Number(process.env.BENCH_CHAT_INTERNS ?? 100)
  const ids = []
  for (let i = 0; i < many; i++) {
    const res = await fetch(`${base}/interns`, {
      method: 'POST',
      headers: headers(key),
      body: JSON.stringify({ name: `bench-many-${i}`, provision: true }),
    })
    ids.push((await res.json()).id)
  }
  for (let i = 0; ; i++) {
    const states = await Promise.all(
      ids.map(async (id) => (await (await fetch(`${base}/interns/${id}`, { headers: headers(key) })).json()).status),
    )
    if (states.every((st) => st === 'running')) break
    if (i > 600) throw new Error('the interns did not all run')
    await new Promise((r) => setTimeout(r, 50))
  }
  let errors = 0
  const firsts = await Promise.all(
    ids.map((id) =>
      firstText(
        `${base}/interns/${id}/chat/completions`,
        { stream: true, messages: [{ role: 'user', content: prompt }] },
        (t) => t.includes('"content":"hello'),
      ).catch(() => (errors++, NaN)),
    ),
  )
  const ok = firsts.filter((x) => !Number.isNaN(x))
  return [
    {
      scenario: `chat turn, first text chunk (${runs} turns, alternating with the direct call)`,
      metric: 'p50 / p99 ms',
      value: `${p50(chat).toFixed(2)} / ${p99(chat).toFixed(2)}`,
      target: '',
    },
    {
      scenario: '  the same model call direct to /responses, first text delta',
      metric: 'p50 / p99 ms',
      value: `${p50(direct).toFixed(2)} / ${p99(direct).toFixed(2)}`,
      target: '',
    },
    {
      scenario: '  added by the chat route and the runtime host',
      metric: 'p50 ms',
      value: (p50(chat) - p50(direct)).toFixed(2),
      target: '≤ 5',
    },
    {
      scenario: '  of which the runtime host (called directly, first text event)',
      metric: 'p50 ms',
      value: (p50(host) - p50(direct)).toFixed(2),
      target: '',
    },
    {
      scenario: `${many} concurrent chat turns across ${many} interns on one host: first text chunk`,
      metric: 'p50 / p99 ms',
      value: ok.length ? `${p50(ok).toFixed(1)} / ${p99(ok).toFixed(1)}` : '-',
      target: '',
    },
    { scenario: '  turns that failed', metric: 'count', value: String(errors), target: '0' },
  ]
}

/** Idle running interns on one runtime host: the host's memory per intern (placed, configured and started through the fleet, no turn running). */
async function benchDensity(ctx) {
  const n = Number(process.env.BENCH_DENSITY_INTERNS ?? 10_000)
  const host = ctx.hosts[0]
  const rss = () => Number(readFileSync(`/proc/${host.child.pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]) * 1024
  await new Promise((r) => setTimeout(r, 1000))
  const before = rss()
  const prefix = 'd' + randomBytes(2).toString('hex')
  await createInterns(ctx.key, prefix, n)
  const client = new pg.Client({ connectionString: ctx.db })
  await client.connect()
  while ((await countRunning(client, prefix)) < n) await new Promise((r) => setTimeout(r, 200))
  await client.end()
  await new Promise((r) => setTimeout(r, 2000))
  const after = rss()
  return [
    {
      scenario: `${n} idle running interns on one runtime host`,
      metric: 'host RSS before / after MiB',
      value: `${(before / 2 ** 20).toFixed(1)} / ${(after / 2 ** 20).toFixed(1)}`,
      target: '≥ 10,000 interns',
    },
    {
      scenario: '  memory per idle intern',
      metric: 'KB',
      value: ((after - before) / n / 1024).toFixed(1),
      target: '≤ 50',
    },
  ]
}

/** The raw single-row insert rate of the same Postgres, to compare machines. */
async function benchPgbench() {
  const name = 'roster_bench_pgbench'
  await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  await admin(`CREATE DATABASE ${name}`)
  const c = new pg.Client({ connectionString: dbUrl(name) })
  await c.connect()
  await c.query('CREATE TABLE t (id bigserial PRIMARY KEY, v int)')
  await c.end()
  const script = join(mkdtempSync(join(tmpdir(), 'pgbench-')), 'insert.sql')
  writeFileSync(script, 'INSERT INTO t (v) VALUES (1);\n')
  const url = new URL(dbUrl(name))
  const run = spawnSync(
    'pgbench',
    [
      '-n',
      '-c',
      '64',
      '-j',
      '2',
      '-T',
      '10',
      '-f',
      script,
      '-h',
      url.hostname,
      '-p',
      url.port || '5432',
      '-U',
      url.username || 'postgres',
      name,
    ],
    { encoding: 'utf8' },
  )
  await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  const tps = /tps = ([\d.]+)/.exec(run.stdout)?.[1]
  if (!tps) throw new Error(`pgbench failed: ${run.stderr || run.stdout}`)
  return [
    {
      scenario: 'pgbench: single-row INSERT, 64 clients, autocommit',
      metric: 'inserts/s',
      value: Number(tps).toFixed(0),
      target: '(reference)',
    },
  ]
}

// create-alone: the API with no worker (the outbox fills; nothing provisions), to separate the API's
// own capacity from the worker's share of this machine's two cores.
const scenarios = {
  'create-alone': [(ctx) => benchCreate(ctx, 'API alone (no worker running)'), { worker: false }],
  create: [benchCreate, { worker: true }],
  provision: [benchProvision, { worker: true }],
  'worker-alone': [benchWorkerAlone, { worker: false }],
  single: [benchSingle, { worker: true }],
  poll: [benchPoll, { worker: true }],
  list: [benchList, { worker: true }],
  vault: [benchVault, { worker: false }],
  // One user key starts every turn of the 100 at once: past KEY_CONCURRENCY (64) the API refuses
  // the rest 429, by design (the 36 "failed" turns of earlier runs); the host's capacity is measured.
  chat: [benchChat, { worker: true, gateway: true, apiEnv: { KEY_CONCURRENCY: '256' } }],
  gateway: [benchGatewayLatency, { worker: false, gateway: true }],
  ttfb: [benchGatewayTtfb, { worker: false, gateway: true }],
  soak: [benchGatewaySoak, { worker: false, gateway: true, named: true }],
  'fair-use': [
    (ctx) => benchFairUse({ ...ctx, makeKey: makeKeyWith(root, ctx.db), root, nodeFlags: nodeFlags() }),
    { worker: false, named: true },
  ],
  'fleet-provision': [(_ctx) => benchFleetProvision(fleetTools), { named: true, bare: true }],
  failover: [(_ctx) => benchFailover(fleetTools), { named: true, bare: true }],
  snapshots: [(_ctx) => benchSnapshots(fleetTools), { named: true, bare: true }],
  'fleet-chat': [(_ctx) => benchFleetChat(fleetTools), { named: true, bare: true }],
  generations: [benchGenerations, { worker: true, named: true }],
  'generations-scale': [benchGenerationsScale, { worker: true, named: true }],
  analytics: [benchAnalytics, { worker: false, named: true }],
  console: [benchConsole, { worker: true, gateway: true, named: true }],
  metrics: [(_ctx) => benchMetrics(root), { named: true, bare: true }],
  governance: [benchGovernance, { worker: true, gateway: true, named: true }],
  // Metrics on (the API's own listener), tracing off: everything a request pays for.
  floor: [benchFloor, { worker: true, gateway: true, named: true, beforeApi: true, apiEnv: { METRICS_PORT: '3998' } }],
  slack: [(ctx) => benchSlack({ ...ctx, base }), { worker: true, gateway: true, named: true, env: slackEnv }],
  schedules: [
    (ctx) => benchSchedules({ ...ctx, base }, { createInterns, countRunning }),
    { worker: true, gateway: true, runtimes: 3, named: true, env: { JOB_LOCK_MS: '5000' } },
  ],
  destinations: [benchDestinations, { worker: true, named: true, env: { DESTINATION_PRIVATE_NETWORKS: 'allow' } }],
  'doors-instructions': [
    benchDoorInstructions,
    { worker: false, gateway: true, named: true, apiWrap: callgrind.wrap, apiFlags: callgrind.nodeFlags },
  ],
}
// What the fleet's scenarios start their own stacks with (several each).
const fleetTools = { withStack, createInterns, countRunning, root, startBeforeStack: withBeforeStack }
const rows = []
const stopKeepingAwake = keepCoresAwake()
for (const [name, [fn, opts]] of Object.entries(scenarios)) {
  if ((only && only !== name) || (!only && opts.named)) continue
  process.stderr.write(`bench: ${name}…\n`)
  rows.push(...(opts.bare ? await fn() : await withStack(fn, opts)))
}
if (only === 'workers') {
  process.stderr.write('bench: workers (1, 2, 4 processes)…\n')
  rows.push(...(await benchWorkersScale()))
}
if (!only || only === 'density') {
  process.stderr.write('bench: density…\n')
  rows.push(...(await withStack(benchDensity, { worker: true })))
}
if (!only || only === 'sandbox') {
  process.stderr.write('bench: sandbox…\n')
  rows.push(...(await benchSandbox()))
}
if (!only || only === 'pgbench') {
  process.stderr.write('bench: pgbench…\n')
  rows.push(...(await benchPgbench()))
}
stopKeepingAwake()
await admin(`DROP DATABASE IF EXISTS ${BENCH_DB} WITH (FORCE)`)

const cols = ['scenario', 'metric', 'value', 'target']
const width = Object.fromEntries(cols.map((c) => [c, Math.max(c.length, ...rows.map((r) => String(r[c]).length))]))
const line = (r) => '| ' + cols.map((c) => String(r[c]).padEnd(width[c])).join(' | ') + ' |'
console.log(
  `machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}${keepingAwake ? ', cores kept awake (BENCH_AWAKE=1)' : ''}`,
)
console.log(line(Object.fromEntries(cols.map((c) => [c, c]))))
console.log('|' + cols.map((c) => '-'.repeat(width[c] + 2)).join('|') + '|')
for (const r of rows) console.log(line(r))
