import { Cluster, Redis, type RedisOptions } from 'ioredis'

/** A connection to Redis, or to a Redis Cluster (REDIS_CLUSTER_NODES): the rest of Roster uses either alike. */
export type RedisClient = Redis | Cluster

export interface RedisSettings {
  REDIS_URL: string
  REDIS_CLUSTER_NODES?: { host: string; port: number }[]
}

/** How one connection behaves (the options each caller picks; they mean the same on a cluster). */
export type ConnectionOptions = Pick<
  RedisOptions,
  | 'maxRetriesPerRequest'
  | 'enableOfflineQueue'
  | 'lazyConnect'
  | 'socketTimeout'
  | 'commandTimeout'
  | 'autoResendUnfulfilledCommands'
  | 'retryStrategy'
>

/**
 * Opens a connection the way the settings say: one server (REDIS_URL), or a cluster client over
 * REDIS_CLUSTER_NODES, with the URL's credentials and TLS given to every node. Every key Roster
 * writes carries the QUEUE_PREFIX hash tag, so on a cluster it all lives in one slot and BullMQ's
 * multi-key scripts work unchanged.
 */
export function connectRedis(settings: RedisSettings, options: ConnectionOptions = {}): RedisClient {
  if (!settings.REDIS_CLUSTER_NODES?.length) return new Redis(settings.REDIS_URL, options)
  const url = new URL(settings.REDIS_URL)
  const { lazyConnect, enableOfflineQueue, ...perNode } = options
  return new Cluster(settings.REDIS_CLUSTER_NODES, {
    lazyConnect,
    enableOfflineQueue,
    // A failover takes a moment to settle: commands that meet it wait and follow the new master.
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 300,
    retryDelayOnTryAgain: 200,
    slotsRefreshTimeout: 2_000,
    redisOptions: {
      ...perNode,
      username: url.username ? decodeURIComponent(url.username) : undefined,
      password: url.password ? decodeURIComponent(url.password) : undefined,
      tls: url.protocol === 'rediss:' ? {} : undefined,
    },
  })
}

/**
 * `work` (a Redis command), failed when Redis does not answer within `ms`: a Redis host cut off
 * keeps its connection looking ready, and a request must not wait on it forever.
 */
export function answeredWithin<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Redis did not answer within ${ms} ms`)), ms)
  })
  return Promise.race([work, late]).finally(() => clearTimeout(timer))
}
