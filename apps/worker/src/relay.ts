import type { Queue } from 'bullmq'
import {
  carrierOf,
  isJobKind,
  Jobs,
  reportConnectionErrors,
  SpanKind,
  startSpan,
  tracing,
  type Db,
  type Logger,
  type Metrics,
  type RedisClient,
  type Span,
  listeningConnection,
  type TimedRedisSettings,
} from '@roster/shared'
import {
  claimOutboxRows,
  deleteOutboxRows,
  setAsideOutboxRows,
  type OutboxRow,
  outboxBellChannel,
} from '@roster/shared/repositories'

import type { JobOptionsFor } from './queue.js'

const BATCH = 500

/**
 * Publishes outbox rows to BullMQ. Woken by the bell writers ring on Redis after committing (low
 * latency) and by a timer (a bell rung while Redis was away, or never rung, is not lost work). Rows are locked with SKIP LOCKED, so several workers share the work,
 * and deleted in the transaction that published them. If Redis is down, the transaction rolls back
 * and the rows wait; a row published twice is harmless, because its job id is deterministic.
 */
export class OutboxRelay {
  private bell: RedisClient | undefined
  private timer: NodeJS.Timeout | undefined
  private draining: Promise<void> | undefined
  private again = false
  private stopped = false

  constructor(
    private readonly db: Db,
    private readonly queue: Queue,
    private readonly redis: TimedRedisSettings,
    private readonly queuePrefix: string,
    private readonly pollMs: number,
    private readonly jobOptions: JobOptionsFor,
    private readonly log: Logger,
    /** Rows set aside, and how long published rows waited. */
    private readonly metrics?: Pick<Metrics, 'outboxDeadLetters' | 'relayPublishLag'>,
  ) {}

  async start() {
    this.timer = setInterval(() => this.wake(), this.pollMs)
    const bell = listeningConnection(this.redis)
    reportConnectionErrors(bell, this.log, 'outbox bell: redis')
    bell.on('message', () => this.wake())
    // ioredis subscribes again after every reconnect; drain then too, for bells rung meanwhile.
    bell.on('ready', () => this.wake())
    await bell.subscribe(outboxBellChannel(this.queuePrefix)).catch((err) => {
      this.log.warn({ err: (err as Error).message }, 'outbox bell unavailable; relying on polling')
    })
    this.bell = bell
    this.wake()
  }

  async stop() {
    this.stopped = true
    clearInterval(this.timer)
    await this.draining
    this.bell?.disconnect()
  }

  /** Drains now, or once more after the drain in progress. */
  wake() {
    if (this.stopped) return
    if (this.draining) {
      this.again = true
      return
    }
    this.draining = this.drainAll().finally(() => {
      this.draining = undefined
      if (this.again) {
        this.again = false
        this.wake()
      }
    })
  }

  private async drainAll() {
    try {
      while (!this.stopped && (await this.drainBatch()) === BATCH);
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'outbox relay could not publish; will retry')
    }
  }

  private async drainBatch(): Promise<number> {
    return this.db.$transaction(
      async (tx) => {
        const rows = await claimOutboxRows(tx, BATCH)
        if (rows.length === 0) return 0
        const { jobs, dead, spans } = this.readRows(rows)
        try {
          if (jobs.length) await this.queue.addBulk(jobs)
        } finally {
          for (const span of spans) span.end()
        }
        if (dead.length) {
          // Set aside whole, in this transaction: a row that can never be published must not hold up the rest.
          await setAsideOutboxRows(tx, dead)
          for (const d of dead)
            this.log.error(
              { outboxId: d.id, kind: d.kind, error: d.error },
              'outbox row cannot be published: set aside in outbox_dead_letters',
            )
          this.metrics?.outboxDeadLetters.inc(dead.length)
        }
        await deleteOutboxRows(
          tx,
          rows.map((r) => r.id),
        )
        if (this.metrics) {
          // Published rows only: the set-aside ones are counted as dead letters.
          const now = Date.now()
          const setAside = new Set(dead.map((d) => d.id))
          for (const row of rows)
            if (!setAside.has(row.id))
              this.metrics.relayPublishLag.observe(Math.max(0, now - row.created_at.getTime()) / 1000)
        }
        return rows.length
      },
      { timeout: 30_000, maxWait: 10_000 },
    )
  }

  /**
   * The rows as jobs to publish, and those that cannot be (an unknown kind, a payload that does not
   * parse), with why. A row's trace context goes on in the job's data (`trace`); with tracing on,
   * through a span of its publishing, which the job's spans then follow.
   */
  private readRows(rows: OutboxRow[]) {
    const jobs: { name: string; data: unknown; opts: ReturnType<JobOptionsFor> & { jobId: string } }[] = []
    const dead: { id: string; kind: string; error: string }[] = []
    const spans: Span[] = []
    for (const row of rows) {
      if (!isJobKind(row.kind)) {
        dead.push({ id: row.id, kind: row.kind, error: `no job kind ${row.kind}` })
        continue
      }
      const data = Jobs[row.kind].schema.safeParse(row.payload)
      if (!data.success) {
        dead.push({
          id: row.id,
          kind: row.kind,
          error: `the payload does not fit ${row.kind}: ${data.error.issues
            .map((i) => `${i.path.join('.') || '(root)'} ${i.message}`)
            .join('; ')
            .slice(0, 1_000)}`,
        })
        continue
      }
      let carrier = row.trace_context ?? undefined
      if (carrier && tracing.on) {
        const span = startSpan(`publish ${row.kind}`, {
          kind: SpanKind.PRODUCER,
          parent: carrier,
          attributes: {
            'messaging.system': 'bullmq',
            'messaging.operation.type': 'send',
            'messaging.destination.name': this.queue.name,
            'messaging.message.id': row.job_id,
            'roster.outbox.id': row.id,
          },
        })!
        spans.push(span)
        carrier = carrierOf(span)
      }
      jobs.push({
        name: row.kind,
        data: carrier ? { ...data.data, trace: carrier } : data.data,
        opts: { ...this.jobOptions(row.kind), jobId: row.job_id },
      })
    }
    return { jobs, dead, spans }
  }
}
