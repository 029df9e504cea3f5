import type { Queue } from 'bullmq'
import { Redis } from 'ioredis'
import { isJobKind, Jobs, outboxBellChannel, type Db, type Logger } from '@roster/shared'
import type { JobOptionsFor } from './queue.js'

const BATCH = 500

/**
 * Publishes outbox rows to BullMQ. Woken by the bell writers ring on Redis after committing (low
 * latency) and by a timer (a bell rung while Redis was away, or never rung, is not lost work). Rows are locked with SKIP LOCKED, so several workers share the work,
 * and deleted in the transaction that published them. If Redis is down, the transaction rolls back
 * and the rows wait; a row published twice is harmless, because its job id is deterministic.
 */
export class OutboxRelay {
  private bell: Redis | undefined
  private timer: NodeJS.Timeout | undefined
  private draining: Promise<void> | undefined
  private again = false
  private stopped = false

  constructor(
    private readonly db: Db,
    private readonly queue: Queue,
    private readonly redisUrl: string,
    private readonly queuePrefix: string,
    private readonly pollMs: number,
    private readonly jobOptions: JobOptionsFor,
    private readonly log: Logger,
  ) {}

  async start() {
    this.timer = setInterval(() => this.wake(), this.pollMs)
    const bell = new Redis(this.redisUrl, { maxRetriesPerRequest: null })
    bell.on('error', () => {})
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
        const rows = await tx.$queryRaw<{ id: string; kind: string; job_id: string; payload: unknown }[]>`
          SELECT id::text, kind, job_id, payload FROM outbox ORDER BY id LIMIT ${BATCH} FOR UPDATE SKIP LOCKED`
        if (rows.length === 0) return 0
        const jobs = rows.flatMap((row) => {
          if (!isJobKind(row.kind)) {
            this.log.error({ kind: row.kind, id: row.id }, 'outbox row of unknown kind dropped')
            return []
          }
          const data = Jobs[row.kind].schema.parse(row.payload)
          return [{ name: row.kind, data, opts: { ...this.jobOptions(row.kind), jobId: row.job_id } }]
        })
        if (jobs.length) await this.queue.addBulk(jobs)
        await tx.$executeRaw`DELETE FROM outbox WHERE id = ANY(${rows.map((r) => r.id)}::bigint[])`
        return rows.length
      },
      { timeout: 30_000, maxWait: 10_000 },
    )
  }
}
