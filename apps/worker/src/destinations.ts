import { createHash } from 'node:crypto'
import { Agent, request } from 'undici'
import { type Queue, Worker, type Job } from 'bullmq'
import { SpanKind, SpanStatusCode, TraceFlags } from '@opentelemetry/api'
import { resourceFromAttributes } from '@opentelemetry/resources'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer'
import {
  destinationTakes,
  openConfig,
  reportConnectionErrors,
  retryFailedDeliveries,
  DESTINATIONS_QUEUE,
  type Db,
  type DestinationConfig,
  type GenerationRecord,
  type Logger,
  listeningConnection,
  commandConnection,
  producerQueue,
  type TimedRedisSettings,
} from '@roster/shared'
import {
  deliverableDestination,
  destinationDelivered,
  destinationFailed,
  enabledDestinations,
  generationsForDelivery,
  type DestinationRow,
} from '@roster/shared/repositories'

import { guardedLookup } from '@roster/gateway'

// Observability destinations' deliveries (governance-contract.md §10): the drain hands each batch
// of generations it wrote to the fanout, which queues one delivery per destination that takes some
// of them (its workspace, keys, sample and filter rules); a delivery job reads them back from
// Postgres and sends them: a webhook's JSON, or an OTLP/HTTP export of GenAI spans. A job is
// retried with exponential backoff; one that runs out of tries counts as the destination's
// failure, and while it is failing its new deliveries get one try each (no backoff storm). Failed
// deliveries are kept, and go again once the destination takes one (it is back) or is updated.
// Each delivery carries an id (Idempotency-Key, and each generation's own id), so a receiver can
// drop what it got twice: delivery is at least once.

export interface DestinationSettings {
  attempts: number
  backoffMs: number
  timeoutMs: number
  concurrency: number
  allowPrivateNetworks: boolean
  masterKey: Buffer | undefined
}

interface DeliveryJob {
  destinationId: string
  accountId: string
  ids: string[]
}

/** How long the fanout trusts what it read of an account's destinations (a new one is used within this). */
const DESTINATIONS_CACHE_MS = 2_000

export class DestinationFanout {
  private readonly cached = new Map<string, { at: number; rows: DestinationRow[] }>()

  constructor(
    private readonly db: Db,
    private readonly queue: Queue,
    private readonly settings: Pick<DestinationSettings, 'attempts' | 'backoffMs'>,
    private readonly now: () => number = Date.now,
  ) {}

  /** Queues the deliveries of a written batch (every record of it: a batch written again queues the same jobs, by id). */
  async enqueue(records: GenerationRecord[]): Promise<void> {
    const accounts = [...new Set(records.map((r) => r.account_id).filter((a): a is string => !!a))]
    if (!accounts.length) return
    const destinations = await this.destinationsOf(accounts)
    if (!destinations.length) return
    const jobs = []
    for (const d of destinations) {
      const ids = records.filter((r) => r.account_id === d.account_id && destinationTakes(d, r)).map((r) => r.id)
      if (!ids.length) continue
      const batch = createHash('sha256').update(ids.join('\n')).digest('hex').slice(0, 32)
      jobs.push({
        name: 'deliver',
        data: { destinationId: d.id, accountId: d.account_id, ids } satisfies DeliveryJob,
        opts: {
          jobId: `${d.id}.${batch}`,
          // A failing destination gets one try per delivery: they wait, kept, for it to come back.
          attempts: d.failures > 0 ? 1 : this.settings.attempts,
          backoff: { type: 'exponential', delay: this.settings.backoffMs },
          removeOnComplete: { count: 1_000 },
          removeOnFail: { count: 100_000 },
        },
      })
    }
    if (jobs.length) await this.queue.addBulk(jobs)
  }

  private async destinationsOf(accounts: string[]): Promise<DestinationRow[]> {
    const at = this.now()
    const stale = accounts.filter((a) => {
      const hit = this.cached.get(a)
      return !hit || at - hit.at >= DESTINATIONS_CACHE_MS
    })
    if (stale.length) {
      const rows = await enabledDestinations(this.db, stale)
      if (this.cached.size > 50_000) this.cached.clear()
      for (const a of stale) this.cached.set(a, { at, rows: rows.filter((r) => r.account_id === a) })
    }
    return accounts.flatMap((a) => this.cached.get(a)?.rows ?? [])
  }
}

/** A delivery the receiver refused or could not take: retried (the message names the status, never a secret). */
class DeliveryFailed extends Error {}

/** Sends deliveries: the jobs' consumer. */
export class DestinationDelivery {
  private readonly agent: Agent

  constructor(
    private readonly db: Db,
    private readonly settings: DestinationSettings,
  ) {
    this.agent = new Agent({
      connect: { lookup: guardedLookup({ allowPrivateNetworks: settings.allowPrivateNetworks }) },
      headersTimeout: settings.timeoutMs,
      bodyTimeout: settings.timeoutMs,
    })
  }

  /** Sends one delivery; answers false when there is nothing to send (the destination is gone or off). */
  async deliver(job: DeliveryJob, deliveryId: string): Promise<boolean> {
    const d = await deliverableDestination(this.db, job.destinationId)
    if (!d || !this.settings.masterKey || !d.config) return false
    const config = openConfig(this.settings.masterKey, d)
    const rows = await generationsForDelivery(this.db, job.accountId, job.ids)
    if (!rows.length) return false
    const generations = rows.map((g) => generationPayload(d, g))
    const { url, method, headers, body } =
      config.type === 'webhook'
        ? {
            url: config.url,
            method: config.method,
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ type: 'generations', delivery_id: deliveryId, generations }),
          }
        : {
            url: tracesUrl(config.endpoint),
            method: 'POST' as const,
            headers: { 'content-type': 'application/json' },
            body: Buffer.from(JsonTraceSerializer.serializeRequest(rows.map((g) => spanOf(d, g)))!),
          }
    let status: number
    try {
      const res = await request(url, {
        method,
        dispatcher: this.agent,
        headers: { ...(config as DestinationConfig).headers, ...headers, 'idempotency-key': deliveryId },
        body,
      })
      status = res.statusCode
      await res.body.dump()
    } catch (err) {
      throw new DeliveryFailed(`${config.type} unreachable: ${(err as Error).message}`)
    }
    if (status < 200 || status >= 300) throw new DeliveryFailed(`${config.type} answered ${status}`)
    return true
  }

  close() {
    return this.agent.close()
  }
}

/** The OTLP/HTTP traces path under a collector's endpoint (as given when it names it already). */
const tracesUrl = (endpoint: string) =>
  /\/v1\/traces\/?$/.test(endpoint) ? endpoint : `${endpoint.replace(/\/$/, '')}/v1/traces`

type Row = Record<string, unknown> & { id: string; input: unknown; output: unknown }

/** A generation as a webhook gets it: what the destination's switches let out. */
function generationPayload(d: DestinationRow, g: Row) {
  const cost = Number(g.cost_pico) / 1e12
  return {
    id: g.id,
    request_id: g.request_id,
    created_at: (g.created_at as Date).toISOString(),
    workspace_id: g.workspace_id,
    model: g.model,
    provider: g.provider,
    upstream_model: g.upstream_model,
    door: g.door,
    streamed: g.streamed,
    cancelled: g.cancelled,
    finish_reason: g.finish_reason,
    tokens_prompt: g.tokens_prompt,
    tokens_completion: g.tokens_completion,
    tokens_reasoning: g.tokens_reasoning,
    tokens_cached: g.tokens_cached,
    latency_ms: g.latency_ms,
    generation_time_ms: g.generation_time_ms,
    ttft_ms: g.ttft_ms,
    ...(d.broadcast_generation_cost && { total_cost: cost, is_byok: g.is_byok }),
    ...(d.broadcast_generation_identity && {
      key_id: g.key_id,
      user_id: g.user_id,
      intern_id: g.intern_id,
      external_user: g.external_user,
    }),
    ...(d.broadcast_generation_request_context && {
      session_id: g.session_id,
      http_referer: g.http_referer,
      app_title: g.app_title,
      user_agent: g.user_agent,
    }),
    // Privacy mode: metadata only.
    ...(!d.privacy_mode && g.input !== null && g.input !== undefined && { input: g.input, output: g.output }),
  }
}

const RESOURCE = resourceFromAttributes({ 'service.name': 'roster' })
const SCOPE = { name: 'roster.observability-destinations' }

const hrTime = (ms: number): [number, number] => [Math.floor(ms / 1000), Math.round((ms % 1000) * 1e6)]

/** A generation as one OTLP span, with the GenAI semantic conventions Roster's own traces use. */
function spanOf(d: DestinationRow, g: Row): ReadableSpan {
  const id = createHash('sha256').update(String(g.id)).digest('hex')
  const started = (g.created_at as Date).getTime()
  const ended = started + Number(g.latency_ms ?? 0)
  const attributes: Record<string, string | number | boolean | string[]> = {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': String(g.provider ?? ''),
    'gen_ai.request.model': String(g.model),
    'gen_ai.response.model': String(g.upstream_model ?? g.model),
    'gen_ai.response.id': String(g.id),
    'gen_ai.usage.input_tokens': Number(g.tokens_prompt),
    'gen_ai.usage.output_tokens': Number(g.tokens_completion),
    'roster.workspace.id': String(g.workspace_id),
    'roster.door': String(g.door),
    'roster.streamed': Boolean(g.streamed),
  }
  if (g.finish_reason) attributes['gen_ai.response.finish_reasons'] = [String(g.finish_reason)]
  if (g.ttft_ms !== null) attributes['gen_ai.response.time_to_first_chunk'] = Number(g.ttft_ms) / 1000
  if (d.broadcast_generation_cost) attributes['roster.cost.usd'] = Number(g.cost_pico) / 1e12
  if (d.broadcast_generation_identity && g.user_id) attributes['user.id'] = String(g.user_id)
  if (d.broadcast_generation_request_context && g.session_id) attributes['session.id'] = String(g.session_id)
  if (!d.privacy_mode && g.input !== null && g.input !== undefined) {
    attributes['gen_ai.input.messages'] = JSON.stringify(g.input)
    attributes['gen_ai.output.messages'] = JSON.stringify(g.output)
  }
  return {
    name: `chat ${String(g.model)}`,
    kind: SpanKind.CLIENT,
    spanContext: () => ({ traceId: id.slice(0, 32), spanId: id.slice(32, 48), traceFlags: TraceFlags.SAMPLED }),
    startTime: hrTime(started),
    endTime: hrTime(ended),
    duration: hrTime(ended - started),
    status: { code: g.finish_reason === 'error' ? SpanStatusCode.ERROR : SpanStatusCode.OK },
    attributes,
    links: [],
    events: [],
    ended: true,
    resource: RESOURCE,
    instrumentationScope: SCOPE,
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  }
}

/** The delivery queue's consumer: sends each job, counts a job that ran out of tries against its destination. */
export function startDeliveries(
  db: Db,
  redis: TimedRedisSettings & { QUEUE_PREFIX: string },
  queue: Queue,
  settings: DestinationSettings,
  log: Logger,
) {
  const delivery = new DestinationDelivery(db, settings)
  const connection = listeningConnection(redis)
  reportConnectionErrors(connection, log, 'destinations: redis')
  const worker = new Worker<DeliveryJob>(
    DESTINATIONS_QUEUE,
    async (job: Job<DeliveryJob>) => {
      const sent = await delivery.deliver(job.data, job.id ?? '')
      if (sent && (await destinationDelivered(db, job.data.destinationId)))
        // It was failing and took this one: what it missed goes again.
        await retryFailedDeliveries(queue, job.data.destinationId)
      return sent
    },
    { connection, prefix: redis.QUEUE_PREFIX, concurrency: settings.concurrency },
  )
  reportConnectionErrors(worker, log, 'destinations')
  worker.on('failed', (job, err) => {
    if (!job) return
    const final = job.attemptsMade >= (job.opts.attempts ?? 1)
    log.warn(
      { destination: job.data.destinationId, delivery: job.id, attempt: job.attemptsMade, final, err: err.message },
      'observability delivery failed',
    )
    if (final) void destinationFailed(db, job.data.destinationId, err.message).catch(() => {})
  })
  return {
    async close() {
      await worker.close()
      connection.disconnect()
      await delivery.close()
    },
  }
}

export const destinationsQueue = (redis: TimedRedisSettings & { QUEUE_PREFIX: string }, log: Logger) => {
  const connection = commandConnection(redis)
  reportConnectionErrors(connection, log, 'destinations queue: redis')
  return { queue: producerQueue(DESTINATIONS_QUEUE, connection, redis.QUEUE_PREFIX), connection }
}
