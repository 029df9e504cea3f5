import pg from 'pg'
import type { Db, Logger } from '@roster/shared'
import { releaseJobLease, renewJobLeases, takeJobLease } from '@roster/shared/repositories'

// Every job's run holds a lease in Postgres while it goes (job-leases.ts in the repositories says
// why). BullMQ takes a job back once its lock lapses, and a worker alive but stalled past its lock
// (its event loop, or Redis, slow for a moment under load) then has the job run again beside it: a
// Slack message answered twice, a turn declared cut off while it still runs. The lease outlives
// the lock (twice as long, renewed four times per lock) and is renewed through Postgres, so the
// second run finds the first alive and waits for it. A dead worker's leases are taken at once: each
// names this worker's beacon, a Postgres session of its own that ends with the process.

/** How soon a beacon lost (Postgres restarted, the network cut) is opened again. */
const BEACON_AGAIN_MS = 1_000

export class JobLeases {
  /** The runs this worker holds leases for: holder (the run's BullMQ lock token) → job id. */
  private readonly held = new Map<string, string>()
  private readonly timer: NodeJS.Timeout
  private renewing = false
  readonly leaseMs: number

  /** The beacon's session id while it is open (null: the leases lapse only by time). */
  private sessionPid: number | null = null
  private beacon?: pg.Client
  private stopped = false

  constructor(
    private readonly db: Db,
    private readonly databaseUrl: string,
    lockMs: number,
    private readonly log: Logger,
  ) {
    this.leaseMs = 2 * lockMs
    this.timer = setInterval(() => void this.renew(), Math.max(250, Math.floor(lockMs / 4)))
    this.timer.unref()
  }

  /** Opens the beacon (a worker's runs take leases without one meanwhile: lapsing only by time). */
  async start(): Promise<void> {
    if (this.stopped) return
    const beacon = new pg.Client({
      connectionString: this.databaseUrl,
      application_name: 'roster-worker-beacon',
      connectionTimeoutMillis: 10_000,
      keepAlive: true,
    })
    const lost = (err?: Error) => {
      if (this.beacon !== beacon) return
      this.beacon = undefined
      this.sessionPid = null
      if (this.stopped) return
      this.log.warn({ err: err?.message }, 'the job-lease beacon was lost; opening another')
      setTimeout(() => void this.start(), BEACON_AGAIN_MS).unref()
    }
    beacon.on('error', lost)
    beacon.on('end', () => lost())
    this.beacon = beacon
    try {
      await beacon.connect()
      const { rows } = await beacon.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')
      if (this.beacon !== beacon) return
      this.sessionPid = rows[0]!.pid
      // The leases held meanwhile name the new session at once.
      void this.renew()
    } catch (err) {
      lost(err as Error)
    }
  }

  /** Taken for this run, or how long the run holding it still does (ms). */
  async take(jobId: string, holder: string): Promise<{ taken: true } | { heldForMs: number }> {
    const taken = await takeJobLease(this.db, jobId, holder, this.sessionPid, this.leaseMs)
    if ('taken' in taken) this.held.set(holder, jobId)
    return taken
  }

  async release(jobId: string, holder: string): Promise<void> {
    this.held.delete(holder)
    await releaseJobLease(this.db, jobId, holder).catch((err: unknown) =>
      // It lapses on its own; the next run of the job waits at most that long.
      this.log.warn({ err: (err as Error).message, jobId }, 'a job lease was not let go'),
    )
  }

  /** One statement renews every lease this worker holds; one found lapsed and taken by another run is said. */
  private async renew() {
    if (this.renewing || this.held.size === 0) return
    this.renewing = true
    const holders = [...this.held.keys()]
    try {
      const renewed = new Set(await renewJobLeases(this.db, holders, this.sessionPid, this.leaseMs))
      for (const holder of holders) {
        const jobId = this.held.get(holder)
        if (renewed.has(holder) || jobId === undefined) continue
        this.held.delete(holder)
        this.log.warn(
          { jobId },
          'a job’s lease lapsed while it ran (this worker stalled past it): another run may take it',
        )
      }
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'job leases not renewed; will retry')
    } finally {
      this.renewing = false
    }
  }

  /** Stops renewing, and closes the beacon (this worker's leases are then taken at once). */
  async stop(): Promise<void> {
    this.stopped = true
    clearInterval(this.timer)
    const beacon = this.beacon
    this.beacon = undefined
    this.sessionPid = null
    await beacon?.end().catch(() => {})
  }
}
