import { DATA_REGIONS, type DataRegion } from './guardrail-policy.js'
import { isIP } from 'node:net'
import { z } from 'zod'
import { listenerSettings } from './listener-settings.js'

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

const shared = {
  DATABASE_URL: postgresUrl.describe('Postgres. `npm start` creates the database if it is missing.'),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10).describe('Database connections per process.'),
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
const namePairs = <V extends string>(what: string, valueOf: (raw: string) => V | undefined) =>
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
const egressHosts = namePairs('name=address', (address) => address)

/** The fleet of runtime hosts, as the API and the workers keep its record. */
const fleetSettings = {
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

/** What one key, one workspace and one client may hold of an API process (docs/limits.md). */
const fairUseSettings = {
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

export const ApiConfig = z
  .object({
    ...shared,
    HOST: z.string().min(1).default('127.0.0.1').describe('Where the API listens.'),
    PORT: port.default(3000).describe("The API's port."),
    VAULT_MASTER_KEY: masterKey.describe(
      "32 bytes (64 hex characters or base64); seals every vault's data key, never stored in the database. Without it reads are served and intern creation answers `500 configuration_error`; `npm start` uses the database's own development key. A key that is not the one that sealed the database's vaults stops the process at start-up, naming the fix.",
    ),
    DATA_REGION_HOSTS: namePairs('host=region (region: global, europe or us)', (raw) => {
      const region = raw.toLowerCase() === 'eu' ? 'europe' : raw.toLowerCase()
      return (DATA_REGIONS as readonly string[]).includes(region) ? (region as DataRegion) : undefined
    }).describe(
      "Which region each `Host` name (no port) serves, for guardrails' `allowed_data_regions`: `host=region` pairs, comma-separated (e.g. `eu.roster.example=europe,us.roster.example=us`; `eu` means `europe`). A request at any other host is in `global`.",
    ),
    REGIONAL_HOSTS: list
      .default([])
      .describe('`Host` names (no port), comma-separated, on which intern operations answer 403.'),
    INTERACTION_DEADLINE_MS: ms
      .default(300_000)
      .describe(
        "The runtime hosts' deadline for an answer to a question (as they have it): the console's inbox lists questions no older.",
      ),
    INTERN_CREATE_DEADLINE_MS: ms
      .default(10_000)
      .describe(
        'Deadline of `POST /interns`; past it the caller gets 408 and may retry with the same `Idempotency-Key`.',
      ),
    INTERN_LIMIT_PER_MEMBER: z.coerce
      .number()
      .int()
      .positive()
      .default(100)
      .describe('Interns one member may own in a workspace; past it creation answers `409 intern_limit_reached`.'),
    VAULT_LOCK_TIMEOUT_MS: ms
      .default(2_000)
      .describe('How long vault creation waits for a busy keyring before answering `502 upstream_unavailable`.'),
    CONSOLE_CONCURRENCY: z.coerce
      .number()
      .int()
      .min(1)
      .max(256)
      .default(2)
      .describe(
        "Web console requests (its files, and calls with its session cookie) one API process serves at once; the rest take turns, so the console's crowds never hold the gateway's requests.",
      ),
    ANALYTICS_CACHE_MS: z.coerce
      .number()
      .int()
      .min(0)
      .default(5_000)
      .describe(
        'How long an analytics answer is shared with every identical query of the same account (a spend page open on many screens); 0: never.',
      ),
    ANALYTICS_CONCURRENCY: z.coerce
      .number()
      .int()
      .min(1)
      .max(64)
      .default(2)
      .describe('Analytics queries one API process runs at once; the rest wait their turn.'),
    AUTH_CACHE_MS: z.coerce
      .number()
      .int()
      .min(0)
      .default(5_000)
      .describe('How long a resolved API key is trusted before it is looked up again (the revocation delay).'),
    MODEL_CATALOGUE: z
      .string()
      .min(1)
      .optional()
      .describe(
        "Path of the model catalogue (JSON), validated at start-up. Unset: the API serves no models (`npm start` then serves the upstream simulator's demo catalogue).",
      ),
    INTERN_DEFAULT_MODEL: z
      .string()
      .min(1)
      .optional()
      .describe(
        'The model of an intern whose `model` is null (runtime hosts are told it as they join the fleet). Unset: the best model the catalogue serves (docs/interns.md).',
      ),
    PUBLIC_URL: z
      .url()
      .refine((u) => /^https?:\/\//.test(u), 'must be an http:// or https:// URL')
      .transform((u) => u.replace(/\/+$/, ''))
      .optional()
      .describe(
        "Roster's base URL as browsers and Slack reach it (e.g. `https://roster.example`), for the links it hands out: Slack install links, the app manifest's event and redirect URLs. Unset: `http://HOST:PORT`.",
      ),
    SLACK_AUTHORIZE_URL: z
      .url()
      .default('https://slack.com/oauth/v2/authorize')
      .describe("Slack's OAuth v2 authorize page, where an install link sends a person."),
    SLACK_INSTALL_LINK_TTL_S: z.coerce
      .number()
      .int()
      .min(60)
      .max(30 * 86_400)
      .default(7 * 86_400)
      .describe('How long an install link (`GET /interns/{id}/slack` `install_url`) stays good, in seconds.'),
    SLACK_STATE_TTL_S: z.coerce
      .number()
      .int()
      .min(30)
      .max(3_600)
      .default(600)
      .describe("How long a person has on Slack's authorize page before the install's state expires, in seconds."),
    OPERATOR_TOKEN: z
      .string()
      .min(32, 'must be at least 32 characters')
      .optional()
      .describe(
        "The operator's credential for the fleet's reads and drain under `/api/v1/operator/` (bearer) and the web console's fleet page (signed in with it); unset: none. The worker's value, where both run.",
      ),
    OPERATOR_DASHBOARD_URL: z
      .url()
      .optional()
      .describe(
        "Where the queue dashboard (the worker's operator surface) is reached; the console's fleet page links to it.",
      ),
    CONSOLE_SESSION_TTL_S: z.coerce
      .number()
      .int()
      .min(60)
      .max(30 * 86_400)
      .default(12 * 3_600)
      .describe('How long a web console sign-in lasts, in seconds (signing out ends it sooner).'),
    WEB_FETCH_PRIVATE_NETWORKS: z
      .enum(['refuse', 'allow'])
      .default('refuse')
      .describe('The `web_fetch` server tool refuses private, loopback and link-local addresses unless `allow`.'),
    WEB_FETCH_MAX_BYTES: z.coerce
      .number()
      .int()
      .min(1024)
      .max(10 * 1024 * 1024)
      .default(256 * 1024)
      .describe('Largest body `web_fetch` reads (longer ones are truncated).'),
    WEB_FETCH_TIMEOUT_MS: z.coerce
      .number()
      .int()
      .min(100)
      .max(60_000)
      .default(10_000)
      .describe('Time limit of one `web_fetch`.'),
    STREAM_KEEPALIVE_MS: z.coerce
      .number()
      .int()
      .min(10)
      .max(600_000)
      .default(10_000)
      .describe(
        'An open stream waiting on a server tool gets an SSE comment this often (for idle timeouts on the way).',
      ),
    INTERN_CACHE_MS: z.coerce
      .number()
      .int()
      .min(0)
      .default(1_000)
      .describe('Longest a polled intern or list page is reused; change events evict sooner (0: off).'),
    RUNTIME_TOKEN: runtimeToken
      .optional()
      .describe(
        "The fleet's credential (at least 32 characters, compared in constant time): runtime hosts present it to join, and are then given a credential of their own (derived from the master key, per host and epoch). `npm start` makes one per run.",
      ),
    CHAT_REQUEST_BUDGET_MS: ms
      .default(300_000)
      .describe('Longest one chat request streams; then it ends with a `timeout` finish error (the session goes on).'),
    SHUTDOWN_GRACE_MS: ms
      .default(8_000)
      .describe(
        'On SIGTERM or SIGINT, how long the chat turns this process relays may still run; then each ends with a `stream_severed` finish error (retryable: send the prompt again in the same session), intern event streams end at once, and the process exits at the latest 2 s later.',
      ),
    RUNTIME_ANSWER_TIMEOUT_MS: ms
      .default(30_000)
      .describe(
        'How long the chat route waits for the runtime host to take a prompt or an answer (then `504 timeout`, before any stream).',
      ),
    CHAT_MOVE_WAIT_MS: ms
      .default(45_000)
      .describe(
        'A chat for an intern the fleet is moving (its host died or drains) waits this long for it to run on its new host, then goes there; 0: answer `409 intern_not_ready` / `502` at once.',
      ),
    CHAT_TURNS_PER_MINUTE: z.coerce
      .number()
      .int()
      .min(0)
      .default(600)
      .describe(
        "Chat turns (prompts and answers) one user, or one organization key's account, may start per minute (a one-minute window in Redis, shared by all API processes); past it `429 rate_limited` with `Retry-After`. 0: no limit.",
      ),
    INTERN_PROVIDE_INPUT_NAME: z
      .enum(['service.provide_input', 'openrouter.provide_input'])
      .default('service.provide_input')
      .describe(
        "The name of the tool call a paused intern run streams: the API description's `service.provide_input`, or `openrouter.provide_input`, the only one `@openrouter/sdk`'s `client.interns.chat` accepts. Replies may name either.",
      ),
    ...listenerSettings,
    ...fairUseSettings,
    ...fleetSettings,
    EGRESS_PRIVATE_NETWORKS: z
      .enum(['refuse', 'allow'])
      .default('refuse')
      .describe(
        "Interns' HTTP requests that carry secrets are made by the API's egress: private and loopback addresses are refused unless `allow`.",
      ),
    EGRESS_HOSTS: egressHosts.describe(
      'Fixed answers for names (`name=address,…`) instead of DNS: tests map their hostnames to the loopback.',
    ),
    SNAPSHOT_STORE: z
      .enum(['postgres', 's3'])
      .default('postgres')
      .describe("Where snapshots of interns' workspaces are kept: `postgres` or `s3`."),
    SNAPSHOT_MAX_MB: z.coerce
      .number()
      .int()
      .min(1)
      .max(4096)
      .default(100)
      .describe(
        'The largest workspace snapshot accepted, compressed, in MiB (larger ones are refused with `413 snapshot_too_large`).',
      ),
    SNAPSHOT_S3_BUCKET: z
      .string()
      .min(1)
      .optional()
      .describe('The bucket of the S3-compatible snapshot store (required with `SNAPSHOT_STORE=s3`).'),
    SNAPSHOT_S3_ENDPOINT: z.url().optional().describe('Its endpoint (MinIO, Ceph, R2…); unset: AWS.'),
    SNAPSHOT_S3_REGION: z.string().min(1).default('us-east-1').describe('Its region.'),
    SNAPSHOT_S3_FORCE_PATH_STYLE: flag
      .default(false)
      .describe('Path-style addressing (most S3-compatible stores want it).'),
    SNAPSHOT_S3_ACCESS_KEY_ID: z
      .string()
      .min(1)
      .optional()
      .describe("Its access key id; unset: the AWS SDK's default credential chain."),
    SNAPSHOT_S3_SECRET_ACCESS_KEY: z
      .string()
      .min(1)
      .optional()
      .describe("Its secret access key; unset: the AWS SDK's default credential chain."),
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
  VAULT_MASTER_KEY: masterKey.describe(
    "The same key as the API's: the worker creates and removes interns' private vaults.",
  ),
  DESTINATION_PRIVATE_NETWORKS: z
    .enum(['refuse', 'allow'])
    .default('refuse')
    .describe(
      'Observability destinations (webhooks, OTLP collectors) on private, loopback and link-local addresses are refused unless `allow`.',
    ),
  DESTINATION_ATTEMPTS: z.coerce
    .number()
    .int()
    .min(1)
    .max(30)
    .default(10)
    .describe("Tries of one delivery to an observability destination before it counts as the destination's failure."),
  DESTINATION_BACKOFF_MS: ms
    .default(1_000)
    .describe('Wait before the second try of a delivery; each later try waits twice as long as the one before.'),
  DESTINATION_TIMEOUT_MS: ms.default(10_000).describe("How long a destination's answer to one delivery is awaited."),
  DESTINATION_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(1)
    .max(256)
    .default(16)
    .describe('Deliveries one worker sends at once.'),
  HOST: z.string().min(1).default('127.0.0.1').describe("Where the worker's health and operator listeners bind."),
  HEALTH_PORT: port.default(0).describe("Port of the worker's `/health` and `/ready`; 0: none."),
  INTERNS_DOMAIN: z
    .string()
    .regex(/^(?!-)[a-z0-9-]+(\.[a-z0-9-]+)*$/, 'must be a lowercase DNS name such as interns.localhost')
    .default('interns.localhost')
    .describe('The DNS zone under which interns get their hostnames.'),
  WORKER_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(1)
    .max(1000)
    .default(50)
    .describe('Jobs one worker process runs at once.'),
  PROVISION_ATTEMPTS: z.coerce
    .number()
    .int()
    .min(1)
    .max(50)
    .default(5)
    .describe('Attempts of a lifecycle job (provision, suspend, destroy) before its intern is marked failed.'),
  PROVISION_BACKOFF_MS: ms.default(1_000).describe('The first wait between attempts (it doubles each time).'),
  SLACK_ATTEMPTS: z.coerce
    .number()
    .int()
    .min(1)
    .max(50)
    .default(14)
    .describe(
      "Attempts of a Slack job (a turn's reply, a click) before it gives up: with the doubling backoff, 14 wait out about two hours of Slack being away (the turn runs meanwhile; its reply is posted when Slack is back).",
    ),
  SLACK_BACKOFF_MS: ms.default(1_000).describe("The first wait between a Slack job's attempts (it doubles each time)."),
  SLACK_FILE_MAX_MB: z.coerce
    .number()
    .int()
    .min(1)
    .max(16)
    .default(10)
    .describe(
      'Largest file shared with a Slack message that is fetched into the intern’s workspace, in MiB (a larger one is named to the intern, not fetched).',
    ),
  HEALTH_TIMEOUT_MS: ms.default(10_000).describe('How long a started intern may take to answer healthy, per attempt.'),
  JOB_LOCK_MS: ms
    .default(30_000)
    .describe('Lock on a running job: a worker that dies loses its jobs to others after this long.'),
  OPERATOR_PORT: port
    .default(0)
    .describe('The operator surface (the queue dashboard, bull-board, at `/queues`) on its own port; 0: none.'),
  OPERATOR_TOKEN: z
    .string()
    .min(32, 'must be at least 32 characters')
    .optional()
    .describe(
      'Its credential (HTTP Basic password, or bearer), at least 32 characters; required with `OPERATOR_PORT`.',
    ),
  RELAY_POLL_MS: ms
    .default(1_000)
    .describe("The outbox relay's safety-net poll (it is normally woken by the database's notification)."),
  RECONCILE_INTERVAL_MS: ms
    .default(5_000)
    .describe('How often the reconciler looks for stuck interns (a queued job that vanished, a host that died).'),
  STUCK_AFTER_MS: ms
    .default(15_000)
    .describe('An intern in a transitional status with no progress for this long is repaired by the reconciler.'),
  IDEMPOTENCY_TTL_HOURS: z.coerce
    .number()
    .positive()
    .default(24)
    .describe('How long an `Idempotency-Key` is remembered (swept every minute); a retry after that creates anew.'),
})
export type WorkerConfig = z.infer<typeof WorkerConfig>

export const RuntimeConfig = z.object({
  ...listenerSettings,
  HOST: z.string().min(1).default('127.0.0.1').describe('Where the runtime host listens.'),
  PORT: port.default(3100).describe("The runtime host's port."),
  RUNTIME_DATA_DIR: z
    .string()
    .min(1)
    .default('.roster/runtime')
    .describe(
      "The host's cache of its interns' workspaces and sessions (the record and the snapshot store are the truth; a new placement starts from them).",
    ),
  RUNTIME_TOKEN: runtimeToken.describe(
    "The fleet's credential, to join it; once joined, the host's own credential (given by the API) is required of every call to its control API, and any other caller gets 401.",
  ),
  RUNTIME_HOST_ID: z
    .string()
    .regex(/^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$/, 'must be a lowercase DNS label-like name')
    .optional()
    .describe("This host's stable id in the fleet (a StatefulSet pod's name); default `runtime-<PORT>`."),
  RUNTIME_ADVERTISE_URL: z
    .url()
    .optional()
    .describe('The base URL the API and the workers reach this host on; default `http://HOST:PORT`.'),
  RUNTIME_CAPACITY: z.coerce
    .number()
    .int()
    .min(1)
    .max(100_000)
    .optional()
    .describe(
      "Interns this host runs at most (placement fills the least loaded host with room); default one per 128 MiB of the machine's memory.",
    ),
  RUNTIME_DRAIN_ON_SHUTDOWN: flag
    .default(false)
    .describe(
      'On SIGTERM, drain before exiting: its interns move to other hosts, their turns ended and workspaces snapshotted.',
    ),
  RUNTIME_DRAIN_TURN_GRACE_MS: ms
    .default(30_000)
    .describe('How long a draining host lets running turns finish before it ends them.'),
  RUNTIME_SNAPSHOT_MAX_MB: z.coerce
    .number()
    .int()
    .min(1)
    .max(4096)
    .default(100)
    .describe(
      'The largest workspace snapshot this host takes (compressed), in MiB; the API holds its own ceiling (`SNAPSHOT_MAX_MB`).',
    ),
  RUNTIME_UNCONFINED_COMMANDS: z
    .enum(['refuse', 'allow'])
    .default('refuse')
    .describe(
      "Where bubblewrap cannot work, `refuse` refuses interns' shell commands (saying why, and at start-up); `allow` runs them unconfined, for a development machine only.",
    ),
  ROSTER_API_URL: z
    .string()
    .url()
    .default('http://127.0.0.1:3000/api/v1')
    .describe("Roster's API, which interns call for their model turns (as themselves); `npm start` sets its own."),
  INTERN_DEFAULT_MODEL: z
    .string()
    .min(1)
    .optional()
    .describe(
      "The model of an intern whose `model` is null, on this host. Unset: the API's (told as the host joins the fleet).",
    ),
  COMMAND_TIMEOUT_MS: ms.default(120_000).describe('Longest one shell command of an intern may run.'),
  RUN_MAX_STEPS: z.coerce
    .number()
    .int()
    .min(1)
    .max(200)
    .default(30)
    .describe('Model turns at most in one run (tool calls between them).'),
  SANDBOX_PROCESSES: z.coerce
    .number()
    .int()
    .min(8)
    .max(100_000)
    .default(256)
    .describe('Processes (and threads) one command may have at once.'),
  SANDBOX_MEMORY_MB: z.coerce
    .number()
    .int()
    .min(16)
    .default(1024)
    .describe(
      "Memory of one command's processes together (a control group; per process where none can be made), in MiB.",
    ),
  SANDBOX_CPU_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .default(300)
    .describe('CPU seconds each process of a command may use.'),
  SANDBOX_CPU_PERCENT: z.coerce
    .number()
    .int()
    .min(1)
    .max(100_000)
    .default(100)
    .describe("A command's share of one core, in percent (a control group)."),
  SANDBOX_FILE_MB: z.coerce.number().int().min(1).default(1024).describe('Largest file a command may write, in MiB.'),
  SANDBOX_TMP_MB: z.coerce
    .number()
    .int()
    .min(1)
    .default(256)
    .describe("Size of a command's own `/tmp` (in memory), in MiB."),
  SANDBOX_WORKSPACE_MB: z.coerce
    .number()
    .int()
    .min(1)
    .default(4096)
    .describe("An intern's workspace size past which a command that grows it is killed, in MiB."),
  SANDBOX_UID: z.coerce
    .number()
    .int()
    .min(1)
    .max(4_294_967_294)
    .default(64_000)
    .describe("The user (and group) id commands run as when the host runs as root: unprivileged, and no one else's."),
  RUNTIME_EGRESS_FORWARDER: z
    .enum(['auto', 'socat', 'node'])
    .default('auto')
    .describe(
      "What forwards a sandboxed command's network to its egress proxy: `socat` (starts in ~12 ms), `node` (the runtime's own binary, always there, ~10× slower to start), `auto` (socat where installed).",
    ),
  INTERACTION_DEADLINE_MS: ms
    .default(300_000)
    .describe(
      'How long a run paused on a question (a permission, an elicitation) waits for the answer; then it is cancelled.',
    ),
  RUN_MAX_PAUSED: z.coerce
    .number()
    .int()
    .min(1)
    .max(1000)
    .default(16)
    .describe('Runs one intern may hold paused on questions at once; past it a new prompt gets `503 busy`.'),
  DATABASE_URL: z
    .undefined({
      error:
        'a runtime host must not hold a database credential: it reaches the fleet through ROSTER_API_URL; unset it',
    })
    .optional()
    .describe(
      "Must not be set on a runtime host: the hosts run interns' code, so they hold no database credential (it stops the host at start-up).",
    ),
  VAULT_MASTER_KEY: z
    .undefined({ error: 'a runtime host must not hold the master key: secrets are released by the API tier; unset it' })
    .optional()
    .describe(
      'Must not be set on a runtime host: secrets are released by the API tier (it stops the host at start-up).',
    ),
  EGRESS_PRIVATE_NETWORKS: z
    .enum(['refuse', 'allow'])
    .default('refuse')
    .describe("A sandboxed command's egress proxy on the host refuses private and loopback addresses unless `allow`."),
  EGRESS_HOSTS: egressHosts.describe(
    'Fixed answers for names (`name=address,…`) instead of DNS: tests map their hostnames to the loopback.',
  ),
  LOG_LEVEL: logLevel.describe("pino's level; logs are JSON lines with request ids, credentials redacted."),
  ...metricsSettings,
})
export type RuntimeConfig = z.infer<typeof RuntimeConfig>

export const CliConfig = z.object({
  DATABASE_URL: shared.DATABASE_URL,
  ...fleetSettings,
  VAULT_MASTER_KEY: masterKey.describe(
    "The API's key: `slack config-token set` seals a workspace's Slack configuration token with it.",
  ),
  SLACK_API_URL: shared.SLACK_API_URL,
})
export type CliConfig = z.infer<typeof CliConfig>

/** `npm start`'s own settings (scripts/start.mjs): how it runs everything on one machine. */
export const StartConfig = z.object({
  RUNTIME_HOSTS: z.coerce
    .number()
    .int()
    .min(1)
    .max(16)
    .default(1)
    .describe(
      'Runtime hosts `npm start` runs (a fleet on one machine), on ports from `RUNTIME_PORT` up, each with its own id and data directory.',
    ),
  RUNTIME_PORT: port.default(3100).describe("The first runtime host's port."),
  SIM_PORT: port
    .default(3300)
    .describe(
      "Port of the upstream simulator `npm start` runs when no `MODEL_CATALOGUE` is set (its demo catalogue's models answer from it).",
    ),
  SIM_TOKENS_PER_SECOND: z.coerce
    .number()
    .positive()
    .default(50)
    .describe('How fast that simulator streams its replies.'),
  ROSTER_METRICS: z
    .enum(['0', '1'])
    .default('0')
    .describe(
      '`1`: each process serves Prometheus metrics on the ports `deploy/prometheus/prometheus.yml` scrapes (API 9464, worker 9465, first runtime host 9466).',
    ),
  ROSTER_NODE_FLAGS: z
    .string()
    .optional()
    .describe(
      'Node flags for every process `npm start` and `npm run bench` start, replacing the choice of `scripts/node-flags.mjs` (which says why): `--no-allocation-site-pretenuring`, plus `--single-threaded-gc` on 2 cores or fewer. Empty: no flags.',
    ),
})
export type StartConfig = z.infer<typeof StartConfig>

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
export function loadConfigOrExit<S extends z.ZodObject>(
  schema: S,
  processName: string,
  env: NodeJS.ProcessEnv = process.env,
): z.infer<S> {
  try {
    return loadConfig(schema, env)
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${processName}: ${err.message}\n`)
      process.exit(78) // EX_CONFIG
    }
    throw err
  }
}
