import { createMetrics, loadConfigOrExit, RuntimeConfig, serveMetrics, startTracing, stopOnSignals } from '@roster/shared'
import { buildRuntimeHost } from './host.js'

const config = loadConfigOrExit(RuntimeConfig, 'runtime')
// Traces only when OTEL_EXPORTER_OTLP_ENDPOINT is set.
const tracer = await startTracing('runtime', config.OTEL_EXPORTER_OTLP_ENDPOINT)
const metrics = config.METRICS_PORT ? createMetrics('runtime') : undefined
const app = await buildRuntimeHost(config, { metrics })
stopOnSignals(app.log, "ending the interns' runs", 10_000, async () => {
  await app.close()
  await tracer?.shutdown()
})
const address = await app.listen({ host: config.HOST, port: config.PORT })
app.log.info(`runtime host listening on ${address}`)
if (metrics) {
  await serveMetrics(metrics, config)
  app.log.info(`runtime metrics on http://${config.METRICS_HOST}:${config.METRICS_PORT}/metrics`)
}
