import type { Queue } from 'bullmq'
import { DESTINATIONS_QUEUE, INTERN_QUEUE, producerQueue, type QueueDepth, type RedisClient } from '@roster/shared'

// The workers' queues as the API reaches them: made the first time one is needed, on the API's own
// Redis connection (shared, so closing the API's client ends them).

/** Every queue Roster's workers take jobs from. */
export const QUEUE_NAMES = [INTERN_QUEUE, DESTINATIONS_QUEUE] as const
export type QueueName = (typeof QUEUE_NAMES)[number]

/** The job states an operator reads a queue's depth in. */
const DEPTH_STATES = ['waiting', 'prioritized', 'active', 'delayed', 'failed', 'completed'] as const

export function apiQueues(redis: RedisClient, prefix: string) {
  const made = new Map<QueueName, Queue>()
  const get = (name: QueueName) => {
    let queue = made.get(name)
    if (!queue) made.set(name, (queue = producerQueue(name, redis, prefix)))
    return queue
  }
  return {
    get,
    /** Each queue's jobs by state, read together. */
    depths: (): Promise<QueueDepth[]> =>
      Promise.all(
        QUEUE_NAMES.map(async (name) => {
          const counts = await get(name).getJobCounts(...DEPTH_STATES)
          const jobs = Object.fromEntries(DEPTH_STATES.map((s) => [s, counts[s] ?? 0])) as QueueDepth['jobs']
          return { name, jobs }
        }),
      ),
  }
}
export type ApiQueues = ReturnType<typeof apiQueues>
