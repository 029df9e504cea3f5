import type { Queue } from 'bullmq'
import { createHash } from 'node:crypto'
import { enqueueInTx, Jobs, transition, type Db, type Logger, type Metrics, type RedisClient, type RuntimeDriver, type WorkerConfig } from '@roster/shared'
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
    private readonly runtime: RuntimeDriver,
    /** Called with the interns the reconciler changed (it wrote outbox rows for them). */
    private readonly changed: (ids: string[]) => void = () => {},
    private readonly metrics?: Pick<Metrics, 'reconcilerRepairs'>,
  ) {}

  /** Repairs counted by kind (lost_runtime, stray_runtime, stopped_runtime, teardown_resumed, provision_requeued). */
  private repaired(kind: string, count = 1) {
    if (count) this.metrics?.reconcilerRepairs.inc({ kind }, count)
  }

  private runtimeUnreachable = 0

  /**
   * Keeps the runtime and the database in agreement, both ways:
   * - running interns whose runtime is gone (the host was killed or restarted) are restored: a new
   *   provisioning run starts them again, or, if it cannot, ends failed with its reason. The host's
   *   list is a hint: an intern counts as lost only if its own health check fails too, and one that
   *   just started gets a moment's grace;
   * - a runtime that runs an intern which is stopped or failed is stopped (a provisioning run that
   *   died after starting it may have lost the race with a suspend);
   * - a runtime hosting an intern that no longer exists is removed (a teardown lost mid-way).
   */
  async checkRuntimes(): Promise<number> {
    let hosted: Map<string, { running: boolean }>
    try {
      hosted = await this.runtime.hosted()
      this.runtimeUnreachable = 0
    } catch (err) {
      // Unreachable twice in a row: it runs nothing we can reach, so restore (or fail) every intern.
      if (++this.runtimeUnreachable < 2) throw err
      hosted = new Map()
    }
    let repaired = 0

    const running = await this.db.$queryRaw<{ id: string; hostname: string | null }[]>`
      SELECT id, hostname FROM interns WHERE status = 'running' AND updated_at < now() - interval '2 seconds' LIMIT 5000`
    const suspects = running.filter((r) => !hosted.get(r.id)?.running)
    const lost = (
      await Promise.all(suspects.map(async (r) => (r.hostname && (await this.runtime.healthy(r.hostname)) ? null : r)))
    ).filter((r) => r !== null)
    for (const { id } of lost) {
      await this.db.$transaction(async (tx) => {
        const next = await transition(tx, {
          internId: id,
          from: ['running'],
          to: 'queued',
          set: { progress: null, lastFailureMessage: null, bumpGeneration: true },
        })
        if (next) await enqueueInTx(tx, 'intern.provision', { internId: id, generation: next.provision_generation })
      })
    }
    if (lost.length) {
      this.changed(lost.map((r) => r.id))
      this.log.warn({ lost: lost.length }, 'runtimes of running interns were lost; provisioning them again')
    }
    repaired += lost.length
    this.repaired('lost_runtime', lost.length)

    if (hosted.size > 0) {
      const ids = [...hosted.keys()]
      const known = await this.db.$queryRaw<{ id: string; status: string; updated_at: Date }[]>`
        SELECT id, status::text AS status, updated_at FROM interns WHERE id = ANY(${ids}::uuid[])`
      const byId = new Map(known.map((k) => [k.id, k]))
      const settledBefore = Date.now() - 2_000
      for (const [id, { running: isRunning }] of hosted) {
        const intern = byId.get(id)
        if (!intern) {
          await this.runtime.remove(id)
          this.repaired('stray_runtime')
          repaired++
        } else if (isRunning && (intern.status === 'stopped' || intern.status === 'failed') && intern.updated_at.getTime() < settledBefore) {
          await this.runtime.stop(id)
          this.repaired('stopped_runtime')
          repaired++
        }
      }
    }
    return repaired
  }

  /** Teardowns whose job vanished get a new one (same id while the intern stays stuck). */
  async resumeTeardowns(): Promise<number> {
    const stuck = await this.db.$queryRaw<{ id: string; updated_at: Date }[]>`
      SELECT i.id, i.updated_at FROM interns i
      WHERE i.status = 'destroying' AND i.updated_at < ${new Date(Date.now() - this.config.STUCK_AFTER_MS)}
        AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.payload->>'internId' = i.id::text)
      LIMIT 1000`
    for (const { id, updated_at } of stuck) {
      const digest = createHash('sha256').update(`${id}:${updated_at.toISOString()}`).digest('hex')
      const request = `${digest.slice(0, 8)}-${digest.slice(8, 12)}-4${digest.slice(13, 16)}-8${digest.slice(17, 20)}-${digest.slice(20, 32)}`
      const data = { internId: id, request, skipArchive: false }
      await this.queue.add('intern.destroy', data, { ...this.jobOptions('intern.destroy'), jobId: Jobs['intern.destroy'].jobId(data) })
    }
    this.repaired('teardown_resumed', stuck.length)
    return stuck.length
  }

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
    this.repaired('provision_requeued', repaired)
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
  async checkRedisEpoch(redis: RedisClient): Promise<void> {
    const marker = `${this.config.QUEUE_PREFIX}:epoch`
    const created = await redis.set(marker, new Date().toISOString(), 'NX')
    if (created === 'OK') {
      this.log.info('redis holds no queue epoch marker: rebuilding queue state from Postgres')
      await this.run({ everything: true })
    }
  }
}
