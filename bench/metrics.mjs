import { createRequire } from 'node:module'
import { join } from 'node:path'

// What a gateway request's metrics cost the request itself: the seven calls a /responses request
// makes (its HTTP timing, the gateway's request, three token kinds, its cost, its upstream's first
// byte and duration), made with prom-client's own Counter and Histogram and with the tallied ones
// Roster uses (packages/platform/src/tallied-metrics.ts), in one run, alternating rounds. Neither
// is scraped during the rounds: a scrape's cost is Prometheus's interval's, not a request's.
export async function benchMetrics(root) {
  const require = createRequire(join(root, 'packages/platform/package.json'))
  const { Counter, Histogram, Registry } = require('prom-client')
  const { TalliedCounter, TalliedHistogram } = await import(join(root, 'packages/platform/dist/tallied-metrics.js'))
  const SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]
  const set = (C, H) => {
    const registers = [new Registry()]
    return {
      http: new H({ name: 'h', help: 'h', labelNames: ['route', 'method', 'status'], buckets: SECONDS, registers }),
      requests: new C({ name: 'r', help: 'r', labelNames: ['model', 'provider', 'door', 'outcome'], registers }),
      tokens: new C({ name: 't', help: 't', labelNames: ['model', 'kind'], registers }),
      cost: new C({ name: 'c', help: 'c', labelNames: ['model'], registers }),
      first: new H({ name: 'f', help: 'f', labelNames: ['provider'], buckets: SECONDS, registers }),
      upstream: new H({ name: 'u', help: 'u', labelNames: ['provider', 'outcome'], buckets: SECONDS, registers }),
    }
  }
  const request = (m, i) => {
    const model = 'roster-sim/chat'
    const provider = 'upstream-sim'
    m.first.observe({ provider }, 0.002 + (i % 7) / 1000)
    m.upstream.observe({ provider, outcome: 'ok' }, 0.004 + (i % 11) / 1000)
    m.requests.inc({ model, provider, door: 'responses', outcome: 'ok' })
    m.tokens.inc({ model, kind: 'input' }, 12)
    m.tokens.inc({ model, kind: 'output' }, 40)
    m.tokens.inc({ model, kind: 'reasoning' }, 3)
    m.cost.inc({ model }, 0.00009)
    m.http.observe({ route: '/api/v1/responses', method: 'POST', status: '200' }, 0.006 + (i % 5) / 1000)
  }
  const targets = { 'prom-client': set(Counter, Histogram), tallied: set(TalliedCounter, TalliedHistogram) }
  const n = Number(process.env.BENCH_METRICS_REQUESTS ?? 200_000)
  const rounds = Number(process.env.BENCH_ROUNDS ?? 5)
  const best = { 'prom-client': Infinity, tallied: Infinity }
  for (let r = 0; r < rounds; r++)
    for (const [name, m] of Object.entries(targets)) {
      const t0 = performance.now()
      for (let i = 0; i < n; i++) request(m, i)
      best[name] = Math.min(best[name], ((performance.now() - t0) * 1000) / n)
    }
  return [
    {
      scenario: `metrics: a /responses request's metric calls, best of ${rounds} × ${n}`,
      metric: 'µs',
      value: `prom-client ${best['prom-client'].toFixed(2)}; tallied ${best.tallied.toFixed(2)} (${(best.tallied / best['prom-client']).toFixed(2)}×)`,
      target: '',
    },
  ]
}
