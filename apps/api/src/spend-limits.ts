import {
  keySpend,
  limitPeriod,
  spendCounter,
  type Db,
  type GenerationContext,
  type KeyLimit,
  type RedisClient,
} from '@roster/shared'
import { GatewayError } from '@roster/gateway'

const WINDOW = { daily: 'day', weekly: 'week', monthly: 'month' } as const

/** How long a key's spend read from Postgres is trusted by this process (ms). */
const POSTGRES_READ_MS = 1_000

/**
 * Refuses a request, before any upstream call, when its key has spent its limit in the limit's
 * window (402). What a key spent is the larger of two counts: Redis's counter for the window, which
 * each append of a generation raises (by what counts against the limit) in the same transaction as
 * the append itself (every API process sees a
 * call the moment it is accounted), and the ledger's own sum in Postgres (key_spend: what the
 * drain wrote, and what the API wrote itself while Redis was away), read at most once a second.
 *
 * Overspend is bounded by what was admitted before the limit was crossed: requests already past
 * this check when the counter reached the limit finish, and are counted; the next is refused.
 * At most KEY_CONCURRENCY requests of a key run at once, so a key can exceed its limit by at most
 * the cost of that many requests.
 */
export class SpendLimits {
  private readonly fromPostgres = new Map<string, { at: number; credits: bigint; byok: bigint }>()

  constructor(
    private readonly redis: RedisClient,
    private readonly queuePrefix: string,
    private readonly db: Db,
    private readonly now: () => number = Date.now,
  ) {}

  /** Nothing to wait for (undefined) when the key has no limit: most requests pay nothing for this. */
  check(ctx: GenerationContext | undefined): Promise<void> | undefined {
    const limit = ctx?.limit
    if (!ctx?.keyId || !limit) return undefined
    return this.checkLimit(ctx.keyId, limit)
  }

  private async checkLimit(keyId: string, limit: KeyLimit): Promise<void> {
    const at = new Date(this.now())
    const period = limitPeriod(limit, at)
    const [counted, ledger] = await Promise.all([this.counter(keyId, period), this.ledger(keyId, period)])
    const inLedger = ledger.credits + (limit.includeByok ? ledger.byok : 0n)
    const spend = counted > inLedger ? counted : inLedger
    if (spend < limit.pico) return
    const window = limit.reset ? `this ${WINDOW[limit.reset]} (UTC)` : 'its lifetime'
    throw new GatewayError(
      402,
      'payment_required',
      `this key has spent its limit of $${(Number(limit.pico) / 1e12).toFixed(6)} for ${window}; raise the limit (PATCH /api/v1/keys/{hash}) or wait for the window to reset`,
    )
  }

  /** Redis's count (0 while Redis is away: the ledger's then stands alone). */
  private async counter(keyId: string, period: string): Promise<bigint> {
    if (this.redis.status !== 'ready') return 0n
    try {
      return BigInt((await this.redis.get(spendCounter(this.queuePrefix, keyId, period))) ?? 0)
    } catch {
      return 0n
    }
  }

  private async ledger(keyId: string, period: string) {
    const cacheKey = `${keyId}/${period}`
    const hit = this.fromPostgres.get(cacheKey)
    if (hit && this.now() - hit.at < POSTGRES_READ_MS) return hit
    const row = (await keySpend(this.db, keyId, [period])).get(period) ?? { credits: 0n, byok: 0n }
    if (this.fromPostgres.size > 50_000) this.fromPostgres.clear()
    const entry = { at: this.now(), ...row }
    this.fromPostgres.set(cacheKey, entry)
    return entry
  }
}
