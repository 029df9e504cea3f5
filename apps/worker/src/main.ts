import { createDb, createLogger, loadConfigOrExit, startTracing, stopOnSignals, WorkerConfig } from '@roster/shared'
import { masterKeyProblem } from '@roster/shared/vault'
import { startWorker } from './worker.js'

const config = loadConfigOrExit(WorkerConfig, 'worker')
const log = createLogger('worker', config.LOG_LEVEL)
// Traces only when OTEL_EXPORTER_OTLP_ENDPOINT is set.
const tracer = await startTracing('worker', config.OTEL_EXPORTER_OTLP_ENDPOINT)
if (config.VAULT_MASTER_KEY) {
  const db = createDb({ url: config.DATABASE_URL, poolSize: 1 })
  const problem = await masterKeyProblem(db, config.VAULT_MASTER_KEY, config.DATABASE_URL).finally(() =>
    db.$disconnect(),
  )
  if (problem) {
    process.stderr.write(`worker: ${problem}\n`)
    process.exit(78)
  }
}
const worker = await startWorker(config, log)
log.info({ concurrency: config.WORKER_CONCURRENCY, domain: config.INTERNS_DOMAIN }, 'worker started')

stopOnSignals(log, 'finishing active jobs', 30_000, async () => {
  await worker.stop()
  await tracer?.shutdown()
})
