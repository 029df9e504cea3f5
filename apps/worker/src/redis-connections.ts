import { connectRedis, WorkerConfig, type RedisClient, type RedisSettings } from '@roster/shared'

/** Where Redis is, and how long an unanswered command may wait (the setting's default when not given). */
export type WorkerRedisSettings = RedisSettings & Partial<Pick<WorkerConfig, 'REDIS_COMMAND_TIMEOUT_MS'>>

/** BullMQ's longest blocking read (its BZPOPMIN waits at most 10 s): a consumer may hear nothing this long. */
const LONGEST_BLOCK_MS = 10_000
const DEFAULT_TIMEOUT_MS: number = WorkerConfig.shape.REDIS_COMMAND_TIMEOUT_MS.parse(undefined)

const timeoutOf = (settings: WorkerRedisSettings) => settings.REDIS_COMMAND_TIMEOUT_MS ?? DEFAULT_TIMEOUT_MS

/**
 * For commands Redis answers at once (publishing jobs, the reconciler's reads and adds, change
 * events). While Redis is away they fail at once (the outbox keeps the work). A command not
 * answered within REDIS_COMMAND_TIMEOUT_MS (a host cut off, or a cluster connection a failover left
 * hanging) fails, so the relay's transaction and the reconciler's pass end and their next turn
 * tries again; and the connection that heard nothing that long is closed and opened again. (A
 * closed connection alone would not fail it: ioredis keeps a command in flight to send again once
 * connected, however long that takes.)
 */
export function producerConnection(settings: WorkerRedisSettings): RedisClient {
  return connectRedis(settings, {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    commandTimeout: timeoutOf(settings),
    socketTimeout: timeoutOf(settings),
  })
}

/**
 * For blocking reads and subscriptions (BullMQ's consumers, the generations drain, the outbox
 * bell): never gives up on a command; a connection that hears nothing for the longest blocking
 * read plus REDIS_COMMAND_TIMEOUT_MS while a command waits is closed and opened again, and its
 * commands are sent again on the new one.
 */
export function consumerConnection(settings: WorkerRedisSettings): RedisClient {
  return connectRedis(settings, {
    maxRetriesPerRequest: null,
    socketTimeout: timeoutOf(settings) + LONGEST_BLOCK_MS,
  })
}
