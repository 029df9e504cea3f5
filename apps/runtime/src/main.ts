import { createMetrics, loadConfigOrExit, RuntimeConfig, serveMetrics, startTracing, stopOnSignals } from '@roster/shared'
import { buildRuntimeHost } from './host.js'
import { commandRunner } from './sandbox.js'

const config = loadConfigOrExit(RuntimeConfig, 'runtime')
// Traces only when OTEL_EXPORTER_OTLP_ENDPOINT is set.
const tracer = await startTracing('runtime', config.OTEL_EXPORTER_OTLP_ENDPOINT)
const metrics = config.METRICS_PORT ? createMetrics('runtime') : undefined
const app = await buildRuntimeHost(config, { metrics })
stopOnSignals(app.log, "ending the interns' runs", 10_000, async () => {
  await app.close()
  await tracer?.shutdown()
})
// Interns' shell commands run confined or not at all: say so now, not at an intern's first command.
const commands = commandRunner(config.RUNTIME_UNCONFINED_COMMANDS)
if (commands.mode === 'refused') app.log.warn(`interns' shell commands will be refused: they cannot be sandboxed here (${commands.why}); install bubblewrap`)
if (commands.mode === 'unconfined') app.log.warn(`interns' shell commands run UNCONFINED (RUNTIME_UNCONFINED_COMMANDS=allow): ${commands.why}`)
const address = await app.listen({ host: config.HOST, port: config.PORT })
app.log.info(`runtime host listening on ${address}`)
if (metrics) {
  await serveMetrics(metrics, config.METRICS_HOST, config.METRICS_PORT)
  app.log.info(`runtime metrics on http://${config.METRICS_HOST}:${config.METRICS_PORT}/metrics`)
}
