import {
  ApiConfig,
  createDb,
  createLogger,
  loadConfigOrExit,
  reportConnectionErrors,
  serveMetrics,
  startTracing,
  stopOnSignals,
} from '@roster/shared'
import { masterKeyProblem } from '@roster/shared/vault'
import { buildApp } from './app.js'
import { apiRedis, createAppDeps } from './deps.js'
import { CatalogueError, environmentCatalogue, loadCatalogue, mergeCatalogues, type Catalogue } from '@roster/gateway'

const config = loadConfigOrExit(ApiConfig, 'api')
// Traces only when OTEL_EXPORTER_OTLP_ENDPOINT is set; before anything that makes spans.
const tracer = await startTracing('api', config.OTEL_EXPORTER_OTLP_ENDPOINT)
// The models served: MODEL_CATALOGUE's, then those the environment's provider keys (and a reachable
// Ollama) bring, which the file overrides model by model.
let catalogue: Catalogue = { models: [] }
try {
  const file = config.MODEL_CATALOGUE ? await loadCatalogue(config.MODEL_CATALOGUE) : { models: [] }
  const found = await environmentCatalogue(process.env)
  for (const problem of found.problems) process.stderr.write(`api: ${problem}\n`)
  catalogue = mergeCatalogues(file, { models: found.models })
} catch (err) {
  if (!(err instanceof CatalogueError)) throw err
  process.stderr.write(`api: ${err.message}\n`)
  process.exit(78)
}
// Nothing the API runs should outlive the create deadline; past it Postgres cancels the statement.
const db = createDb({
  url: config.DATABASE_URL,
  poolSize: config.DATABASE_POOL_SIZE,
  statementTimeoutMs: config.INTERN_CREATE_DEADLINE_MS,
  preparedStatements: config.DATABASE_PREPARED_STATEMENTS,
})
if (config.VAULT_MASTER_KEY) {
  const problem = await masterKeyProblem(db, config.VAULT_MASTER_KEY, config.DATABASE_URL)
  if (problem) {
    process.stderr.write(`api: ${problem}\n`)
    process.exit(78)
  }
}
const redis = apiRedis(config)
const log = createLogger('api', config.LOG_LEVEL)
reportConnectionErrors(redis, log, 'api: redis')
redis.connect().catch(() => {})
// Provider credentials stay in the environment, named by the catalogue; the engine reads them per call.
const deps = createAppDeps(config, db, redis, catalogue, process.env, log)
const app = await buildApp(deps)
if (!config.VAULT_MASTER_KEY)
  app.log.warn('VAULT_MASTER_KEY is not set: intern creation will answer 500 configuration_error')

// Chat turns may run SHUTDOWN_GRACE_MS before they are ended (routes/interns/chat.ts); what still
// holds the close 2 s after that is cut.
stopOnSignals(app.log, 'finishing in-flight requests', config.SHUTDOWN_GRACE_MS + 2_000, async () => {
  await app.close()
  await Promise.allSettled([
    db.$disconnect(),
    deps.readDb !== db ? deps.readDb.$disconnect() : undefined,
    redis.quit(),
    tracer?.shutdown(),
  ])
})

const address = await app.listen({ host: config.HOST, port: config.PORT })
app.log.info(`api listening on ${address} (base URL ${address}/api/v1)`)
if (deps.metrics) {
  // Its own listener; it ends with the process (shutdown exits once the API has drained).
  await serveMetrics(deps.metrics, config)
  app.log.info(`api metrics on http://${config.METRICS_HOST}:${config.METRICS_PORT}/metrics`)
}
