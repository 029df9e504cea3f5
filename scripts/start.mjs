#!/usr/bin/env node
// `npm start`: runs the whole system on this machine. Creates the database if missing, applies
// migrations, then starts the runtime host, the API and one worker, and prints where they listen.
// Settings come from the environment (see README); a local vault master key is generated once
// into .roster/ when VAULT_MASTER_KEY is unset, so a first run needs no setup.
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { deploy, defaultDatabaseUrl } from '../prisma/migrate.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const env = { ...process.env }
env.DATABASE_URL ||= defaultDatabaseUrl
env.REDIS_URL ||= 'redis://127.0.0.1:6379'
env.PORT ||= '3000'
env.RUNTIME_PORT ||= '3100'
env.RUNTIME_URL ||= `http://127.0.0.1:${env.RUNTIME_PORT}`
env.RUNTIME_DATA_DIR ||= join(root, '.roster', 'runtime')

if (!env.VAULT_MASTER_KEY) {
  const file = join(root, '.roster', 'vault-master-key')
  if (!existsSync(file)) {
    mkdirSync(dirname(file), { recursive: true })
    writeFileSync(file, randomBytes(32).toString('hex') + '\n', { mode: 0o600 })
    console.log(`roster: generated a local vault master key in ${file} (set VAULT_MASTER_KEY to use your own)`)
  }
  env.VAULT_MASTER_KEY = readFileSync(file, 'utf8').trim()
}

try {
  const applied = await deploy(env.DATABASE_URL)
  const where = new URL(env.DATABASE_URL)
  console.log(`roster: database ${where.pathname.slice(1)} on ${where.host} ${applied.length ? `migrated (${applied.join(', ')})` : 'is up to date'}`)
} catch (err) {
  console.error(`roster: cannot prepare the database at ${env.DATABASE_URL}: ${err.message}`)
  process.exit(1)
}

const children = []
function run(name, app, extra = {}) {
  const child = spawn(process.execPath, [join(root, 'apps', app, 'dist', 'main.js')], {
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
  Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r() : c.once('exit', r))))).then(() => process.exit(code))
}
process.on('SIGINT', () => stop(0))
process.on('SIGTERM', () => stop(0))

run('runtime', 'runtime', { PORT: env.RUNTIME_PORT })
run('api', 'api')
run('worker', 'worker')
console.log(`roster: API on http://${env.HOST ?? '127.0.0.1'}:${env.PORT}/api/v1 (OpenAPI at /api/v1/openapi.json), runtime host on ${env.RUNTIME_URL}`)
console.log('roster: make keys with `npm run -s admin -- bootstrap`; Ctrl-C stops everything')
