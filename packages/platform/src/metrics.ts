import { createServer, type Server } from 'node:http'
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { ListenerSettings } from '@roster/protocol'
import { httpServerOptions, limitHttpServer } from './listener-limits.js'
import { TalliedCounter, TalliedHistogram } from './tallied-metrics.js'

// Every metric Roster exports, in one table: each process makes the set and uses the ones that
// concern it (an unused labelled metric exports only its HELP line). Labels are bounded: routes are
// templates, models and providers come from the catalogue, steps and outcomes from fixed lists;
// never a raw path or a key, and an id only as the spend metrics' workspace, capped per process.
// Those counted on every request are tallied in plain numbers until scraped (tallied-metrics.ts).

const SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]
const LONG_SECONDS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300]

export type ProcessName = 'api' | 'worker' | 'runtime'

export function createMetrics(process: ProcessName) {
  const registry = new Registry()
  registry.setDefaultLabels({ process })
  collectDefaultMetrics({ register: registry, prefix: 'roster_' })
  const registers = [registry]
  return {
    registry,
    httpRequests: new TalliedHistogram({
      name: 'roster_http_request_duration_seconds',
      help: 'HTTP requests served, by route template, method and status, with their duration (streams: until the response ended)',
      labelNames: ['route', 'method', 'status'] as const,
      buckets: SECONDS,
      registers,
    }),
    internCreates: new Counter({
      name: 'roster_intern_creates_total',
      help: 'POST /interns by outcome: created, replayed (idempotent retry), or the error reason',
      labelNames: ['outcome'] as const,
      registers,
    }),
    provisioningRuns: new Counter({
      name: 'roster_provisioning_runs_total',
      help: 'Provisioning job attempts by outcome: running, obsolete (a newer request won), retry (will be retried), failed (for good)',
      labelNames: ['outcome'] as const,
      registers,
    }),
    provisioningSteps: new Histogram({
      name: 'roster_provisioning_step_duration_seconds',
      help: 'Provisioning steps by step and outcome (ok, error), with their duration',
      labelNames: ['step', 'outcome'] as const,
      buckets: LONG_SECONDS,
      registers,
    }),
    queueJobs: new Gauge({
      name: 'roster_queue_jobs',
      help: 'Jobs of the intern queue by state (waiting, active, delayed, prioritized, failed), read at scrape time',
      labelNames: ['state'] as const,
      registers,
    }),
    outboxRows: new Gauge({
      name: 'roster_outbox_rows',
      help: 'Outbox rows not yet published, read at scrape time',
      registers,
    }),
    outboxOldestAge: new Gauge({
      name: 'roster_outbox_oldest_age_seconds',
      help: 'Age of the oldest unpublished outbox row (0 when empty), read at scrape time',
      registers,
    }),
    outboxDeadLetters: new Counter({
      name: 'roster_outbox_dead_letters_total',
      help: 'Outbox rows set aside because they cannot be published',
      registers,
    }),
    relayPublishLag: new Histogram({
      name: 'roster_outbox_publish_lag_seconds',
      help: 'From an outbox row committed to its job published',
      buckets: SECONDS,
      registers,
    }),
    reconcilerRepairs: new Counter({
      name: 'roster_reconciler_repairs_total',
      help: 'Repairs made by the reconciler, by kind (lost_runtime, stray_runtime, stopped_runtime, requeued)',
      labelNames: ['kind'] as const,
      registers,
    }),
    gatewayRequests: new TalliedCounter({
      name: 'roster_gateway_requests_total',
      help: 'Gateway requests by model, provider, door and outcome (ok, or the canonical error type)',
      labelNames: ['model', 'provider', 'door', 'outcome'] as const,
      registers,
    }),
    gatewayFirstByte: new TalliedHistogram({
      name: 'roster_gateway_upstream_first_byte_seconds',
      help: "Upstream calls' time to the provider's first byte, by provider",
      labelNames: ['provider'] as const,
      buckets: SECONDS,
      registers,
    }),
    gatewayUpstream: new TalliedHistogram({
      name: 'roster_gateway_upstream_duration_seconds',
      help: 'Upstream calls by provider and outcome (ok, error), with their whole duration',
      labelNames: ['provider', 'outcome'] as const,
      buckets: LONG_SECONDS,
      registers,
    }),
    gatewayTokens: new TalliedCounter({
      name: 'roster_gateway_tokens_total',
      help: 'Tokens by model and kind (input, cached_input, output, reasoning)',
      labelNames: ['model', 'kind'] as const,
      registers,
    }),
    gatewayCost: new TalliedCounter({
      name: 'roster_gateway_cost_usd_total',
      help: 'Cost in US dollars, by model',
      labelNames: ['model'] as const,
      registers,
    }),
    spendCost: new Counter({
      name: 'roster_spend_usd_total',
      help: 'Spend in US dollars as the generations ledger wrote it (each generation once), by workspace (up to METRICS_WORKSPACES, then `other`), model and whether on the workspace’s own provider key (byok)',
      labelNames: ['workspace', 'model', 'byok'] as const,
      registers,
    }),
    spendTokens: new Counter({
      name: 'roster_spend_tokens_total',
      help: 'Tokens as the generations ledger wrote them, by workspace (up to METRICS_WORKSPACES, then `other`), model and kind (input, cached_input, output, reasoning; input and output include their cached and reasoning parts)',
      labelNames: ['workspace', 'model', 'kind'] as const,
      registers,
    }),
    guardrailFilterMatches: new Counter({
      name: 'roster_guardrail_filter_matches_total',
      help: 'Guardrail content filters that matched a request, by action (block, redact, flag) and filter (a built-in detector, a custom filter’s label, or `custom`)',
      labelNames: ['action', 'filter'] as const,
      registers,
    }),
    gatewayFallbacks: new TalliedCounter({
      name: 'roster_gateway_fallbacks_total',
      help: 'Endpoints given up for the next one within a request, by requested model',
      labelNames: ['model'] as const,
      registers,
    }),
    connectionsCut: new Counter({
      name: 'roster_http_connections_cut_total',
      help: 'Connections a listener cut or refused, by reason: request_timeout (the headers or the request did not arrive in time), body_idle (a body stopped arriving), max_connections (refused past MAX_CONNECTIONS), bad_request (not HTTP)',
      labelNames: ['reason'] as const,
      registers,
    }),
    fairUseRefusals: new Counter({
      name: 'roster_fair_use_refusals_total',
      help: 'Requests refused to keep one client from taking what others need, by limit (key_concurrency, workspace_concurrency, body_bytes, requests_per_minute, ws_connections_per_key, ws_connections, ws_waiting, unknown_keys)',
      labelNames: ['limit'] as const,
      registers,
    }),
    authLookups: new Counter({
      name: 'roster_auth_lookups_total',
      help: 'API keys looked up in the database (valid, unknown), and never-seen keys refused without a lookup (throttled)',
      labelNames: ['outcome'] as const,
      registers,
    }),
    webSockets: new Gauge({
      name: 'roster_ws_connections',
      help: 'Open WebSocket connections of /responses',
      registers,
    }),
    webSocketWaitingBytes: new Gauge({
      name: 'roster_ws_waiting_bytes',
      help: 'Bytes of WebSocket requests waiting their turn, in all connections',
      registers,
    }),
    upstreamWaiting: new Gauge({
      name: 'roster_gateway_upstream_waiting',
      help: "Upstream calls waiting for their key's share of a provider origin's connections, by origin",
      labelNames: ['origin'] as const,
      registers,
    }),
    snapshotBytes: new Counter({
      name: 'roster_workspace_snapshot_bytes_total',
      help: "Bytes of interns' workspace snapshots taken in (from hosts) and given out (to hosts restoring them)",
      labelNames: ['direction'] as const,
      registers,
    }),
    runtimeHosts: new Gauge({
      name: 'roster_runtime_hosts',
      help: 'Runtime hosts of the fleet by state (live, draining, dead), read at scrape time',
      labelNames: ['state'] as const,
      registers,
    }),
    runtimeHostInterns: new Gauge({
      name: 'roster_runtime_host_interns',
      help: 'Interns placed on each runtime host, read at scrape time',
      labelNames: ['host'] as const,
      registers,
    }),
    runtimeHostFree: new Gauge({
      name: 'roster_runtime_host_free',
      help: 'Free room (interns) of each runtime host, read at scrape time',
      labelNames: ['host'] as const,
      registers,
    }),
    chatTurns: new Counter({
      name: 'roster_chat_turns_total',
      help: 'Intern chat requests by how they ended: stop, tool_calls (paused), error reason, steered, or the refusal reason',
      labelNames: ['outcome'] as const,
      registers,
    }),
    scheduleFires: new Counter({
      name: 'roster_schedule_fires_total',
      help: "Schedules' fires by what became of them: queued, refused (the intern's queue full), skipped (missed), duplicate",
      labelNames: ['outcome'] as const,
      registers,
    }),
    scheduleFireDelay: new Histogram({
      name: 'roster_schedule_fire_delay_seconds',
      help: "From a schedule's fire time to its turn queued",
      buckets: SECONDS,
      registers,
    }),
    backgroundTurns: new Counter({
      name: 'roster_background_turns_total',
      help: 'Turns of schedules and webhooks by source and how they ended (done, failed, interrupted, expired, waiting)',
      labelNames: ['source', 'outcome'] as const,
      registers,
    }),
  }
}

export type Metrics = ReturnType<typeof createMetrics>

/** Labels a route the way the metrics do: its template, or (unmatched) for what no route took. */
export const routeLabel = (template: string | undefined) => template ?? '(unmatched)'

/**
 * A Fastify onRequest hook (callback style) timing each request until its response is closed, so a
 * stream counts for its whole length and a hijacked reply is counted too.
 */
export function observeHttp(metrics: Metrics) {
  return (
    req: { method: string; routeOptions: { url?: string } },
    reply: { raw: { statusCode: number; once(event: 'close', listener: () => void): unknown } },
    done: () => void,
  ) => {
    const started = performance.now()
    reply.raw.once('close', () =>
      metrics.httpRequests.observe(
        { route: routeLabel(req.routeOptions.url), method: req.method, status: String(reply.raw.statusCode) },
        (performance.now() - started) / 1000,
      ),
    )
    done()
  }
}

/**
 * Serves GET /metrics on its own listener (METRICS_HOST:METRICS_PORT), apart from the API's
 * traffic: nothing an API key reaches. `refresh` updates gauges that are read when asked for.
 */
export async function serveMetrics(
  metrics: Metrics,
  limits: ListenerSettings & { METRICS_HOST: string; METRICS_PORT: number },
  refresh?: () => Promise<void>,
): Promise<Server> {
  const server = createServer(httpServerOptions(limits), (req, res) => {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics')
      return res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: GET /metrics\n')
    // Gauges read at scrape time are refreshed first (a failure there is the scrape's failure).
    Promise.resolve(refresh?.())
      .then(() => metrics.registry.metrics())
      .then(
        (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
        (err: Error) =>
          res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics could not be collected: ${err.message}\n`),
      )
  })
  limitHttpServer(server, limits, (reason) => metrics.connectionsCut.inc({ reason }))
  await new Promise<void>((resolve, reject) =>
    server.once('error', reject).listen(limits.METRICS_PORT, limits.METRICS_HOST, () => resolve()),
  )
  return server
}
