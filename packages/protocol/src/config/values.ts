import { isIP } from 'node:net'
import { z } from 'zod'

// The settings' building blocks, and the settings several processes share: each process's own
// table (config/api.ts, worker.ts, runtime.ts, cli.ts, start.ts) is made of these and its own.

export const flag = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes')
export const list = z.string().transform((v) =>
  v
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean),
)
export const port = z.coerce.number().int().min(0).max(65535)
export const ms = z.coerce.number().int().positive()
/** The credential the workers present to the runtime host's control API (shared by both). */
export const runtimeToken = z.string().min(32, 'must be at least 32 characters, e.g. from `openssl rand -hex 32`')
export const logLevel = z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info')

export const postgresUrlValue = z
  .string()
  .url()
  .refine((u) => /^postgres(ql)?:\/\//.test(u), 'must be a postgres:// or postgresql:// URL')
export const postgresUrl = postgresUrlValue.default('postgresql://postgres@127.0.0.1:5432/roster')
export const redisUrl = z
  .string()
  .url()
  .refine((u) => /^rediss?:\/\//.test(u), 'must be a redis:// or rediss:// URL')
  .default('redis://127.0.0.1:6379')

/**
 * The vault master key: 32 bytes, as 64 hex characters or base64. It is optional at start-up on
 * purpose: without it the API still serves reads, and intern creation answers 500
 * configuration_error, which tells the caller that retrying will not help.
 */
export const masterKey = z
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
export const metricsSettings = {
  METRICS_HOST: z.string().min(1).default('127.0.0.1').describe('Where the Prometheus metrics listener binds.'),
  METRICS_PORT: port
    .default(0)
    .describe('Prometheus metrics (`GET /metrics`) on a listener of their own, apart from API traffic; 0: none.'),
  METRICS_WORKSPACES: z.coerce
    .number()
    .int()
    .min(0)
    .max(10_000)
    .default(500)
    .describe(
      'Workspaces named in the spend metrics (`roster_spend_*`) per process; spend of the workspaces past them is labelled `other` (keeps the series bounded).',
    ),
  SLACK_API_URL: z
    .url()
    .default('https://slack.com/api/')
    .describe("Slack's Web API, for the interns linked to Slack (a Slack stand-in's in tests)."),
  OTEL_EXPORTER_OTLP_ENDPOINT: z
    .url()
    .refine((u) => /^https?:\/\//.test(u), 'must be an http:// or https:// URL')
    .optional()
    .describe(
      'OpenTelemetry traces over OTLP/HTTP to this collector (the SDK reads its other `OTEL_*` settings itself); unset: no traces.',
    ),
}

export const shared = {
  DATABASE_URL: postgresUrl.describe('Postgres. `npm start` creates the database if it is missing.'),
  DATABASE_POOL_SIZE: z.coerce
    .number()
    .int()
    .min(1)
    .max(200)
    .default(10)
    .describe('Database connections per process (a worker holds one more, its job-lease beacon).'),
  DATABASE_PREPARED_STATEMENTS: flag
    .default(true)
    .describe('Named prepared statements; set `false` behind a transaction-mode pooler (e.g. PgBouncer).'),
  REDIS_URL: redisUrl.describe('Redis, for the queues and the change events.'),
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
    })
    .describe(
      'Redis Cluster: some of its nodes as `host:port,host:port` (the rest are discovered). Set, every connection is a cluster client, and `REDIS_URL` gives only the credentials and TLS (`rediss://`) the nodes share.',
    ),
  REDIS_COMMAND_TIMEOUT_MS: ms
    .default(10_000)
    .describe(
      "How long a command waits for Redis's answer before it fails and its caller goes on (the API: without Redis, as while Redis is away; the worker: trying again), and how long a connection may hear nothing while a command waits before it is closed and opened again (a blocking read's own wait added). A Redis host cut off, or a cluster connection a failover left hanging, must not stall a process for good. The API's requests wait far less for Redis on their own path (at most a second or two).",
    ),
  QUEUE_PREFIX: z
    .string()
    .regex(/^\{[^{}]+\}$/, 'must be a hash tag such as {roster}')
    .default('{roster}')
    .describe("BullMQ's key prefix. The braces are a Redis Cluster hash tag: every queue key lands in one slot."),
  LOG_LEVEL: logLevel.describe("pino's level; logs are JSON lines with request ids, credentials redacted."),
  ...metricsSettings,
}

/**
 * `name=value` pairs, comma-separated (names lowercased), as a record without a prototype: a name
 * such as `constructor` or `__proto__` names nothing it was not given.
 */
export const namePairs = <V extends string>(what: string, valueOf: (raw: string) => V | undefined) =>
  z
    .string()
    .default('')
    .transform((v, ctx) => {
      const map = Object.create(null) as Record<string, V>
      for (const pair of v
        .split(',')
        .map((p) => p.trim())
        .filter(Boolean)) {
        const [name, raw] = pair.split('=').map((s) => s.trim())
        const value = raw ? valueOf(raw) : undefined
        if (!name || value === undefined) ctx.addIssue({ code: 'custom', message: `${pair} is not ${what}` })
        else map[name.toLowerCase()] = value
      }
      return map
    })

/** Fixed answers for names (`name=address,…`), instead of DNS: tests map their hostnames to the loopback. */
export const egressHosts = namePairs('name=address', (address) => address)

/** The fleet of runtime hosts, as the API and the workers keep its record. */
export const fleetSettings = {
  FLEET_DEAD_AFTER_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(15_000)
    .describe(
      'A runtime host silent this long is dead: its interns are placed on other hosts. New interns go only to hosts heard from within three beats.',
    ),
  FLEET_HEARTBEAT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(2_000)
    .describe('How often runtime hosts beat (told to each when it joins).'),
}

/** Turns no person typed (schedules, webhooks: docs/interns.md), as the API admits them and the workers run them. */
export const backgroundTurnSettings = {
  INTERN_TURN_QUEUE: z.coerce
    .number()
    .int()
    .min(1)
    .max(1_000)
    .default(20)
    .describe(
      "Turns of schedules and webhooks that may wait behind one intern's running turn; past it a new one is kept as `refused` (a webhook is answered `429 turn_queue_full`).",
    ),
  INTERN_TURN_WAIT_MS: ms
    .default(900_000)
    .describe(
      'How long such a turn may wait for its intern (busy, suspended, moving) before it is kept as `expired`, not run.',
    ),
}

/** What one key, one workspace and one client may hold of an API process (docs/limits.md). */
export const fairUseSettings = {
  KEY_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(0)
    .default(64)
    .describe(
      'Requests and streams one key may have open at once on one API process (the model doors, WebSocket requests, intern chat); 0: no limit.',
    ),
  KEY_CONCURRENCY_UNDER_LOAD: z.coerce
    .number()
    .int()
    .min(0)
    .default(8)
    .describe(
      "While the process is loaded and other keys have requests open, each key's share shrinks, never below this; 0: it never shrinks.",
    ),
  WORKSPACE_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(0)
    .default(256)
    .describe('The same as `KEY_CONCURRENCY` for all the keys of one workspace together; 0: no limit.'),
  REFUSAL_DELAY_MS: z.coerce
    .number()
    .int()
    .min(0)
    .max(10_000)
    .default(1_000)
    .describe(
      "How long a request refused for its key's or workspace's share, or for unknown keys past UNKNOWN_KEYS_PER_MINUTE, waits for its 429 (spread over half to one and a half times it): a client retrying at once must not make its refusals a load.",
    ),
  KEY_REQUESTS_PER_MINUTE: z.coerce
    .number()
    .int()
    .min(0)
    .default(0)
    .describe('Requests one key may make per minute, counted across every API process (in Redis); 0: no limit.'),
  REQUEST_BODY_BYTES: z.coerce
    .number()
    .int()
    .min(1024 * 1024)
    .default(256 * 1024 * 1024)
    .describe('Request-body bytes all clients of one process may have in flight; past it 503 overloaded.'),
  UPSTREAM_CONNECTIONS: z.coerce
    .number()
    .int()
    .min(1)
    .max(10_000)
    .default(256)
    .describe('Connections to one provider origin.'),
  UPSTREAM_CONNECTIONS_PER_KEY: z.coerce
    .number()
    .int()
    .min(1)
    .max(10_000)
    .default(64)
    .describe("Of those, how many one key's calls may hold (the rest wait, keys served in turn)."),
  WS_CONNECTIONS_PER_KEY: z.coerce
    .number()
    .int()
    .min(1)
    .default(8)
    .describe('WebSocket connections (the `/responses` transport) one key may hold on one process.'),
  WS_CONNECTIONS: z.coerce
    .number()
    .int()
    .min(1)
    .default(512)
    .describe('WebSocket connections all keys together may hold on one process.'),
  WS_WAITING_MESSAGES: z.coerce
    .number()
    .int()
    .min(0)
    .max(64)
    .default(16)
    .describe('Requests one WebSocket connection may have waiting behind the one being answered.'),
  WS_WAITING_BYTES: z.coerce
    .number()
    .int()
    .min(1024 * 1024)
    .default(64 * 1024 * 1024)
    .describe('Bytes all waiting WebSocket requests may hold in one process.'),
  WS_IDLE_TIMEOUT_MS: ms
    .default(300_000)
    .describe('An idle WebSocket (no request running or waiting) is closed after this long.'),
  WS_PING_MS: ms
    .default(30_000)
    .describe('Every WebSocket connection is pinged this often, and closed if it does not answer.'),
  UNKNOWN_KEYS_PER_MINUTE: z.coerce
    .number()
    .int()
    .min(0)
    .default(600)
    .describe(
      'Refusals of unknown keys one client address may cause per minute before its never-seen keys get 429; 0: no limit.',
    ),
  AUTH_UNKNOWN_LOOKUPS: z.coerce
    .number()
    .int()
    .min(1)
    .max(64)
    .default(4)
    .describe('Lookups of keys never seen valid that run at once (the rest wait in turn).'),
  AUTH_CACHE_ENTRIES: z.coerce.number().int().min(100).default(10_000).describe('Keys whose lookups are cached.'),
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
    })
    .describe(
      "Behind a load balancer whose `X-Forwarded-For` names the client: `true` (any hop), or addresses and ranges, comma-separated (e.g. `loopback,10.0.0.0/8`). Unset: the peer's address is the client's.",
    ),
}

/** A workspace snapshot's largest size, compressed, in MiB: the API's ceiling and a host's own. */
export const snapshotMb = z.coerce.number().int().min(1).max(4096).default(100)
