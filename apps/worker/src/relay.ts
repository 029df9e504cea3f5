import pg from 'pg'
import type { Queue } from 'bullmq'
import { isJobKind, Jobs, OUTBOX_CHANNEL, type Db, type Logger } from '@roster/shared'
import type { JobOptionsFor } from './queue.js'

const BATCH = 500

/**
 * Publishes outbox rows to BullMQ. Woken by NOTIFY on commit (low latency) and by a timer (in case
 * a notification was missed). Rows are locked with SKIP LOCKED, so several workers share the work,
 * and deleted in the transaction that published them. If Redis is down, the transaction rolls back
 * and the rows wait; a row published twice is harmless, because its job id is deterministic.
 */
export class OutboxRelay {
  private listener: pg.Client | undefined
  private timer: NodeJS.Timeout | undefined
  private draining: Promise<void> | undefined
  private again = false
  private stopped = false

  constructor(
    private readonly db: Db,
    private readonly queue: Queue,
    private readonly databaseUrl: string,
    private readonly pollMs: number,
    private readonly jobOptions: JobOptionsFor,
    private readonly log: Logger,
  ) {}

  async start() {
    this.timer = setInterval(() => this.wake(), this.pollMs)
    await this.listen()
    this.wake()
  }

  async stop() {
    this.stopped = true
    clearInterval(this.timer)
    await this.draining
    await this.listener?.end().catch(() => {})
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

  private async listen() {
    if (this.stopped) return
    const client = new pg.Client({ connectionString: this.databaseUrl })
    client.on('notification', () => this.wake())
    client.on('error', (err) => {
      this.log.warn({ err: err.message }, 'outbox listener lost its connection; reconnecting')
      client.end().catch(() => {})
      setTimeout(() => this.listen().catch(() => {}), 1_000).unref()
    })
    try {
      await client.connect()
      await client.query(`LISTEN ${OUTBOX_CHANNEL}`)
      this.listener = client
      this.wake()
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'outbox listener could not connect; retrying')
      client.end().catch(() => {})
      setTimeout(() => this.listen().catch(() => {}), 1_000).unref()
    }
  }
}
