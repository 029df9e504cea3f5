import type { Queue } from 'bullmq'
import type { Db, Logger, Metrics, TransitionBatcher, WorkerConfig } from '@roster/shared'
import type { FleetDriver } from '@roster/shared/fleet'
import type { VaultService } from '@roster/shared/vault'

/** What job handlers get: plain dependencies, no framework. */
export interface WorkerDeps {
  config: WorkerConfig
  db: Db
  vault: VaultService
  /** The runtime hosts: each call goes to the host the intern is placed on. */
  runtime: FleetDriver
  /** Status changes go through the state machine, batched across concurrent jobs. */
  transitions: TransitionBatcher
  /** Publishes change events for interns changed outside the transition batcher. */
  internsChanged: (ids: string[]) => void
  queue: Queue
  log: Logger
  /** Prometheus metrics, when METRICS_PORT is set. */
  metrics?: Metrics
  /** Publishes the outbox now (rows this process just committed), rather than at the relay's next bell or poll. */
  wakeRelay?: () => void
}

export interface JobContext {
  /** The job's id (a scheduler's job carries its fire time in it). */
  jobId?: string
  /** 1-based attempt number of this run. */
  attempt: number
  /** No retry follows a failure of this attempt. */
  finalAttempt: boolean
  log: Logger
  /**
   * Puts the job back to run again in `ms`, without counting an attempt: for a wait that is no
   * failure (no runtime host has room yet). Throws; the handler ends there.
   */
  retryLater(ms: number): Promise<never>
}
