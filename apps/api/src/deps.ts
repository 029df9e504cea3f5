import { WorkspaceFiles } from './workspace-files.js'
import {
  createInternEventPublisher,
  keyEventsChannel,
  spendFromLedger,
  type KeyDeps,
  type WorkspaceDeps,
  type GuardrailDeps,
  type ByokDeps,
  type DestinationDeps,
  DESTINATIONS_QUEUE,
  retryFailedDeliveries,
  createLogger,
  createMetrics,
  spendMetrics,
  tracing,
  type ApiConfig,
  type Db,
  type Metrics,
  type ParentLogger,
  commandConnection,
  createDb,
  type RedisClient,
} from '@roster/shared'
import { FleetDriver, fleetTimes, hostCredentialKey } from '@roster/shared/fleet'
import { CreateBatcher, InternReader, type AfterCommit } from '@roster/shared/interns'
import { LocalVault, SecretStoreBatcher, type VaultService } from '@roster/shared/vault'
import { designatedPresetVersion } from '@roster/shared/repositories'
import { createHmac, randomBytes } from 'node:crypto'
import { apiQueues, type ApiQueues } from './queues.js'
import { createSso, type Sso } from './console/sso.js'
import { gatewaySandboxes } from './gateway-sandboxes.js'
import { operatorAccess, type OperatorAccess } from './operator/operator-access.js'
import {
  defaultInternModel,
  findModel,
  observers,
  patternError,
  providersOf,
  ResponsesEngine,
  SEARCH_PROVIDERS,
  type Catalogue,
  type PresetLookup,
  type SearchBackendOptions,
} from '@roster/gateway'
import { createAuthenticator, type Authenticator } from './plugins/auth.js'
import { Egress } from './fleet/egress.js'
import { PostgresSnapshots, S3Snapshots, type SnapshotStore } from './fleet/snapshots.js'
import { Admission } from './plugins/fair-use.js'
import { RequestRate } from './plugins/request-rate.js'
import { WebSocketBudget } from './plugins/websocket-budget.js'
import { publishChange } from './plugins/change-events.js'
import { createOutboxBell } from './plugins/outbox-bell.js'
import { StreamGenerationLedger } from './generation-ledger.js'
import { SpendLimits } from './spend-limits.js'
import { ByokDirectory } from './byok-directory.js'
import { InternWatch } from './plugins/intern-watch.js'
import { AnalyticsAnswers } from './analytics-answers.js'
import { ListCache } from './plugins/list-cache.js'
import { gatewayMetrics } from './plugins/gateway-metrics.js'
import { gatewayTracing } from './plugins/gateway-tracing.js'
import { slackDeps, type SlackDeps } from './slack/slack-deps.js'

/** What the routes are given (built by createAppDeps; the tests build it the same way). */
export interface AppDeps {
  config: ApiConfig
  db: Db
  /** Where the reads that may lag a little are made: the replica (DATABASE_READ_URL), else `db` itself. */
  readDb: Db
  redis: RedisClient
  vault: VaultService
  authenticate: Authenticator
  /** Told by the domain after each committed change to interns: wakes the relay, evicts, publishes. */
  afterCommit: AfterCommit
  /** Group commit of concurrent secret stores (absent: one statement per store). */
  secretStores?: SecretStoreBatcher
  /** Group commit of concurrent creates (absent: one statement per create). */
  createBatcher?: CreateBatcher
  /** Reads interns for pollers, evicted by change events. */
  internReader: InternReader
  /** Serialized list pages, cleared by change events. */
  listCache: ListCache
  analytics: AnalyticsAnswers
  /** The spend checks' counts, read to show what a key has left under each limit. */
  spendLimits: SpendLimits
  /** Change events, for the SSE stream. */
  watch: InternWatch
  /** The workers' queues (a destination's failed deliveries sent again; the operators' queue depths). */
  queues: ApiQueues
  /** The operator's way in (OPERATOR_TOKEN): its reads, drain, and console sessions. */
  operator: OperatorAccess
  /** The workspaces' files (the Files API and `openrouter:files`). */
  files: WorkspaceFiles
  /** The models served (loaded once at start-up). */
  catalogue: Catalogue
  /** The model of an intern whose `model` is null: INTERN_DEFAULT_MODEL, else the catalogue's best (none: it serves none). */
  internDefaultModel: string | null
  /** The responses engine over that catalogue. */
  responses: ResponsesEngine
  /** Where the engine (and a dry run) finds a workspace's preset: its designated version. */
  presets: PresetLookup
  /** Prometheus metrics, when METRICS_PORT is set (main.ts serves them). */
  metrics?: Metrics
  /** Open requests per key and workspace, and body bytes in flight, in this process (fair shares). */
  admission: Admission
  /** Requests per minute per key, across processes (KEY_REQUESTS_PER_MINUTE). */
  requestRate: RequestRate
  /** WebSocket connections and their waiting requests, in this process. */
  webSockets: WebSocketBudget
  /**
   * The fleet of runtime hosts, when this API can hold it (VAULT_MASTER_KEY, from which host
   * credentials are derived, and RUNTIME_TOKEN, the credential hosts join with).
   */
  fleet?: { credentialKey: Buffer; joinToken: string }
  /** Where interns' workspace snapshots are kept (SNAPSHOT_STORE). */
  snapshots: SnapshotStore
  /** Interns' requests that carry secrets, made from here (none without VAULT_MASTER_KEY). */
  egress?: Egress
  /** API keys managed through the API (the key routes): their store, spend and change events. */
  keys: KeyDeps
  /** Workspaces' operations, and the change event that makes every process forget a workspace's keys. */
  workspaces: WorkspaceDeps
  guardrails: GuardrailDeps
  byok: ByokDeps
  /** The provider keys (BYOK) of workspaces that have some, unsealed and cached. */
  byokDirectory: ByokDirectory
  /** Slack links: the install's settings and Slack's code exchange. */
  slack: SlackDeps
  destinations: DestinationDeps
  /** The runtime hosts, each intern's calls to its own (the chat route). */
  runtime: FleetDriver
  /** Single sign-on to the console (OIDC_ISSUER); absent: keys and the operator's token only. */
  sso?: Sso
}

/**
 * The API's connection to Redis (main.ts and the tests alike), connected by the caller. It never
 * needs Redis to accept a create (the outbox carries the work), so it queues no commands while
 * Redis is away (/ready reports it instead), and no command waits on it past
 * REDIS_COMMAND_TIMEOUT_MS. (Not ioredis's auto-pipelining: it holds every command to the end of
 * the event loop's turn and builds a pipeline for it; SpendLimits batches its own reads.)
 */
export const apiRedis = (config: ApiConfig): RedisClient => commandConnection(config, { lazyConnect: true })

/**
 * Everything the API needs besides its connections; main.ts and the tests build it the same way.
 * `providerEnv` is where provider credentials are found, by the variable names the catalogue gives
 * (they are looked up per call, never copied into configuration or logs).
 */
export function createAppDeps(
  config: ApiConfig,
  db: Db,
  redis: RedisClient,
  catalogue: Catalogue = { models: [] },
  providerEnv: NodeJS.ProcessEnv = {},
  /** For what happens outside requests (connections to Redis). */
  log: Pick<ParentLogger, 'warn' | 'info' | 'error'> = createLogger('api', config.LOG_LEVEL),
): AppDeps {
  // Read only once requests arrive, after the watch below exists.
  const trusted = () => watch.live
  const reader = new InternReader(db, config.INTERN_CACHE_MS, trusted)
  const lists = new ListCache(config.INTERN_CACHE_MS, trusted)
  const watch = new InternWatch(config, config.QUEUE_PREFIX, log, {
    interns(ids) {
      reader.evict(ids)
      lists.clear()
    },
    keys(entries) {
      // A limit may have changed with them: spend counters are read afresh.
      spendLimits.forget()
      for (const e of entries)
        if (e.startsWith('w:')) authenticate.forgetWorkspace(e.slice(2))
        else if (e.startsWith('a:')) {
          authenticate.forgetAccount(e.slice(2))
          byokDirectory.forgetAccount(e.slice(2))
        } else authenticate.forget(Buffer.from(e, 'base64'))
    },
    spend: (counter, value) => spendLimits.saw(counter, value),
    gap: () => spendLimits.forget(),
  })
  const publish = createInternEventPublisher(redis, config.QUEUE_PREFIX)
  const catalogueProviders = providersOf(catalogue).data.map((p) => p.name)
  /** How guardrails and provider keys check the models and providers they name. */
  const byokProviders = [...catalogueProviders, ...SEARCH_PROVIDERS.filter((p) => !catalogueProviders.includes(p))]
  const catalogueNames = {
    canonicalModel: (id: string) => findModel(catalogue, id)?.id,
    // A workspace's own keys: for the catalogue's providers, and for the hosted search APIs (web search).
    providers: () => byokProviders,
  }
  const queues = apiQueues(redis, config.QUEUE_PREFIX)
  const byokDirectory = new ByokDirectory(db, config.VAULT_MASTER_KEY, Math.max(config.AUTH_CACHE_MS, 1_000))
  /** An account's keys, guardrails or provider keys changed: every process forgets what it cached of them. */
  const accountChanged = (accountId: string) => {
    authenticate.forgetAccount(accountId)
    byokDirectory.forgetAccount(accountId)
    return tellOthers(`a:${accountId}`)
  }
  /** Tells the other API processes to forget what they cached; awaited before the change is answered. */
  const tellOthers = (event: string): Promise<void> => {
    // A limit may have changed: this process reads spend counters afresh at once, the others on the event.
    spendLimits.forget()
    return publishChange(redis, keyEventsChannel(config.QUEUE_PREFIX), event)
  }
  const spendLimits = new SpendLimits(redis, config.QUEUE_PREFIX, db, Date.now, trusted)
  const files = new WorkspaceFiles(db, {
    maxBytes: config.FILES_MAX_BYTES,
    workspaceMaxBytes: config.FILES_WORKSPACE_MAX_BYTES,
  })
  const metrics = config.METRICS_PORT ? createMetrics('api') : undefined
  const vault = new LocalVault({ masterKey: config.VAULT_MASTER_KEY, lockTimeoutMs: config.VAULT_LOCK_TIMEOUT_MS })
  const credentialKey = config.VAULT_MASTER_KEY && hostCredentialKey(config.VAULT_MASTER_KEY)
  const requestRate = new RequestRate(redis, config.QUEUE_PREFIX, config.KEY_REQUESTS_PER_MINUTE, (err) =>
    log.warn({ err }, 'requests per minute could not be counted in Redis; counting on this process alone'),
  )
  const authenticate = createAuthenticator(db, config.AUTH_CACHE_MS, {
    entries: config.AUTH_CACHE_ENTRIES,
    unknownLookups: config.AUTH_UNKNOWN_LOOKUPS,
    unknownPerAddress: config.UNKNOWN_KEYS_PER_MINUTE,
    refusalDelayMs: config.REFUSAL_DELAY_MS,
    rate: requestRate,
    observe: (outcome) => {
      if (outcome === 'rate_limited') metrics?.fairUseRefusals.inc({ limit: 'requests_per_minute' })
      else {
        if (outcome === 'throttled') metrics?.fairUseRefusals.inc({ limit: 'unknown_keys' })
        metrics?.authLookups.inc({ outcome })
      }
    },
  })
  // The preset lookup the engine is given (a port, as the ledger and admission are).
  const presets: PresetLookup = async (workspaceId, slug) => {
    const version = await designatedPresetVersion(db, workspaceId, slug)
    return (
      version && {
        presetId: version.presetId,
        config: version.config as Record<string, unknown>,
        systemPrompt: version.systemPrompt,
      }
    )
  }
  return {
    admission: new Admission(
      {
        perKey: config.KEY_CONCURRENCY,
        perKeyUnderLoad: config.KEY_CONCURRENCY_UNDER_LOAD,
        perWorkspace: config.WORKSPACE_CONCURRENCY,
        bodyBytes: config.REQUEST_BODY_BYTES,
        refusalDelayMs: config.REFUSAL_DELAY_MS,
      },
      (limit) => metrics?.fairUseRefusals.inc({ limit }),
    ),
    requestRate,
    webSockets: new WebSocketBudget(config, metrics),
    metrics,
    config,
    db,
    readDb: config.DATABASE_READ_URL
      ? createDb({
          url: config.DATABASE_READ_URL,
          poolSize: config.DATABASE_POOL_SIZE,
          statementTimeoutMs: config.INTERN_CREATE_DEADLINE_MS,
          preparedStatements: config.DATABASE_PREPARED_STATEMENTS,
        })
      : db,
    redis,
    vault,
    fleet: credentialKey && config.RUNTIME_TOKEN ? { credentialKey, joinToken: config.RUNTIME_TOKEN } : undefined,
    snapshots:
      config.SNAPSHOT_STORE === 's3'
        ? new S3Snapshots(db, {
            bucket: config.SNAPSHOT_S3_BUCKET!,
            endpoint: config.SNAPSHOT_S3_ENDPOINT,
            region: config.SNAPSHOT_S3_REGION,
            forcePathStyle: config.SNAPSHOT_S3_FORCE_PATH_STYLE,
            accessKeyId: config.SNAPSHOT_S3_ACCESS_KEY_ID,
            secretAccessKey: config.SNAPSHOT_S3_SECRET_ACCESS_KEY,
          })
        : new PostgresSnapshots(db),
    egress: config.VAULT_MASTER_KEY
      ? new Egress({
          db,
          vault,
          allowPrivateNetworks: config.EGRESS_PRIVATE_NETWORKS === 'allow',
          hosts: config.EGRESS_HOSTS,
          timeoutMs: 30_000,
          maxBytes: 256 * 1024,
        })
      : undefined,
    runtime: new FleetDriver(db, credentialKey, { timeoutMs: config.RUNTIME_ANSWER_TIMEOUT_MS }),
    authenticate,
    keys: {
      db,
      usage: spendFromLedger(db),
      changed(digest) {
        authenticate.forget(digest)
        return tellOthers(digest.toString('base64'))
      },
    },
    workspaces: {
      db,
      changed(workspaceId) {
        authenticate.forgetWorkspace(workspaceId)
        return tellOthers(`w:${workspaceId}`)
      },
      knownModel: (id) => catalogueNames.canonicalModel(id) !== undefined,
    },
    guardrails: {
      db,
      changed: accountChanged,
      ...catalogueNames,
      patternError,
    },
    byok: {
      db,
      masterKey: config.VAULT_MASTER_KEY,
      changed: accountChanged,
      ...catalogueNames,
    },
    byokDirectory,
    queues,
    operator: operatorAccess(db, config.OPERATOR_TOKEN),
    sso: createSso(config, redis),
    slack: slackDeps(config, db, log),
    destinations: {
      db,
      masterKey: config.VAULT_MASTER_KEY,
      // A failing destination updated: its failed deliveries go again.
      retryFailed: (destinationId) => retryFailedDeliveries(queues.get(DESTINATIONS_QUEUE), destinationId),
    },
    createBatcher: new CreateBatcher(db, config.INTERN_LIMIT_PER_MEMBER),
    secretStores: new SecretStoreBatcher(db),
    files,
    catalogue,
    internDefaultModel: config.INTERN_DEFAULT_MODEL ?? defaultInternModel(catalogue) ?? null,
    presets,
    responses: new ResponsesEngine({
      catalogue,
      presets,
      env: providerEnv,
      // Stable across processes when a master key is set, so one end user maps to one upstream id.
      userHashKey: config.VAULT_MASTER_KEY
        ? createHmac('sha256', config.VAULT_MASTER_KEY).update('roster upstream user id').digest()
        : randomBytes(32),
      keepAliveMs: config.STREAM_KEEPALIVE_MS,
      ledger: new StreamGenerationLedger(redis, config.QUEUE_PREFIX, db, log, {
        onWritten: metrics && spendMetrics(metrics, config.METRICS_WORKSPACES),
        onCounted: (counter, value) => spendLimits.saw(counter, value),
      }),
      admit: (opts) => spendLimits.check(opts.generation?.limits),
      upstream: {
        connections: config.UPSTREAM_CONNECTIONS,
        connectionsPerTenant: config.UPSTREAM_CONNECTIONS_PER_KEY,
        onWaiting: metrics && ((origin, count) => metrics.upstreamWaiting.set({ origin }, count)),
      },
      // Absent both, the engine measures nothing.
      observer: observers(metrics && gatewayMetrics(metrics), tracing.on ? gatewayTracing() : undefined),
      webFetch: {
        allowPrivateNetworks: config.WEB_FETCH_PRIVATE_NETWORKS === 'allow',
        maxBytes: config.WEB_FETCH_MAX_BYTES,
        timeoutMs: config.WEB_FETCH_TIMEOUT_MS,
      },
      search: searchSettings(config),
      files,
      ...(config.MODERATION_URL
        ? {
            moderation: {
              url: config.MODERATION_URL,
              apiKey: config.MODERATION_API_KEY,
              model: config.MODERATION_MODEL,
              timeoutMs: config.MODERATION_TIMEOUT_MS,
            },
          }
        : {}),
      // Commands run as long as a host lets one (COMMAND_TIMEOUT_MS, 120 s by default), and then some.
      sandbox: gatewaySandboxes(
        db,
        new FleetDriver(db, credentialKey, { timeoutMs: 10 * 60_000 }),
        fleetTimes(config).deadAfterMs,
      ),
    }),
    internReader: reader,
    listCache: lists,
    spendLimits,
    analytics: new AnalyticsAnswers({ ttlMs: config.ANALYTICS_CACHE_MS, concurrency: config.ANALYTICS_CONCURRENCY }),
    watch,
    afterCommit: {
      outboxWritten: createOutboxBell(redis, config.QUEUE_PREFIX),
      internsChanged(ids) {
        reader.evict(ids)
        lists.clear()
        watch!.notify(ids)
        publish(ids)
      },
    },
  }
}

/** The search engines `openrouter:web_search` may call, from the settings (a key or a URL configures one). */
function searchSettings(config: ApiConfig): SearchBackendOptions {
  const hosted = (apiKey: string | undefined, baseUrl: string | undefined) =>
    apiKey ? { apiKey, ...(baseUrl ? { baseUrl } : {}) } : undefined
  return {
    preferred: config.WEB_SEARCH_ENGINE,
    searxngUrl: config.SEARXNG_URL,
    brave: hosted(config.BRAVE_SEARCH_API_KEY, config.BRAVE_SEARCH_BASE_URL),
    tavily: hosted(config.TAVILY_API_KEY, config.TAVILY_BASE_URL),
    exa: hosted(config.EXA_API_KEY, config.EXA_BASE_URL),
    // Where a workspace's own key for each is sent (BYOK), where the settings move them.
    baseUrls: {
      ...(config.BRAVE_SEARCH_BASE_URL ? { brave: config.BRAVE_SEARCH_BASE_URL } : {}),
      ...(config.TAVILY_BASE_URL ? { tavily: config.TAVILY_BASE_URL } : {}),
      ...(config.EXA_BASE_URL ? { exa: config.EXA_BASE_URL } : {}),
    },
    timeoutMs: config.WEB_SEARCH_TIMEOUT_MS,
  }
}
