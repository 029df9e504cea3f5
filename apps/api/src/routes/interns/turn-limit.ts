import type { FastifyBaseLogger } from 'fastify'
import type { Caller, RedisClient } from '@roster/shared'

/**
 * A count per one-minute window in Redis, shared by every API process: resolves with the seconds to
 * wait when `key` is over `perMinute` this minute, else undefined. A fixed window lets a burst of up
 * to twice the limit straddle a minute's edge; that is the price of one round trip per call. If
 * Redis cannot be asked, the call goes ahead (said in the log): a limit must not take its route
 * down with it.
 */
export function overMinuteLimit(redis: RedisClient, prefix: string, log: FastifyBaseLogger) {
  return async (key: string, perMinute: number): Promise<number | undefined> => {
    if (perMinute === 0) return undefined
    const now = Date.now()
    const windowKey = `${prefix}:per-minute:${key}:${Math.floor(now / 60_000)}`
    try {
      const [[, count] = []] = ((await redis.multi().incr(windowKey).expire(windowKey, 120).exec()) ?? []) as [
        unknown,
        number,
      ][]
      if (typeof count === 'number' && count > perMinute)
        return Math.max(1, Math.ceil((60_000 - (now % 60_000)) / 1000))
    } catch (err) {
      log.warn({ err, key }, 'a per-minute limit could not be checked; the call goes ahead')
    }
    return undefined
  }
}

/**
 * How many chat turns (prompts and answers) the user a key acts for, or an organization key's
 * account, may start per minute (CHAT_TURNS_PER_MINUTE).
 */
export function createTurnLimit(redis: RedisClient, prefix: string, perMinute: number, log: FastifyBaseLogger) {
  const over = overMinuteLimit(redis, prefix, log)
  return (caller: Caller) =>
    over(`chat-turns:${caller.userId ? `u:${caller.userId}` : `a:${caller.accountId}`}`, perMinute)
}
