import type { FastifyBaseLogger } from 'fastify'
import type { Caller, RedisClient } from '@roster/shared'

/**
 * How many chat turns (prompts and answers) the user a key acts for, or an organization key's
 * account, may start per minute: a counter per one-minute window in Redis, shared by every API
 * process. Resolves with the seconds to wait when the caller is over, else undefined. A fixed
 * window lets a burst of up to twice the limit straddle a minute's edge; that is the price of
 * one round trip per turn. If Redis cannot be asked, the turn goes ahead (said in the log): a
 * limit must not take chat down with it.
 */
export function createTurnLimit(redis: RedisClient, prefix: string, perMinute: number, log: FastifyBaseLogger) {
  return async (caller: Caller): Promise<number | undefined> => {
    if (perMinute === 0) return undefined
    const now = Date.now()
    const who = caller.userId ? `u:${caller.userId}` : `a:${caller.accountId}`
    const key = `${prefix}:chat-turns:${who}:${Math.floor(now / 60_000)}`
    try {
      const [[, count] = []] = ((await redis.multi().incr(key).expire(key, 120).exec()) ?? []) as [unknown, number][]
      if (typeof count === 'number' && count > perMinute)
        return Math.max(1, Math.ceil((60_000 - (now % 60_000)) / 1000))
    } catch (err) {
      log.warn({ err }, 'the chat turn limit could not be checked; the turn goes ahead')
    }
    return undefined
  }
}
