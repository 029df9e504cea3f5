import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomUUID } from 'node:crypto'
import { redisUrl } from './env.js'
import { freePort, NodeProcess, repoRoot } from './node-process.js'

// The whole system (or one API) as real processes of the built code, for tests that kill, pause and
// restart them.

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
  const { hostCredential, hostCredentialKey } = await import('@roster/shared/fleet')
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
  const metricsPort = async (): Promise<{ METRICS_PORT?: string }> =>
    opts.metrics ? { METRICS_PORT: String(await freePort()) } : {}
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
      VAULT_MASTER_KEY: STACK_MASTER_KEY,
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
