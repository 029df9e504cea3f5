import { isIP } from 'node:net'
import { z } from 'zod'
import { listenerSettings } from './listener-limits.js'

// One schema per process, parsed once at start-up. This is the only module that reads process.env.

const flag = z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => v === 'true' || v === '1' || v === 'yes')
const list = z.string().transform((v) =>
  v
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean),
)
const port = z.coerce.number().int().min(0).max(65535)
const ms = z.coerce.number().int().positive()
/** The credential the workers present to the runtime host's control API (shared by both). */
const runtimeToken = z.string().min(32, 'must be at least 32 characters, e.g. from `openssl rand -hex 32`')
const logLevel = z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info')

const postgresUrlValue = z
  .string()
  .url()
  .refine((u) => /^postgres(ql)?:\/\//.test(u), 'must be a postgres:// or postgresql:// URL')
const postgresUrl = postgresUrlValue.default('postgresql://postgres@127.0.0.1:5432/roster')
const redisUrl = z
  .string()
  .url()
  .refine((u) => /^rediss?:\/\//.test(u), 'must be a redis:// or rediss:// URL')
  .default('redis://127.0.0.1:6379')

/**
 * The vault master key: 32 bytes, as 64 hex characters or base64. It is optional at start-up on
 * purpose: without it the API still serves reads, and intern creation answers 500
 * configuration_error, which tells the caller that retrying will not help.
 */
const masterKey = z
  .string()
  .optional()
  .transform((v, ctx) => {
    if (v === undefined || v === '') return undefined
    const bytes = /^[0-9a-fA-F]{64}$/.test(v) ? Buffer.from(v, 'hex') : Buffer.from(v, 'base64')
    if (bytes.length !== 32) {
      ctx.addIssue({ code: 'custom', message: 'must be 32 bytes, as 64 hex characters or base64' })
      return z.NEVER
    }
    return bytes
  })

/** What every process offers operators: Prometheus metrics on a listener of their own (GET /metrics), apart from API traffic (port 0: none), and traces. */
const metricsSettings = {
  METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  METRICS_PORT: port.default(0),
  /** OpenTelemetry traces over OTLP/HTTP to this collector (the SDK reads its other OTEL_* settings itself); unset: none. */
  OTEL_EXPORTER_OTLP_ENDPOINT: z
    .url()
    .refine((u) => /^https?:\/\//.test(u), 'must be an http:// or https:// URL')
    .optional(),
}

const shared = {
  DATABASE_URL: postgresUrl,
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
  /** Named prepared statements; turn off behind a transaction-mode pooler (e.g. PgBouncer). */
  DATABASE_PREPARED_STATEMENTS: flag.default(true),
  REDIS_URL: redisUrl,
  /**
   * Redis Cluster: its nodes (host:port, comma-separated; a few are enough, the rest are
   * discovered). Set, every connection is a cluster client; REDIS_URL then gives only the
   * credentials and TLS (rediss://) the nodes share.
   */
  REDIS_CLUSTER_NODES: z
    .string()
    .optional()
    .transform((v, ctx) => {
      const nodes = (v ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
      if (!nodes.length) return undefined
      const parsed = nodes.map((n) => /^(\[[0-9a-fA-F:]+\]|[^:\s]+):(\d{1,5})$/.exec(n))
      const bad = nodes.filter((_, i) => !parsed[i] || Number(parsed[i]![2]) > 65535)
      if (bad.length) {
        ctx.addIssue({
          code: 'custom',
          message: `must be host:port entries separated by commas (bad: ${bad.join(', ')})`,
        })
        return z.NEVER
      }
      return parsed.map((m) => ({ host: m![1]!.replace(/^\[|\]$/g, ''), port: Number(m![2]) }))
    }),
  /** BullMQ key prefix. The braces are a Redis Cluster hash tag: every queue key lands in one slot. */
  QUEUE_PREFIX: z
    .string()
    .regex(/^\{[^{}]+\}$/, 'must be a hash tag such as {roster}')
    .default('{roster}'),
  LOG_LEVEL: logLevel,
  ...metricsSettings,
}

/** Fixed answers for names (`name=address,…`), instead of DNS: tests map their hostnames to the loopback. */
const egressHosts = z
  .string()
  .default('')
  .transform((v, ctx) => {
    const map: Record<string, string> = {}
    for (const pair of v
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean)) {
      const [name, address] = pair.split('=')
      if (!name || !address) ctx.addIssue({ code: 'custom', message: `${pair} is not name=address` })
      else map[name.toLowerCase()] = address
    }
    return map
  })

/** The fleet of runtime hosts, as the API and the workers keep its record. */
const fleetSettings = {
  /** A runtime host that has not beaten for this long is dead: its interns are placed on other hosts. */
  FLEET_DEAD_AFTER_MS: z.coerce.number().int().min(1_000).default(15_000),
  /** How often a host beats (told to it when it joins). */
  FLEET_HEARTBEAT_MS: z.coerce.number().int().min(100).default(2_000),
}

/** What one key, one workspace and one client may hold of an API process (the README's "Limits and fair use"). */
const fairUseSettings = {
  /** Requests and streams one key may have open at once on one API process (the model doors, WebSocket requests, intern chat); 0: no limit. */
  KEY_CONCURRENCY: z.coerce.number().int().min(0).default(64),
  /** While the process is loaded, each key's share shrinks, never below this; 0: it never shrinks. */
  KEY_CONCURRENCY_UNDER_LOAD: z.coerce.number().int().min(0).default(8),
  /** The same for all the keys of one workspace; 0: no limit. */
  WORKSPACE_CONCURRENCY: z.coerce.number().int().min(0).default(256),
  /** How long a request refused for its key's or workspace's share waits for its 429 (a client retrying at once must not make its refusals a load). */
  REFUSAL_DELAY_MS: z.coerce.number().int().min(0).max(10_000).default(1_000),
  /** Requests one key may make per minute, counted across every API process (Redis); 0 (the default): no limit. */
  KEY_REQUESTS_PER_MINUTE: z.coerce.number().int().min(0).default(0),
  /** Request-body bytes all clients of one process may have in flight; past it 503 overloaded. */
  REQUEST_BODY_BYTES: z.coerce
    .number()
    .int()
    .min(1024 * 1024)
    .default(256 * 1024 * 1024),
  /** Connections to one provider origin, and how many of them one key's calls may hold (the rest wait, keys served in turn). */
  UPSTREAM_CONNECTIONS: z.coerce.number().int().min(1).max(10_000).default(256),
  UPSTREAM_CONNECTIONS_PER_KEY: z.coerce.number().int().min(1).max(10_000).default(64),
  /** WebSocket connections (the /responses transport) one key may hold on one process, and all keys together. */
  WS_CONNECTIONS_PER_KEY: z.coerce.number().int().min(1).default(8),
  WS_CONNECTIONS: z.coerce.number().int().min(1).default(512),
  /** Requests one WebSocket connection may have waiting behind the one being answered, and the bytes all of them may hold in one process. */
  WS_WAITING_MESSAGES: z.coerce.number().int().min(0).max(64).default(16),
  WS_WAITING_BYTES: z.coerce
    .number()
    .int()
    .min(1024 * 1024)
    .default(64 * 1024 * 1024),
  /** An idle WebSocket (no request running or waiting) is closed after this long; every connection is pinged this often and closed if it does not answer. */
  WS_IDLE_TIMEOUT_MS: ms.default(300_000),
  WS_PING_MS: ms.default(30_000),
  /** Refusals of unknown keys one client address may cause per minute before its never-seen keys get 429; 0: no limit. */
  UNKNOWN_KEYS_PER_MINUTE: z.coerce.number().int().min(0).default(600),
  /** Lookups of keys never seen valid that run at once (the rest wait in turn), and the keys whose answers are cached. */
  AUTH_UNKNOWN_LOOKUPS: z.coerce.number().int().min(1).max(64).default(4),
  AUTH_CACHE_ENTRIES: z.coerce.number().int().min(100).default(10_000),
  /**
   * Fastify's trustProxy: behind a load balancer, whose X-Forwarded-For names the client (`true`: any
   * hop; or addresses and ranges, comma-separated, e.g. `loopback,10.0.0.0/8`). Unset: the peer's address.
   */
  TRUST_PROXY: z
    .string()
    .optional()
    .transform((v, ctx): boolean | string => {
      if (v === undefined || v === '' || v === 'false') return false
      if (v === 'true') return true
      const bad = v
        .split(',')
        .map((s) => s.trim())
        .filter((s) => !['loopback', 'linklocal', 'uniquelocal'].includes(s) && !isIP(s.replace(/\/\d{1,3}$/, '')))
      if (bad.length) {
        ctx.addIssue({
          code: 'custom',
          message: `must be true, false, or addresses and ranges (or loopback, linklocal, uniquelocal) separated by commas (bad: ${bad.join(', ')})`,
        })
        return z.NEVER
      }
      return v
    }),
}

export const ApiConfig = z
  .object({
    ...shared,
    HOST: z.string().min(1).default('127.0.0.1'),
    PORT: port.default(3000),
    VAULT_MASTER_KEY: masterKey,
    /** Host names (no port) on which intern operations are refused with 403. */
    REGIONAL_HOSTS: list.default([]),
    /** Deadline of POST /interns; past it the caller gets 408 and may retry with the same key. */
    INTERN_CREATE_DEADLINE_MS: ms.default(10_000),
    /** Interns one member may own in a workspace; past it creation answers 409 intern_limit_reached. */
    INTERN_LIMIT_PER_MEMBER: z.coerce.number().int().positive().default(100),
    /** How long vault creation waits for the keyring before answering 502 upstream_unavailable. */
    VAULT_LOCK_TIMEOUT_MS: ms.default(2_000),
    /** How long a resolved API key is trusted before it is looked up again (revocation delay). */
    AUTH_CACHE_MS: z.coerce.number().int().min(0).default(5_000),
    /** Path of the model catalogue (JSON); unset serves no models. */
    MODEL_CATALOGUE: z.string().min(1).optional(),
    /** The web_fetch server tool refuses private, loopback and link-local addresses unless `allow`. */
    WEB_FETCH_PRIVATE_NETWORKS: z.enum(['refuse', 'allow']).default('refuse'),
    /** Largest body web_fetch reads (longer ones are truncated), and its time limit. */
    WEB_FETCH_MAX_BYTES: z.coerce
      .number()
      .int()
      .min(1024)
      .max(10 * 1024 * 1024)
      .default(256 * 1024),
    WEB_FETCH_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(10_000),
    /** An open stream waiting on a server tool gets an SSE comment this often (for idle timeouts on the way). */
    STREAM_KEEPALIVE_MS: z.coerce.number().int().min(10).max(600_000).default(10_000),
    /** Longest an intern row read for a poller is reused; change events evict it sooner (0: off). */
    INTERN_CACHE_MS: z.coerce.number().int().min(0).default(1_000),
    /** The fleet's credential: runtime hosts present it to join (the API gives each its own credential then). */
    RUNTIME_TOKEN: runtimeToken.optional(),
    /** Longest one chat request streams before it ends with a timeout error. */
    CHAT_REQUEST_BUDGET_MS: ms.default(300_000),
    /**
     * Shutting down (SIGTERM), how long the chat turns this process relays may still run before each
     * is ended with a stream_severed chunk; the process exits at the latest 2 s after.
     */
    SHUTDOWN_GRACE_MS: ms.default(8_000),
    /**
     * The name of the tool call a paused intern run streams: the API description's
     * `service.provide_input`, or `openrouter.provide_input`, the only one @openrouter/sdk's
     * client.interns.chat accepts. Replies may name either.
     */
    /** How long the chat route waits for the runtime host to answer a prompt or a reply (then 504 timeout, before any stream). */
    RUNTIME_ANSWER_TIMEOUT_MS: ms.default(30_000),
    /**
     * A chat for an intern the fleet is moving (its host died or drains) waits this long for it to
     * run on its new host, instead of failing at once; 0: no wait (409 intern_not_ready / 502 at once).
     */
    CHAT_MOVE_WAIT_MS: ms.default(45_000),
    /** Chat turns (prompts and answers) one user, or one organization key's account, may start per minute; 0: no limit. */
    CHAT_TURNS_PER_MINUTE: z.coerce.number().int().min(0).default(600),
    INTERN_PROVIDE_INPUT_NAME: z
      .enum(['service.provide_input', 'openrouter.provide_input'])
      .default('service.provide_input'),
    ...listenerSettings,
    ...fairUseSettings,
    ...fleetSettings,
    /** Interns' requests that carry secrets are made from the API tier: private addresses refused unless `allow`. */
    EGRESS_PRIVATE_NETWORKS: z.enum(['refuse', 'allow']).default('refuse'),
    EGRESS_HOSTS: egressHosts,
    /** Where snapshots of interns' workspaces are kept: postgres (default) or s3; and the largest one taken, in MiB. */
    SNAPSHOT_STORE: z.enum(['postgres', 's3']).default('postgres'),
    SNAPSHOT_MAX_MB: z.coerce.number().int().min(1).max(4096).default(100),
    SNAPSHOT_S3_BUCKET: z.string().min(1).optional(),
    SNAPSHOT_S3_ENDPOINT: z.url().optional(),
    SNAPSHOT_S3_REGION: z.string().min(1).default('us-east-1'),
    SNAPSHOT_S3_FORCE_PATH_STYLE: flag.default(false),
    SNAPSHOT_S3_ACCESS_KEY_ID: z.string().min(1).optional(),
    SNAPSHOT_S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  })
  .refine((c) => c.SNAPSHOT_STORE !== 's3' || c.SNAPSHOT_S3_BUCKET, {
    message: 'SNAPSHOT_STORE=s3 needs SNAPSHOT_S3_BUCKET',
    path: ['SNAPSHOT_S3_BUCKET'],
  })
export type ApiConfig = z.infer<typeof ApiConfig>

export const WorkerConfig = z.object({
  ...shared,
  ...listenerSettings,
  ...fleetSettings,
  VAULT_MASTER_KEY: masterKey,
  HOST: z.string().min(1).default('127.0.0.1'),
  /** Port of the worker's /health and /ready; 0 (the default) serves none. */
  HEALTH_PORT: port.default(0),
  /** Public DNS zone under which interns get their hostnames. */
  INTERNS_DOMAIN: z
    .string()
    .regex(/^(?!-)[a-z0-9-]+(\.[a-z0-9-]+)*$/, 'must be a lowercase DNS name such as interns.localhost')
    .default('interns.localhost'),
  WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(50),
  PROVISION_ATTEMPTS: z.coerce.number().int().min(1).max(50).default(5),
  PROVISION_BACKOFF_MS: ms.default(1_000),
  /** How long the runtime may take to report healthy after a start, per attempt. */
  HEALTH_TIMEOUT_MS: ms.default(10_000),
  /** Lock on an active job; a worker that dies loses its jobs to others after this long. */
  JOB_LOCK_MS: ms.default(30_000),
  /** The operator surface (the queue dashboard at /queues) on its own port; 0 (the default): none. */
  OPERATOR_PORT: port.default(0),
  /** Its credential (HTTP Basic password, or bearer), at least 32 characters; required with OPERATOR_PORT. */
  OPERATOR_TOKEN: z.string().min(32, 'must be at least 32 characters').optional(),
  /** Safety net for missed outbox notifications. */
  RELAY_POLL_MS: ms.default(1_000),
  /** How often the reconciler looks for interns whose queued job vanished (e.g. Redis lost data). */
  RECONCILE_INTERVAL_MS: ms.default(5_000),
  /** An intern in a transitional status with no progress for this long is checked by the reconciler. */
  STUCK_AFTER_MS: ms.default(15_000),
  /** How long an Idempotency-Key is remembered; a retry after that creates anew. */
  IDEMPOTENCY_TTL_HOURS: z.coerce.number().positive().default(24),
})
export type WorkerConfig = z.infer<typeof WorkerConfig>

export const RuntimeConfig = z.object({
  ...listenerSettings,
  HOST: z.string().min(1).default('127.0.0.1'),
  PORT: port.default(3100),
  RUNTIME_DATA_DIR: z.string().min(1).default('.roster/runtime'),
  /** The fleet's credential, to join it; once joined, the host's own (given by the API) is required of every control call. */
  RUNTIME_TOKEN: runtimeToken,
  /** This host's stable id in the fleet (a StatefulSet pod's name); default runtime-<PORT>. */
  RUNTIME_HOST_ID: z
    .string()
    .regex(/^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$/, 'must be a lowercase DNS label-like name')
    .optional(),
  /** The base URL the API and the workers reach this host on; default http://HOST:PORT. */
  RUNTIME_ADVERTISE_URL: z.url().optional(),
  /** Interns this host runs at most; default one per 128 MiB of the machine's memory. */
  RUNTIME_CAPACITY: z.coerce.number().int().min(1).max(100_000).optional(),
  /** On SIGTERM, drain (its interns move to other hosts, their turns ended and workspaces snapshotted) before exiting. */
  RUNTIME_DRAIN_ON_SHUTDOWN: flag.default(false),
  /** How long a draining host lets running turns finish before it ends them. */
  RUNTIME_DRAIN_TURN_GRACE_MS: ms.default(30_000),
  /** The largest workspace snapshot this host takes (compressed), in MiB; the API holds its own ceiling (SNAPSHOT_MAX_MB). */
  RUNTIME_SNAPSHOT_MAX_MB: z.coerce.number().int().min(1).max(4096).default(100),
  /**
   * `allow` runs interns' shell commands without any confinement where bubblewrap cannot work (a
   * development machine without it); `refuse` (the default) refuses them there with a clear error.
   */
  RUNTIME_UNCONFINED_COMMANDS: z.enum(['refuse', 'allow']).default('refuse'),
  /** Roster's API, which interns call for their model turns (as themselves). */
  ROSTER_API_URL: z.string().url().default('http://127.0.0.1:3000/api/v1'),
  /** The model of an intern whose own `model` is null. */
  INTERN_DEFAULT_MODEL: z.string().min(1).default('roster-sim/chat'),
  /** Longest one shell command of an intern may run. */
  COMMAND_TIMEOUT_MS: ms.default(120_000),
  /** Model turns at most in one run (tool calls between them). */
  RUN_MAX_STEPS: z.coerce.number().int().min(1).max(200).default(30),
  /** Processes (and threads) one command may have at once. */
  SANDBOX_PROCESSES: z.coerce.number().int().min(8).max(100_000).default(256),
  /** Memory of one command's processes together (a control group; per process where none can be made), in MiB. */
  SANDBOX_MEMORY_MB: z.coerce.number().int().min(16).default(1024),
  /** CPU seconds each process of a command may use, and the command's share of one core in percent (a control group). */
  SANDBOX_CPU_SECONDS: z.coerce.number().int().min(1).default(300),
  SANDBOX_CPU_PERCENT: z.coerce.number().int().min(1).max(100_000).default(100),
  /** Largest file a command may write, and the size of its own /tmp (memory), in MiB. */
  SANDBOX_FILE_MB: z.coerce.number().int().min(1).default(1024),
  SANDBOX_TMP_MB: z.coerce.number().int().min(1).default(256),
  /** An intern's workspace size past which a command that grows it is killed, in MiB. */
  SANDBOX_WORKSPACE_MB: z.coerce.number().int().min(1).default(4096),
  /** The user (and group) id commands run as when the host runs as root: unprivileged, and no one else's. */
  SANDBOX_UID: z.coerce.number().int().min(1).max(4_294_967_294).default(64_000),
  /** What forwards a sandboxed command's network to its egress proxy: socat (fast), node (always there), auto (socat if installed). */
  RUNTIME_EGRESS_FORWARDER: z.enum(['auto', 'socat', 'node']).default('auto'),
  /** How long a run paused on a question (a permission, an elicitation) waits for the answer; then it is cancelled. */
  INTERACTION_DEADLINE_MS: ms.default(300_000),
  /** Runs one intern may hold paused on questions at once; past it a new prompt gets 503 busy. */
  RUN_MAX_PAUSED: z.coerce.number().int().min(1).max(1000).default(16),
  /**
   * Never on a runtime host: the hosts run the interns' code, so they hold no master key and no
   * database credential; secrets are released by the API tier (its egress), and what the host keeps
   * durably goes through the API. Set here, either stops the host at start-up.
   */
  DATABASE_URL: z
    .undefined({
      error:
        'a runtime host must not hold a database credential: it reaches the fleet through ROSTER_API_URL; unset it',
    })
    .optional(),
  VAULT_MASTER_KEY: z
    .undefined({ error: 'a runtime host must not hold the master key: secrets are released by the API tier; unset it' })
    .optional(),
  /** The egress refuses private, loopback and link-local addresses unless `allow`. */
  EGRESS_PRIVATE_NETWORKS: z.enum(['refuse', 'allow']).default('refuse'),
  /** Fixed answers for names (`name=address,…`), instead of DNS: tests map their hostnames to the loopback. */
  EGRESS_HOSTS: egressHosts,
  LOG_LEVEL: logLevel,
  ...metricsSettings,
})
export type RuntimeConfig = z.infer<typeof RuntimeConfig>

export const CliConfig = z.object({ DATABASE_URL: postgresUrl, ...fleetSettings })
export type CliConfig = z.infer<typeof CliConfig>

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  ${p}`).join('\n')}`)
    this.name = 'ConfigError'
  }
}

/** Parses the environment once; every bad variable is named in the error. */
export function loadConfig<S extends z.ZodObject>(schema: S, env: NodeJS.ProcessEnv = process.env): z.infer<S> {
  // Empty strings count as unset, as in most shells' `VAR= cmd`.
  const input = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== ''))
  const parsed = schema.safeParse(input)
  if (parsed.success) return parsed.data
  throw new ConfigError(
    parsed.error.issues.map((i) => {
      const name = String(i.path[0] ?? '?')
      const value = env[name]
      const shown = value === undefined ? 'unset' : /KEY|TOKEN/.test(name) ? 'set (hidden)' : JSON.stringify(value)
      return `${name}: ${i.message} (${shown})`
    }),
  )
}

/** For main modules: parse or print the problems and exit. */
export function loadConfigOrExit<S extends z.ZodObject>(schema: S, processName: string): z.infer<S> {
  try {
    return loadConfig(schema)
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${processName}: ${err.message}\n`)
      process.exit(78) // EX_CONFIG
    }
    throw err
  }
}
