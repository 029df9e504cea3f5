import { CreateBatcher, createInternEventPublisher, createLogger, InternReader, LocalVault, SecretStoreBatcher, createMetrics, tracing, type AfterCommit, type ApiConfig, type Db, type Metrics, type ParentLogger, type RedisClient, type VaultService } from '@roster/shared'
import { createHmac, randomBytes } from 'node:crypto'
import { observers, ResponsesEngine, type Catalogue } from '@roster/gateway'
import { createAuthenticator, type Authenticator } from './plugins/auth.js'
import { createOutboxBell } from './plugins/outbox-bell.js'
import { InternWatch } from './plugins/intern-watch.js'
import { ListCache } from './plugins/list-cache.js'
import { gatewayMetrics } from './plugins/gateway-metrics.js'
import { gatewayTracing } from './plugins/gateway-tracing.js'

/** What the routes are given (built by createAppDeps; the tests build it the same way). */
export interface AppDeps {
  config: ApiConfig
  db: Db
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
  /** Change events, for the SSE stream. */
  watch: InternWatch
  /** The models served (loaded once at start-up). */
  catalogue: Catalogue
  /** The responses engine over that catalogue. */
  responses: ResponsesEngine
  /** Prometheus metrics, when METRICS_PORT is set (main.ts serves them). */
  metrics?: Metrics
}

/** Everything the API needs besides its connections; main.ts and the tests build it the same way. */
/**
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
  log: Pick<ParentLogger, 'warn' | 'info'> = createLogger('api', config.LOG_LEVEL),
): AppDeps {
  let watch: InternWatch | undefined
  const trusted = () => watch?.live ?? false
  const reader = new InternReader(db, config.INTERN_CACHE_MS, trusted)
  const lists = new ListCache(config.INTERN_CACHE_MS, trusted)
  watch = new InternWatch(
    config,
    config.QUEUE_PREFIX,
    (ids) => {
      reader.evict(ids)
      lists.clear()
    },
    log,
  )
  const publish = createInternEventPublisher(redis, config.QUEUE_PREFIX)
  const metrics = config.METRICS_PORT ? createMetrics('api') : undefined
  return {
    metrics,
    config,
    db,
    redis,
    vault: new LocalVault({ masterKey: config.VAULT_MASTER_KEY, lockTimeoutMs: config.VAULT_LOCK_TIMEOUT_MS }),
    authenticate: createAuthenticator(db, config.AUTH_CACHE_MS),
    createBatcher: new CreateBatcher(db, config.INTERN_LIMIT_PER_MEMBER),
    secretStores: new SecretStoreBatcher(db),
    catalogue,
    responses: new ResponsesEngine({
      catalogue,
      env: providerEnv,
      // Stable across processes when a master key is set, so one end user maps to one upstream id.
      userHashKey: config.VAULT_MASTER_KEY
        ? createHmac('sha256', config.VAULT_MASTER_KEY).update('roster upstream user id').digest()
        : randomBytes(32),
      keepAliveMs: config.STREAM_KEEPALIVE_MS,
      // Absent both, the engine measures nothing.
      observer: observers(metrics && gatewayMetrics(metrics), tracing.on ? gatewayTracing() : undefined),
      webFetch: {
        allowPrivateNetworks: config.WEB_FETCH_PRIVATE_NETWORKS === 'allow',
        maxBytes: config.WEB_FETCH_MAX_BYTES,
        timeoutMs: config.WEB_FETCH_TIMEOUT_MS,
      },
    }),
    internReader: reader,
    listCache: lists,
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
