import { spawn, type ChildProcess } from 'node:child_process'
import { createServer } from 'node:net'
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomUUID } from 'node:crypto'
import { waitFor } from './wait.js'
import { redisUrl } from './env.js'

export const repoRoot = join(import.meta.dirname, '..', '..', '..')

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

/** A child process whose output is kept, for tests that start, kill and restart real processes. */
export class NodeProcess {
  child: ChildProcess | undefined
  output = ''
  constructor(
    readonly name: string,
    readonly script: string,
    /** Merged over this process's environment; a key set to `undefined` is removed from it. */
    readonly env: Record<string, string | undefined>,
  ) {}

  start(): this {
    this.output = ''
    const merged: Record<string, string | undefined> = { ...process.env, LOG_LEVEL: 'info', ...this.env }
    const env = Object.fromEntries(Object.entries(merged).filter((e): e is [string, string] => e[1] !== undefined))
    const child = spawn(process.execPath, [this.script], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    child.stdout!.on('data', (d) => (this.output += d))
    child.stderr!.on('data', (d) => (this.output += d))
    this.child = child
    return this
  }

  get running(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null
  }

  /**
   * Waits for the process to print `pattern`. A process that exits first fails the wait at once, and
   * either failure carries the end of what it printed (a port taken, a bad setting), not a bare timeout.
   */
  async waitForOutput(pattern: RegExp, timeoutMs = 30_000): Promise<void> {
    const tail = () => this.output.slice(-2_000)
    try {
      await waitFor(
        () => {
          if (pattern.test(this.output)) return true
          if (this.child && !this.running)
            throw new Error(
              `${this.name} exited (${this.child.exitCode ?? this.child.signalCode}) before printing ${pattern}`,
            )
          return false
        },
        { timeoutMs, what: `${this.name} to print ${pattern}` },
      )
    } catch (err) {
      throw new Error(`${(err as Error).message}; it printed:\n${tail()}`, { cause: err })
    }
  }

  /** Resolves with the exit code (null: a signal) once the process has exited, at once if it has. */
  exited(): Promise<number | null> {
    const child = this.child
    if (!child) return Promise.resolve(null)
    if (!this.running) return Promise.resolve(child.exitCode)
    return new Promise((resolve) => child.once('exit', (code) => resolve(code)))
  }

  async kill(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    const child = this.child
    if (!child || !this.running) return child?.exitCode ?? null
    const exited = this.exited()
    child.kill(signal)
    return exited
  }
}

/** A model catalogue written to a file of its own, for a stack's MODEL_CATALOGUE. */
export function catalogueFile(catalogue: unknown): string {
  const file = join(mkdtempSync(join(tmpdir(), 'roster-catalogue-')), 'models.json')
  writeFileSync(file, JSON.stringify(catalogue))
  return file
}

const dist = (app: string) => join(repoRoot, 'apps', app, 'dist', 'main.js')

export interface Stack {
  apiUrl: string
  /** Every API process's base URL (more than one with `apis`). */
  apiUrls: string[]
  runtimeUrl: string
  /** A call to the (first) runtime host's control API, with its fleet credential (as a worker makes it). */
  runtimeFetch(path: string, init?: RequestInit, host?: number): Promise<Response>
  api: NodeProcess
  /** The first runtime host. */
  runtime: NodeProcess
  /** Every runtime host (more than one with `runtimes`), each with its fleet id, URL, port and data directory. */
  runtimes: {
    process: NodeProcess
    id: string
    url: string
    port: number
    dataDir: string
    env: Record<string, string>
  }[]
  /** Where each process serves its metrics (with `metrics: true`). */
  metricsPorts: { api?: number; runtime?: number; workers: number[] }
  workers: NodeProcess[]
  env: Record<string, string>
  addWorker(extraEnv?: Record<string, string>): Promise<NodeProcess>
  stop(): Promise<void>
}

export interface StackOptions {
  databaseUrl: string
  redisUrl?: string
  workers?: number
  /** API processes (default 1): stack.apiUrls has each one's base URL, stack.apiUrl the first's. */
  apis?: number
  env?: Record<string, string>
  workerEnv?: Record<string, string>
  /** Each process serves Prometheus metrics on a port of its own (stack.metricsPorts). */
  metrics?: boolean
  /** Runtime hosts (default 1), each joining the fleet under its own id. */
  runtimes?: number
  /** Settings of the runtime hosts alone. */
  runtimeEnv?: Record<string, string>
}

/** The master key the stacks' API and workers hold (no runtime host does). */
export const STACK_MASTER_KEY = 'a'.repeat(64)

/** The credential the workers and the API present to a runtime host, for its current epoch (read from the record). */
export async function runtimeCredential(databaseUrl: string, hostId: string): Promise<string> {
  const { hostCredential, hostCredentialKey } = await import('@roster/shared')
  const { default: pg } = await import('pg')
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    const { rows } = await client.query<{ epoch: number }>('SELECT epoch FROM runtime_hosts WHERE id = $1', [hostId])
    if (!rows[0]) throw new Error(`runtime host ${hostId} has not joined the fleet`)
    return hostCredential(hostCredentialKey(Buffer.from(STACK_MASTER_KEY, 'hex')), hostId, rows[0].epoch)
  } finally {
    await client.end()
  }
}

/**
 * The whole system as real processes (built code, real HTTP between them) over the given database,
 * with a private queue prefix so stacks never share jobs. The ports are found free before the
 * processes bind them, so another process may take one in between (an outgoing connection's
 * ephemeral port, under a busy suite): a stack whose process could not bind its port is started
 * again on new ports.
 */
export async function startStack(opts: StackOptions): Promise<Stack> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startStackOnce(opts)
    } catch (err) {
      if (attempt >= 3 || !/EADDRINUSE/.test((err as Error).message)) throw err
    }
  }
}

async function startStackOnce(opts: StackOptions): Promise<Stack> {
  const apiPort = await freePort()
  const metricsPort = async () => (opts.metrics ? { METRICS_PORT: String(await freePort()) } : {})
  const metricsPorts: Stack['metricsPorts'] = { workers: [] }
  const env: Record<string, string> = {
    DATABASE_URL: opts.databaseUrl,
    REDIS_URL: opts.redisUrl ?? redisUrl(),
    QUEUE_PREFIX: `{t-${randomUUID().slice(0, 8)}}`,
    VAULT_MASTER_KEY: STACK_MASTER_KEY,
    RUNTIME_TOKEN: randomUUID() + randomUUID(),
    ROSTER_API_URL: `http://127.0.0.1:${apiPort}/api/v1`,
    ...opts.env,
  }
  // Runtime hosts hold neither the master key nor a database credential.
  const { DATABASE_URL: _db, VAULT_MASTER_KEY: _key, REDIS_URL: _redis, ...hostEnv } = env
  const runtimes: Stack['runtimes'] = []
  for (let i = 0; i < (opts.runtimes ?? 1); i++) {
    const port = await freePort()
    // Unique to this stack (a port is reused by later stacks over the same database, an id must not be).
    const id = `rt-${port}-${randomUUID().slice(0, 6)}`
    const dataDir =
      opts.env?.RUNTIME_DATA_DIR && i === 0 ? opts.env.RUNTIME_DATA_DIR : mkdtempSync(join(tmpdir(), 'roster-runtime-'))
    const extra = i === 0 ? await metricsPort() : {}
    if (i === 0) metricsPorts.runtime = extra.METRICS_PORT ? Number(extra.METRICS_PORT) : undefined
    // Room for every intern a test makes, unless the test is about room.
    const own = {
      ...hostEnv,
      RUNTIME_CAPACITY: '10000',
      ...opts.runtimeEnv,
      ...extra,
      PORT: String(port),
      RUNTIME_HOST_ID: id,
      RUNTIME_DATA_DIR: dataDir,
    }
    // Not inherited either (the test runner's own environment may carry both).
    const unset = { DATABASE_URL: undefined, VAULT_MASTER_KEY: undefined }
    runtimes.push({
      process: new NodeProcess(i === 0 ? 'runtime' : `runtime-${i + 1}`, dist('runtime'), { ...own, ...unset }).start(),
      id,
      url: `http://127.0.0.1:${port}`,
      port,
      dataDir,
      env: own,
    })
  }
  env.RUNTIME_DATA_DIR = runtimes[0]!.dataDir
  const runtime = runtimes[0]!.process
  const runtimeUrl = runtimes[0]!.url
  const apiMetrics = await metricsPort()
  metricsPorts.api = apiMetrics.METRICS_PORT ? Number(apiMetrics.METRICS_PORT) : undefined
  const api = new NodeProcess('api', dist('api'), { ...env, ...apiMetrics, PORT: String(apiPort) }).start()
  // More API processes over the same database and Redis (without metrics: those belong to the first).
  const moreApis: { process: NodeProcess; port: number }[] = []
  for (let i = 1; i < (opts.apis ?? 1); i++) {
    const port = await freePort()
    moreApis.push({
      process: new NodeProcess(`api-${i + 1}`, dist('api'), { ...env, PORT: String(port) }).start(),
      port,
    })
  }
  const workers: NodeProcess[] = []
  const addWorker = async (extraEnv: Record<string, string> = {}) => {
    const workerMetrics = await metricsPort()
    if (workerMetrics.METRICS_PORT) metricsPorts.workers.push(Number(workerMetrics.METRICS_PORT))
    const worker = new NodeProcess(`worker-${workers.length + 1}`, dist('worker'), {
      ...env,
      ...opts.workerEnv,
      ...workerMetrics,
      ...extraEnv,
    }).start()
    workers.push(worker)
    await worker.waitForOutput(/worker started/)
    return worker
  }
  const stop = async () => {
    await Promise.all([
      api.kill(),
      ...runtimes.map((r) => r.process.kill()),
      ...moreApis.map((a) => a.process.kill()),
      ...workers.map((w) => w.kill()),
    ])
  }
  try {
    await Promise.all([
      ...runtimes.map((r) => r.process.waitForOutput(/listening/)),
      api.waitForOutput(/listening/),
      ...moreApis.map((a) => a.process.waitForOutput(/listening/)),
    ])
    // Each host joins the fleet once the API is up (it tries again until it can).
    await Promise.all(runtimes.map((r) => r.process.waitForOutput(/joined the fleet/)))
    for (let i = 0; i < (opts.workers ?? 1); i++) await addWorker()
  } catch (err) {
    await stop()
    throw err
  }
  return {
    apiUrl: `http://127.0.0.1:${apiPort}/api/v1`,
    apiUrls: [apiPort, ...moreApis.map((a) => a.port)].map((port) => `http://127.0.0.1:${port}/api/v1`),
    runtimeUrl,
    runtimeFetch: async (path, init = {}, host = 0) => {
      const at = runtimes[host]!
      const credential = await runtimeCredential(opts.databaseUrl, at.id)
      return fetch(`${at.url}${path}`, {
        ...init,
        headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${credential}` },
      })
    },
    api,
    runtime,
    runtimes,
    workers,
    env,
    metricsPorts,
    addWorker,
    stop,
  }
}

/**
 * A private redis-server on its own port, which a test may stop (SIGKILL) and start again. Without
 * `persist` it comes back empty; with it, from its append-only file (as docker-compose.yml runs
 * Redis: a killed process loses nothing it acknowledged).
 */
export async function startRedisServer(
  opts: { persist?: boolean } = {},
): Promise<{ url: string; stop(): Promise<void>; start(): Promise<void> }> {
  const port = await freePort()
  const dir = opts.persist ? mkdtempSync(join(tmpdir(), 'roster-redis-')) : undefined
  let child: ChildProcess | undefined
  const start = async () => {
    const persistence = dir ? ['--appendonly', 'yes', '--dir', dir] : ['--appendonly', 'no']
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', ...persistence], {
      stdio: 'ignore',
    })
    // Not installed: said at once (the tests that need it check first: needs.ts), not as a wait that times out.
    const failed = new Promise<never>((_, reject) =>
      child!.once('error', (err) => reject(new Error(`redis-server could not be started: ${err.message}`))),
    )
    failed.catch(() => {})
    const { Redis } = await import('ioredis')
    const up = waitFor(
      async () => {
        const probe = new Redis(port, '127.0.0.1', {
          lazyConnect: true,
          maxRetriesPerRequest: 0,
          retryStrategy: () => null,
        })
        probe.on('error', () => {})
        try {
          await probe.connect()
          return (await probe.ping()) === 'PONG'
        } catch {
          return false
        } finally {
          probe.disconnect()
        }
      },
      { timeoutMs: 10_000, what: `redis-server on port ${port}` },
    )
    await Promise.race([up, failed])
  }
  const stop = async () => {
    if (!child || child.exitCode !== null) return
    const exited = new Promise((r) => child!.once('exit', r))
    child.kill('SIGKILL')
    await exited
  }
  await start()
  return { url: `redis://127.0.0.1:${port}`, stop, start }
}

/** A minimal HTTP client for a stack's API, for tests that drive real processes. */
export function apiClient(baseUrl: string, key: string) {
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
  return {
    async createIntern(body: unknown, extra: Record<string, string> = {}) {
      const res = await fetch(`${baseUrl}/interns`, {
        method: 'POST',
        headers: { ...headers, ...extra },
        body: JSON.stringify(body),
      })
      return { status: res.status, body: (await res.json()) as Record<string, any> }
    },
    async getIntern(id: string) {
      const res = await fetch(`${baseUrl}/interns/${id}`, { headers })
      return { status: res.status, body: (await res.json()) as Record<string, any> }
    },
  }
}

export interface ApiProcess {
  /** The API's base URL (…/api/v1). */
  url: string
  port: number
  process: NodeProcess
  /** Where it serves its metrics (with `metrics: true`). */
  metricsPort?: number
  stop(): Promise<void>
}

/**
 * One API process alone (built code, its own port), over the given database: for tests of what one
 * process holds and refuses under load, where an in-process app would share the test's own limits.
 */
export async function startApi(opts: {
  databaseUrl: string
  env?: Record<string, string>
  metrics?: boolean
}): Promise<ApiProcess> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort()
    const metricsPort = opts.metrics ? await freePort() : undefined
    const api = new NodeProcess('api', dist('api'), {
      DATABASE_URL: opts.databaseUrl,
      REDIS_URL: redisUrl(),
      QUEUE_PREFIX: `{t-${randomUUID().slice(0, 8)}}`,
      VAULT_MASTER_KEY: 'a'.repeat(64),
      PORT: String(port),
      ...(metricsPort ? { METRICS_PORT: String(metricsPort) } : {}),
      ...opts.env,
    }).start()
    try {
      await api.waitForOutput(/listening/)
    } catch (err) {
      await api.kill()
      if (attempt < 3 && /EADDRINUSE/.test((err as Error).message)) continue
      throw err
    }
    return {
      url: `http://127.0.0.1:${port}/api/v1`,
      port,
      process: api,
      metricsPort,
      stop: async () => void (await api.kill()),
    }
  }
}

/** The value of one sample of a Prometheus text exposition (0 when absent), e.g. `metric(text, 'x_total', { reason: 'a' })`. */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  let total = 0
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue
    total += Number(line.slice(line.lastIndexOf(' ') + 1))
  }
  return total
}

/** A process's metrics, scraped now. */
export async function scrape(port: number): Promise<string> {
  return (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
}

/**
 * The command lines of this machine's processes (as `ps -eo args` prints them), read from /proc:
 * no procps needed (a minimal Debian has none). Processes that end while being read are skipped.
 */
export function processCommandLines(): string[] {
  const lines: string[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean)
      if (args.length) lines.push(args.join(' '))
    } catch {
      // Gone, or not ours to read.
    }
  }
  return lines
}

/** Every file under a directory (links not followed). */
export function filesUnder(dir: string): string[] {
  const out: string[] = []
  const pending = [dir]
  while (pending.length) {
    const at = pending.pop()!
    let entries
    try {
      entries = readdirSync(at, { withFileTypes: true })
    } catch {
      continue
    }
    for (const e of entries) {
      const path = join(at, e.name)
      if (e.isDirectory()) pending.push(path)
      else if (e.isFile()) out.push(path)
    }
  }
  return out
}
