import type { RedisClient } from '@roster/shared'

/** How often a process adds its requests to the shared counts in Redis and reads the totals back. */
export const SYNC_EVERY_MS = 200

/**
 * Requests per minute per key, shared by every API process through Redis, with no Redis call on a
 * request's path: each process counts its own requests in the current one-minute window and, every
 * SYNC_EVERY_MS, adds them to the key's counter in Redis (one pipeline for all keys) and reads the
 * total back. A request is refused when the total last read plus this process's count since then
 * reaches the limit. The price: between two syncs the other processes' requests are not yet seen,
 * so a key may pass its limit by what the other processes admit in one interval (at most
 * (processes - 1) × its rate × 0.2 s), and a fixed window lets a burst straddle a minute's edge.
 * Redis unreachable: requests go ahead on this process's own count alone.
 */
export class RequestRate {
  /** Per key: the window, its total as last read from Redis, and this process's requests not yet added. */
  private readonly counts = new Map<string, { window: number; total: number; pending: number }>()
  private readonly timer: NodeJS.Timeout
  private syncing = false

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly perMinute: number,
    private readonly onError: (err: unknown) => void = () => {},
    private readonly now: () => number = Date.now,
  ) {
    this.timer = setInterval(() => void this.sync(), SYNC_EVERY_MS).unref()
  }

  /** Counts one request of `keyId`: 0 when it may go ahead, else the seconds until its window ends. */
  take(keyId: string): number {
    if (this.perMinute === 0) return 0
    const now = this.now()
    const window = Math.floor(now / 60_000)
    let count = this.counts.get(keyId)
    if (!count || count.window !== window) this.counts.set(keyId, (count = { window, total: 0, pending: 0 }))
    if (count.total + count.pending >= this.perMinute) return Math.max(1, Math.ceil((60_000 - (now % 60_000)) / 1000))
    count.pending++
    return 0
  }

  /** Adds every key's pending requests to Redis and reads the totals back (also called by tests). */
  async sync(): Promise<void> {
    if (this.syncing || this.counts.size === 0) return
    this.syncing = true
    const window = Math.floor(this.now() / 60_000)
    const batch: { keyId: string; pending: number; count: { window: number; total: number; pending: number } }[] = []
    for (const [keyId, count] of this.counts) {
      // A window that has ended counts for nothing any more.
      if (count.window !== window) {
        this.counts.delete(keyId)
        continue
      }
      // Keys with nothing new are asked too: their totals hold the other processes' requests.
      batch.push({ keyId, pending: count.pending, count })
      count.pending = 0
    }
    try {
      const multi = this.redis.multi()
      for (const { keyId, pending, count } of batch) {
        const key = `${this.prefix}:rpm:${keyId}:${count.window}`
        multi.incrby(key, pending).expire(key, 120)
      }
      const results = (await multi.exec()) ?? []
      batch.forEach(({ count }, i) => {
        const total = results[i * 2]?.[1]
        if (typeof total === 'number') count.total = total
      })
    } catch (err) {
      // Not added: counted again on the next sync, and meanwhile held locally.
      for (const { pending, count } of batch) count.pending += pending
      this.onError(err)
    } finally {
      this.syncing = false
    }
  }

  close() {
    clearInterval(this.timer)
  }
}
