#!/usr/bin/env node
// `npm start`: runs the whole system on this machine. Creates the database if missing, applies
// migrations, then starts the runtime host (RUNTIME_HOSTS of them: a fleet on one machine), the API
// and one worker, and prints where they listen.
// Settings come from the environment (docs/settings.md); without VAULT_MASTER_KEY a development key is
// made for the database on first use (dev-master-key.mjs), so a first run needs no setup.
import { spawn } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { deploy, defaultDatabaseUrl } from '../prisma/migrate.mjs'
import { nodeFlags } from './node-flags.mjs'
import { devMasterKey } from './dev-master-key.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const env = { ...process.env }
env.DATABASE_URL ||= defaultDatabaseUrl
env.REDIS_URL ||= 'redis://127.0.0.1:6379'
env.PORT ||= '3000'
env.RUNTIME_DATA_DIR ||= join(root, '.roster', 'runtime')
// Interns call Roster's own API for their model turns.
env.ROSTER_API_URL ||= `http://127.0.0.1:${env.PORT}/api/v1`

try {
  const applied = await deploy(env.DATABASE_URL)
  const where = new URL(env.DATABASE_URL)
  // A count, not the names: a first run applies dozens (`npm run db:migrate` names them).
  console.log(
    `roster: database ${where.pathname.slice(1)} on ${where.host} ${applied.length ? `migrated (${applied.length} migration${applied.length === 1 ? '' : 's'} applied)` : 'is up to date'}`,
  )
} catch (err) {
  console.error(`roster: cannot prepare the database at ${env.DATABASE_URL}: ${err.message}`)
  process.exit(1)
}

// Redis holds the queues: without it the processes would start and only log refused connections.
if (!env.REDIS_CLUSTER_NODES) {
  const { Redis } = await import('ioredis')
  const redis = new Redis(env.REDIS_URL, {
    lazyConnect: true,
    connectTimeout: 3_000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  })
  // The socket's own error (ECONNREFUSED…): connect() itself only says the connection closed.
  let cause
  redis.on('error', (err) => (cause ??= err))
  try {
    await redis.connect()
    await redis.ping()
  } catch (err) {
    const at = new URL(env.REDIS_URL)
    console.error(
      `roster: Redis cannot be reached at ${at.protocol}//${at.host} (${cause?.code ?? cause?.message ?? err.message}): start it (\`redis-server\`, \`sudo apt-get install redis-server\`, or \`docker run -p 6379:6379 redis\`) or set REDIS_URL to one that runs`,
    )
    process.exit(1)
  } finally {
    redis.disconnect()
  }
}

// Without VAULT_MASTER_KEY, the key of this database from the user's configuration directory (made
// on first use): it follows the database it sealed, whichever checkout starts Roster on it.
if (!env.VAULT_MASTER_KEY) {
  try {
    const dev = await devMasterKey({
      databaseUrl: env.DATABASE_URL,
      env,
      legacyFile: join(root, '.roster', 'vault-master-key'),
    })
    env.VAULT_MASTER_KEY = dev.key
    if (dev.generated)
      console.log(
        `roster: generated a vault master key for ${dev.identity}, kept in ${dev.path} (set VAULT_MASTER_KEY to use your own)`,
      )
  } catch (err) {
    console.error(`roster: ${err.message}`)
    process.exit(1)
  }
}

// The fleet's credential: runtime hosts join the fleet with it (the API gives each its own then);
// started together, the API and the hosts share one made for this run (it is not kept).
env.RUNTIME_TOKEN ||= randomBytes(32).toString('hex')
const { StartConfig, loadConfigOrExit } = await import('../packages/protocol/dist/config.js')
const start = loadConfigOrExit(StartConfig, 'roster', env)
const hosts = start.RUNTIME_HOSTS

// The models: a provider key in the environment (or a reachable Ollama) brings its provider's
// models; MODEL_CATALOGUE adds to them and overrides. With neither, the demo catalogue of simulator
// models (one per provider protocol), so a newcomer's first request works: named as the simulator
// everywhere they appear, and saying what they are.
const { environmentCatalogue, simulatorCatalogue } = await import('../packages/gateway/dist/index.js')
const found = await environmentCatalogue(env)
for (const problem of found.problems) console.error(`roster: ${problem}`)
let simulator = false
if (!env.MODEL_CATALOGUE && found.models.length === 0) {
  env.SIM_PORT = String(start.SIM_PORT)
  // One file per simulator: another `npm start` in this checkout (its own SIM_PORT) must not
  // repoint this instance's models at its simulator, which ends with it.
  const file = join(root, '.roster', `demo-catalogue-${env.SIM_PORT}.json`)
  mkdirSync(dirname(file), { recursive: true })
  writeFileSync(file, JSON.stringify(simulatorCatalogue(`http://127.0.0.1:${env.SIM_PORT}`), null, 2) + '\n')
  env.MODEL_CATALOGUE = file
  simulator = true
}

// With OPERATOR_TOKEN set, the operator's ways in open: the console's fleet page (signed in with the
// token) and the worker's queue dashboard, which the fleet page links to.
if (env.OPERATOR_TOKEN) {
  env.OPERATOR_PORT ||= '3200'
  env.OPERATOR_DASHBOARD_URL ||= `http://${env.HOST ?? '127.0.0.1'}:${env.OPERATOR_PORT}/queues`
}

const children = []
const flags = nodeFlags(env)
function run(name, script, extra = {}) {
  const child = spawn(process.execPath, [...flags, join(root, script)], {
    env: { ...env, ...extra },
    stdio: ['ignore', 'inherit', 'inherit'],
  })
  child.on('exit', (code, signal) => {
    if (!stopping) {
      console.error(`roster: ${name} exited (${signal ?? code}); stopping everything`)
      stop(1)
    }
  })
  children.push(child)
}

let stopping = false
function stop(code = 0) {
  if (stopping) return
  stopping = true
  for (const c of children) c.kill('SIGTERM')
  Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r() : c.once('exit', r))))).then(() =>
    process.exit(code),
  )
}
process.on('SIGINT', () => stop(0))
process.on('SIGTERM', () => stop(0))

if (simulator)
  run('upstream simulator', 'packages/upstream-sim/dist/main.js', {
    PORT: env.SIM_PORT,
    SIM_TOKENS_PER_SECOND: String(start.SIM_TOKENS_PER_SECOND),
    // The demo: without a `[sim]` script it says what it is and how to connect a real model.
    SIM_DEMO: '1',
  })
// ROSTER_METRICS=1: each process serves Prometheus metrics on the ports deploy/prometheus/prometheus.yml scrapes.
const metrics = (port) => (start.ROSTER_METRICS === '1' ? { METRICS_PORT: port } : {})
// Runtime hosts hold no master key and no database credential: they reach the fleet through the API.
for (let i = 0; i < hosts; i++) {
  const port = String(start.RUNTIME_PORT + i)
  run(`runtime ${i + 1}`, 'apps/runtime/dist/main.js', {
    PORT: port,
    RUNTIME_HOST_ID: env.RUNTIME_HOST_ID && hosts === 1 ? env.RUNTIME_HOST_ID : `runtime-${port}`,
    RUNTIME_DATA_DIR: hosts === 1 ? env.RUNTIME_DATA_DIR : join(env.RUNTIME_DATA_DIR, `host-${i + 1}`),
    DATABASE_URL: '',
    VAULT_MASTER_KEY: '',
    ...(i === 0 ? metrics('9466') : {}),
  })
}
run('api', 'apps/api/dist/main.js', metrics('9464'))
run('worker', 'apps/worker/dist/main.js', metrics('9465'))

// The summary comes last, once the API answers (its readiness: Postgres and Redis reached), so it is
// neither printed before Roster is ready nor buried under the processes' start-up logs.
const base = `http://${env.HOST && env.HOST !== '0.0.0.0' ? env.HOST : '127.0.0.1'}:${env.PORT}`
const readyBy = Date.now() + 120_000
while (!stopping) {
  const ready = await fetch(`${base}/ready`).then(
    (r) => r.ok,
    () => false,
  )
  if (ready) break
  if (Date.now() > readyBy) {
    console.error(`roster: the API has not answered ${base}/ready for two minutes; its log above says why`)
    break
  }
  await new Promise((r) => setTimeout(r, 250))
}
if (!stopping) {
  const lines = [
    '',
    `Roster is running.`,
    `  API         ${base}/api/v1 (OpenAPI at ${base}/api/v1/openapi.json)`,
    `  console     ${base}/console/ (${
      env.OIDC_ISSUER
        ? `single sign-on through ${env.OIDC_ISSUER}, or an API key`
        : 'sign in with an API key; set OIDC_ISSUER for single sign-on, docs/console.md'
    })`,
    `  runtime     ${hosts} host(s) from port ${start.RUNTIME_PORT}`,
    simulator
      ? `  models      no provider key or MODEL_CATALOGUE, so the demo: roster-sim/chat, roster-sim/responses and roster-sim/messages, answered by the upstream simulator on port ${env.SIM_PORT} (not a real model; set OPENAI_API_KEY, ANTHROPIC_API_KEY, OPENROUTER_API_KEY, GROQ_API_KEY, MISTRAL_API_KEY or GEMINI_API_KEY, or run Ollama, for real ones)`
      : `  models      from ${[...found.sources, ...(env.MODEL_CATALOGUE ? [env.MODEL_CATALOGUE] : [])].join(', ')} (GET ${base}/api/v1/models lists them)`,
    env.OPERATOR_TOKEN
      ? `  operators   sign in to the console with OPERATOR_TOKEN (the fleet page); the queue dashboard on ${env.OPERATOR_DASHBOARD_URL}`
      : '  operators   set OPERATOR_TOKEN (32+ characters) for the fleet page and the queue dashboard',
    '',
    'Next: make keys with `npm run -s admin -- bootstrap` (in another terminal). Ctrl-C stops everything.',
    '',
  ]
  console.log(lines.join('\n'))
}
