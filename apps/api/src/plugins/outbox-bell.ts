import { type RedisClient } from '@roster/shared'
import { outboxBellChannel } from '@roster/shared/repositories'

/**
 * Rings the relay's bell after outbox rows commit, at most once per event-loop turn however many
 * creates finished in it. Failures are ignored on purpose: the relay also polls.
 */
export function createOutboxBell(redis: RedisClient, queuePrefix: string): () => void {
  const channel = outboxBellChannel(queuePrefix)
  let pending = false
  return () => {
    if (pending) return
    pending = true
    setImmediate(() => {
      pending = false
      if (redis.status === 'ready') redis.publish(channel, '1').catch(() => {})
    })
  }
}
