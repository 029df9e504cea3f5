import { loadConfigOrExit, RuntimeConfig } from '@roster/protocol'
import { createMetrics, serveMetrics, startTracing, stopOnSignals } from '@roster/platform'
import { buildRuntimeHost } from './app.js'
import { hostIdentity, startMembership } from './membership.js'

const config = loadConfigOrExit(RuntimeConfig, 'runtime')
// Traces only when OTEL_EXPORTER_OTLP_ENDPOINT is set.
const tracer = await startTracing('runtime', config.OTEL_EXPORTER_OTLP_ENDPOINT)
const metrics = config.METRICS_PORT ? createMetrics('runtime') : undefined
const identity = hostIdentity(config)
const { app, interns, fleet } = await buildRuntimeHost(config, { metrics, hostId: identity.id })
const address = await app.listen({ host: config.HOST, port: config.PORT })
app.log.info(`runtime host listening on ${address} (fleet id ${identity.id})`)
// Joins once it listens: the API may call it as soon as it has joined.
const membership = startMembership(config, fleet, interns, app.log, identity)
// With RUNTIME_DRAIN_ON_SHUTDOWN, a SIGTERM (a rollout) moves the interns to other hosts before the
// process ends; without, they are stopped and placed again once the record finds this host gone.
const drainMs = config.RUNTIME_DRAIN_ON_SHUTDOWN ? config.RUNTIME_DRAIN_TURN_GRACE_MS + 30_000 : 0
stopOnSignals(
  app.log,
  config.RUNTIME_DRAIN_ON_SHUTDOWN ? 'draining, then ending' : "ending the interns' runs",
  drainMs + 10_000,
  async () => {
    if (drainMs) await membership.drainSelf(drainMs)
    membership.stop()
    await app.close()
    await tracer?.shutdown()
  },
)
if (metrics) {
  await serveMetrics(metrics, config)
  app.log.info(`runtime metrics on http://${config.METRICS_HOST}:${config.METRICS_PORT}/metrics`)
}
