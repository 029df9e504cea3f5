import type { JobsOptions } from 'bullmq'
import {
  INTERN_QUEUE,
  Jobs,
  reportConnectionErrors,
  type JobKind,
  type ParentLogger,
  type WorkerConfig,
  commandConnection,
  producerQueue,
  type TimedRedisSettings,
} from '@roster/shared'

export type JobOptionsFor = (kind: JobKind) => JobsOptions

/** Job options per kind: its retries from the job catalogue, their numbers from the configuration. */
export function jobOptionsFor(
  config: Pick<WorkerConfig, 'PROVISION_ATTEMPTS' | 'PROVISION_BACKOFF_MS' | 'SLACK_ATTEMPTS' | 'SLACK_BACKOFF_MS'>,
): JobOptionsFor {
  return (kind) => {
    const retry = Jobs[kind].retry
    const job = Jobs[kind]
    return {
      ...('priority' in job ? { priority: job.priority } : {}),
      attempts: config[retry.attempts],
      backoff: { type: 'exponential', delay: config[retry.backoffMs] },
      // Kept for a while so a re-published job id is recognised as done, then trimmed.
      removeOnComplete: { age: 3_600, count: 50_000 },
      removeOnFail: { age: 7 * 86_400 },
    }
  }
}

/**
 * The producer side, on a command connection: while Redis is away or silent, adds fail (at once,
 * or past REDIS_COMMAND_TIMEOUT_MS) instead of piling up in memory; the outbox keeps the work.
 */
export function createQueue(
  config: TimedRedisSettings & Pick<WorkerConfig, 'QUEUE_PREFIX'>,
  log: Pick<ParentLogger, 'warn' | 'info'>,
) {
  const connection = commandConnection(config)
  reportConnectionErrors(connection, log, 'queue producer: redis')
  const queue = producerQueue(INTERN_QUEUE, connection, config.QUEUE_PREFIX)
  reportConnectionErrors(queue, log, 'queue producer')
  return { queue, connection }
}
