import type { Queue } from 'bullmq'
import { createHash } from 'node:crypto'
import {
  inGroup,
  Jobs,
  transition,
  type Db,
  type Logger,
  type Metrics,
  type RedisClient,
  type WorkerConfig,
} from '@roster/shared'
import { fleetTimes, vacateHosts, type FleetDriver, type HostAddress } from '@roster/shared/fleet'
import {
  beatingHosts,
  enqueueInTx,
  forgetIdempotencyRecords,
  markMoved,
  recordsOf,
  runningOnHost,
  stuckProvisioning,
  stuckTeardowns,
} from '@roster/shared/repositories'
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
    private readonly runtime: FleetDriver,
    /** Called with the interns the reconciler changed (it wrote outbox rows for them). */
    private readonly changed: (ids: string[]) => void = () => {},
    private readonly metrics?: Pick<Metrics, 'reconcilerRepairs'>,
  ) {}

  /** Repairs counted by kind (lost_runtime, stray_runtime, stopped_runtime, teardown_resumed, provision_requeued). */
  private repaired(kind: string, count = 1) {
    if (count) this.metrics?.reconcilerRepairs.inc({ kind }, count)
  }

  /**
   * Keeps the fleet and the record in agreement, both ways:
   * - hosts that stopped beating are declared dead, and the interns of dead hosts and of hosts that
   *   finished draining are placed again: each back to `queued` under a new generation, its run
   *   placing it on another live host with room (fleet/hosts.ts);
   * - on each live host, running interns it no longer runs (the host restarted) are provisioned
   *   again; the host's list is a hint: an intern counts as lost only if its own health check fails
   *   too, and one that just started gets a moment's grace;
   * - an intern a host runs that the record has stopped or failed is stopped, and one the record no
   *   longer places there (deleted, or placed elsewhere) is removed from it.
   *
   * Two passes: this one (hosts past their deadline declared dead, their interns placed again; the
   * record alone, quick) and checkHosts (the hosts asked).
   */
  async vacateHosts(): Promise<number> {
    const { dead, moved } = await vacateHosts(this.db, fleetTimes(this.config))
    if (dead.length) this.log.warn({ hosts: dead }, 'runtime hosts stopped beating: declared dead')
    if (moved.length) {
      this.changed(moved)
      this.log.warn({ moved: moved.length }, 'interns of dead or drained runtime hosts are being placed on others')
    }
    this.repaired('host_failover', moved.length)
    return moved.length
  }

  /** Each live host asked what it runs, all at once: one that hangs (paused, cut off) delays no other. */
  async checkHosts(): Promise<number> {
    const hosts = await beatingHosts(this.db, this.config.FLEET_DEAD_AFTER_MS)
    const repaired = await Promise.all(
      hosts.map((host) =>
        this.checkHost({ hostId: host.id, address: host.address, epoch: host.epoch }, host.state === 'draining'),
      ),
    )
    return repaired.reduce((a, b) => a + b, 0)
  }

  /** `draining`: its interns stop there on purpose, and move once it has drained (vacateHosts); none is lost. */
  private async checkHost(at: HostAddress, draining: boolean): Promise<number> {
    let hosted: Map<string, { running: boolean; generation: number }>
    try {
      hosted = await this.runtime.hosted(at)
    } catch {
      // Unreachable: if it stays so, it stops beating and is declared dead.
      return 0
    }
    let repaired = 0
    const running = draining ? [] : await runningOnHost(this.db, at.hostId)
    const suspects = running.filter((r) => !hosted.get(r.id)?.running)
    const lost = (
      await Promise.all(
        suspects.map(async (r) => (r.hostname && (await this.runtime.healthy(at, r.hostname)) ? null : r)),
      )
    ).filter((r) => r !== null)
    for (const { id } of lost) {
      await this.db.$transaction(async (tx) => {
        const next = await transition(tx, {
          internId: id,
          from: ['running'],
          to: 'queued',
          set: { progress: null, lastFailureMessage: null, bumpGeneration: true },
        })
        if (!next) return
        // Placed again like a moved intern: a chat meanwhile waits for it (CHAT_MOVE_WAIT_MS).
        await markMoved(tx, id)
        await enqueueInTx(tx, 'intern.provision', { internId: id, generation: next.provision_generation })
      })
    }
    if (lost.length) {
      this.changed(lost.map((r) => r.id))
      this.log.warn(
        { host: at.hostId, lost: lost.length },
        'runtimes of running interns were lost; provisioning them again',
      )
    }
    repaired += lost.length
    this.repaired('lost_runtime', lost.length)

    if (hosted.size > 0) {
      const ids = [...hosted.keys()]
      const known = await recordsOf(this.db, ids)
      const byId = new Map(known.map((k) => [k.id, k]))
      const settledBefore = Date.now() - 2_000
      for (const [id, { running: isRunning }] of hosted) {
        const intern = byId.get(id)
        if (!intern || intern.runtime_host_id !== at.hostId) {
          await this.runtime.remove(at, id)
          this.repaired('stray_runtime')
          repaired++
        } else if (isRunning && inGroup('atRest', intern.status) && intern.updated_at.getTime() < settledBefore) {
          await this.runtime.stop({ ...at, generation: intern.generation }, id)
          this.repaired('stopped_runtime')
          repaired++
        }
      }
    }
    return repaired
  }

  /** Teardowns whose job vanished get a new one (same id while the intern stays stuck). */
  async resumeTeardowns(): Promise<number> {
    const stuck = await stuckTeardowns(this.db, new Date(Date.now() - this.config.STUCK_AFTER_MS))
    for (const { id, updated_at } of stuck) {
      const digest = createHash('sha256').update(`${id}:${updated_at.toISOString()}`).digest('hex')
      const request = `${digest.slice(0, 8)}-${digest.slice(8, 12)}-4${digest.slice(13, 16)}-8${digest.slice(17, 20)}-${digest.slice(20, 32)}`
      const data = { internId: id, request, skipArchive: false }
      await this.queue.add('intern.destroy', data, {
        ...this.jobOptions('intern.destroy'),
        jobId: Jobs['intern.destroy'].jobId(data),
      })
    }
    this.repaired('teardown_resumed', stuck.length)
    return stuck.length
  }

  /** `everything` skips the age threshold (used when Redis is known to have lost its data). */
  async run({ everything = false } = {}): Promise<number> {
    const olderThan = new Date(Date.now() - (everything ? 0 : this.config.STUCK_AFTER_MS))
    const interns = await stuckProvisioning(this.db, olderThan)
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
      const deleted = await forgetIdempotencyRecords(this.db, cutoff, 5_000)
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
