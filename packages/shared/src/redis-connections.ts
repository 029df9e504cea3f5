import { Queue } from 'bullmq'
import { ApiConfig } from '@roster/protocol'
import { connectRedis, type ConnectionOptions, type RedisClient, type RedisSettings } from './redis.js'

/** Where Redis is, and how long an unanswered command may wait (the setting's default when not given). */
export type TimedRedisSettings = RedisSettings & { REDIS_COMMAND_TIMEOUT_MS?: number }

/** BullMQ's longest blocking read (its BZPOPMIN waits at most 10 s): a listener may hear nothing this long. */
const LONGEST_BLOCK_MS = 10_000
const DEFAULT_TIMEOUT_MS: number = ApiConfig.shape.REDIS_COMMAND_TIMEOUT_MS.parse(undefined)

const timeoutOf = (settings: TimedRedisSettings) => settings.REDIS_COMMAND_TIMEOUT_MS ?? DEFAULT_TIMEOUT_MS

/**
 * For commands Redis answers at once: the API's (counters, change events, the ledger's appends),
 * the worker's publishing of jobs and its reconciler's reads. While Redis is away they fail at
 * once (nothing piles up in memory; the outbox keeps the work). A command not answered within
 * REDIS_COMMAND_TIMEOUT_MS (a host cut off, or a cluster connection a failover left hanging)
 * fails, so whatever waits on it (the relay's transaction, a reconciler's pass, the requests'
 * counters) ends and its next turn tries again; and the connection that heard nothing that long is
 * closed and opened again. A command in flight when its connection closed is not sent again on the
 * next one (ioredis would, however late): its caller has been told it failed and has gone on (the
 * ledger to Postgres, the relay to its next try), so running it later would count it twice.
 */
export function commandConnection(
  settings: TimedRedisSettings,
  options: Pick<ConnectionOptions, 'lazyConnect'> = {},
): RedisClient {
  return connectRedis(settings, {
    ...options,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    commandTimeout: timeoutOf(settings),
    socketTimeout: timeoutOf(settings),
    autoResendUnfulfilledCommands: false,
  })
}

/**
 * For blocking reads and subscriptions (BullMQ's consumers, the generations drain, the outbox
 * bell, the API's change events): never gives up on a command; a connection that hears nothing for
 * the longest blocking read plus REDIS_COMMAND_TIMEOUT_MS while a command waits is closed and
 * opened again, and its commands are sent again on the new one.
 */
export function listeningConnection(
  settings: TimedRedisSettings,
  options: Pick<ConnectionOptions, 'lazyConnect'> = {},
): RedisClient {
  return connectRedis(settings, {
    ...options,
    maxRetriesPerRequest: null,
    socketTimeout: timeoutOf(settings) + LONGEST_BLOCK_MS,
  })
}

/**
 * A BullMQ queue (the producer side: adds, reads of jobs and counts) on a command connection.
 * BullMQ reads Redis's version once, when a queue is made, and a failure of that one read (Redis
 * killed, or silent past REDIS_COMMAND_TIMEOUT_MS, at that moment) fails every later call of the
 * queue for good: a worker started just before Redis restarted would never publish a job again
 * (the chaos test found it). So the version is not read (`skipVersionCheck`; Roster needs Redis
 * 6.2 or later, README.md), and making the queue sends Redis nothing.
 */
export function producerQueue(name: string, connection: RedisClient, prefix: string): Queue {
  return new Queue(name, { connection, prefix, skipVersionCheck: true })
}
