import type { Metrics } from '@roster/shared'
import type { GatewayObserver } from '@roster/gateway'

/** The gateway's reports as Prometheus metrics: requests, upstream timings, tokens, cost, fallbacks. */
export function gatewayMetrics(metrics: Metrics): GatewayObserver {
  return {
    upstream({ provider }) {
      return ({ firstByteMs, totalMs, ok }) => {
        if (firstByteMs !== undefined) metrics.gatewayFirstByte.observe({ provider }, firstByteMs / 1000)
        metrics.gatewayUpstream.observe({ provider, outcome: ok ? 'ok' : 'error' }, totalMs / 1000)
      }
    },
    request({ model, provider, door, outcome, fallbacks, usage, cost }) {
      metrics.gatewayRequests.inc({ model, provider, door, outcome })
      if (fallbacks) metrics.gatewayFallbacks.inc({ model }, fallbacks)
      if (usage.input) metrics.gatewayTokens.inc({ model, kind: 'input' }, usage.input)
      if (usage.cached) metrics.gatewayTokens.inc({ model, kind: 'cached_input' }, usage.cached)
      if (usage.output) metrics.gatewayTokens.inc({ model, kind: 'output' }, usage.output)
      if (usage.reasoning) metrics.gatewayTokens.inc({ model, kind: 'reasoning' }, usage.reasoning)
      if (cost > 0) metrics.gatewayCost.inc({ model }, cost)
    },
  }
}
