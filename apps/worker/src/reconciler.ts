import type { Queue } from 'bullmq'
import type { Redis } from 'ioredis'
import { Jobs, type Db, type Logger, type WorkerConfig } from '@roster/shared'
import type { JobOptionsFor } from './queue.js'

/**
 * Repairs interns whose provisioning job is gone: Redis lost its data, a job was removed, or a
 * worker died between steps with nobody left to notice. Postgres is the truth; the queue can always
 * be rebuilt from it. Interns with an unpublished outbox row are left to the relay.
 */
export class Reconciler {
  constructor(
    private readonly db: Db,
    private readonly queue: Queue,
    private readonly config: WorkerConfig,
    private readonly jobOptions: JobOptionsFor,
    private readonly log: Logger,
  ) {}

  /** `everything` skips the age threshold (used when Redis is known to have lost its data). */
  async run({ everything = false } = {}): Promise<number> {
    const olderThan = new Date(Date.now() - (everything ? 0 : this.config.STUCK_AFTER_MS))
    const interns = await this.db.$queryRaw<{ id: string; generation: number }[]>`
      SELECT i.id, i.provision_generation AS generation FROM interns i
      WHERE i.status IN ('queued', 'provisioning') AND i.updated_at < ${olderThan}
        AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.payload->>'internId' = i.id::text)
      ORDER BY i.updated_at LIMIT 2000`
    let repaired = 0
    await Promise.all(
      interns.map(async ({ id, generation }) => {
        const data = { internId: id, generation }
        const jobId = Jobs['intern.provision'].jobId(data)
        const job = await this.queue.getJob(jobId)
        const state = job ? await job.getState() : 'missing'
        if (state !== 'missing' && state !== 'completed' && state !== 'failed' && state !== 'unknown') return
        if (job) await job.remove().catch(() => {})
        await this.queue.add('intern.provision', data, { ...this.jobOptions('intern.provision'), jobId })
        repaired += 1
      }),
    )
    if (repaired) this.log.info({ repaired }, 'reconciler re-enqueued provisioning jobs')
    return repaired
  }

  /**
   * Forgets idempotency records older than IDEMPOTENCY_TTL_HOURS, in bounded batches so a large
   * backlog never holds long locks. The BRIN index on created_at finds them cheaply.
   */
  async sweepIdempotencyRecords(): Promise<number> {
    const cutoff = new Date(Date.now() - this.config.IDEMPOTENCY_TTL_HOURS * 3_600_000)
    let total = 0
    for (;;) {
      const deleted = await this.db.$executeRaw`
        DELETE FROM idempotency_records WHERE ctid = ANY(ARRAY(
          SELECT ctid FROM idempotency_records WHERE created_at < ${cutoff} LIMIT 5000))`
      total += deleted
      if (deleted < 5000) return total
    }
  }

  /**
   * A marker key in Redis: when it is missing after a (re)connect, Redis started empty and every
   * queued job is gone, so reconcile everything at once instead of waiting for the age threshold.
   */
  async checkRedisEpoch(redis: Redis): Promise<void> {
    const marker = `${this.config.QUEUE_PREFIX}:epoch`
    const created = await redis.set(marker, new Date().toISOString(), 'NX')
    if (created === 'OK') {
      this.log.info('redis holds no queue epoch marker: rebuilding queue state from Postgres')
      await this.run({ everything: true })
    }
  }
}
