import type { RedisClient } from './redis.js'

/**
 * Change events: after a change to an intern commits, its id is published on this Redis channel.
 * They carry no state (readers load it), so a late or duplicate event is harmless; a lost one is
 * bounded by the readers' own freshness limits.
 */
export const internEventsChannel = (queuePrefix: string) => `${queuePrefix}:intern-events`

/**
 * Key events: the digests (base64) of API keys whose settings changed or that were deleted, so
 * every API process forgets what it cached of them at once.
 */
export const keyEventsChannel = (queuePrefix: string) => `${queuePrefix}:key-events`

/** Publishes changed intern ids, coalesced: at most one PUBLISH per event-loop turn. */
export function createInternEventPublisher(redis: RedisClient, queuePrefix: string): (ids: Iterable<string>) => void {
  const channel = internEventsChannel(queuePrefix)
  let pending: Set<string> | undefined
  return (ids) => {
    if (!pending) {
      pending = new Set()
      setImmediate(() => {
        const batch = [...pending!]
        pending = undefined
        if (batch.length && redis.status === 'ready') redis.publish(channel, batch.join(',')).catch(() => {})
      })
    }
    for (const id of ids) pending.add(id)
  }
}
