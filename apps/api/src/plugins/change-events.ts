import { answeredWithin, type RedisClient } from '@roster/shared'

/** How long a change waits for Redis to pass its event on before it is answered anyway. */
const TELL_WAIT_MS = 2_000

/**
 * Publishes a change event (keys, workspaces, accounts) to the other API processes, resolving once
 * every subscriber on the Redis server has it in its socket (`subscribersHaveHeard`). A Redis that
 * is away, fails or does not answer within TELL_WAIT_MS leaves the caches' expiry as the bound.
 */
export async function publishChange(redis: RedisClient, channel: string, event: string): Promise<void> {
  if (redis.status !== 'ready') return
  try {
    await answeredWithin(
      redis.publish(channel, event).then(() => subscribersHaveHeard(redis)),
      TELL_WAIT_MS,
    )
  } catch {
    // The other processes' caches expire by themselves.
  }
}

/**
 * Resolves once what this connection has published (its command answered) is in the socket of
 * every subscriber connected to the same Redis server, where it is read before any request sent
 * after this resolves.
 *
 * The publishing command's own reply is not that moment. Redis queues the message for each
 * subscriber and then the reply for the publisher, and writes its pending clients newest first in
 * one pass before it next waits for input (networking.c: `putClientInPendingWriteQueue` adds at the
 * list's head). The reply leaves a few microseconds before the messages, and a Redis preempted
 * between the two lets an answered change meet a stale cache on another process (seen once in CI,
 * on a busy machine). A command sent after that reply arrived is read only after the pass: its
 * answer means every message of the pass was written.
 *
 * With Redis Cluster a message also crosses the cluster bus to subscribers on other nodes, which
 * this does not wait for (milliseconds).
 */
export function subscribersHaveHeard(redis: RedisClient): Promise<unknown> {
  return redis.ping()
}
