import {
  generationsStream,
  insertGenerations,
  countedAgainst,
  limitPeriod,
  spendCounter,
  spendCounterTtl,
  type SpendLimit,
  type Db,
  type GenerationLedger,
  type GenerationRecord,
  type OnWritten,
  type ParentLogger,
  type RedisClient,
} from '@roster/shared'

/** How long an append waits for Redis before writing to Postgres instead. */
const APPEND_WAIT_MS = 2_000

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Redis did not answer within ${ms} ms`)), ms)
  })
  return Promise.race([work, late]).finally(() => clearTimeout(timer))
}

/**
 * The API's end of the generations ledger: each record appended to the Redis stream the workers
 * drain (an append acknowledged by Redis outlives this process), or, while Redis cannot take it,
 * written to Postgres here. Either way the append completes before the reply's last byte is sent.
 * A record written both ways (Redis took it but its answer was lost) is written once: the write is
 * idempotent by id.
 */
export class StreamGenerationLedger implements GenerationLedger {
  private readonly stream: string

  constructor(
    private readonly redis: RedisClient,
    private readonly queuePrefix: string,
    private readonly db: Db,
    private readonly log: Pick<ParentLogger, 'warn' | 'error'>,
    /** Told of the records written here (the spend metrics count them; the drain counts the rest). */
    private readonly onWritten?: OnWritten,
  ) {
    this.stream = generationsStream(queuePrefix)
  }

  async append(records: GenerationRecord[], limits: readonly SpendLimit[] = []): Promise<void> {
    if (records.length === 0) return
    if (this.redis.status === 'ready') {
      try {
        // One stream entry for a request's records. A Redis that stopped answering (not yet seen as
        // down) must not hold the reply: after the wait, Postgres takes the records (a late append
        // landing too is harmless: the drain's write is idempotent by id).
        const entry = JSON.stringify(records)
        if (limits.length === 0) {
          await withTimeout(this.redis.xadd(this.stream, '*', 'b', entry), APPEND_WAIT_MS)
          return
        }
        // Each limit's counter for its window rises in the same transaction as the append, so the
        // call counts against the limit exactly when it is accounted (spend-limits.ts). Owners
        // without a limit pay for no counter: a limit set later counts what came before from the ledger.
        const tx = this.redis.multi().xadd(this.stream, '*', 'b', entry)
        const at = new Date()
        for (const limit of limits) {
          const period = limitPeriod(limit, at)
          const counter = spendCounter(this.queuePrefix, limit.owner, period)
          tx.incrby(counter, records.reduce((sum, r) => sum + countedAgainst(limit, r), 0n).toString())
          const ttl = spendCounterTtl(period)
          if (ttl) tx.expire(counter, ttl)
        }
        const results = await withTimeout(tx.exec(), APPEND_WAIT_MS)
        const failed = results?.find(([err]) => err)
        if (!results || failed) throw failed?.[0] ?? new Error('the append was discarded')
        return
      } catch (err) {
        this.log.warn(
          { err: (err as Error).message },
          'generations could not be appended to Redis; writing them to Postgres',
        )
      }
    }
    try {
      const written = await insertGenerations(this.db, records)
      if (written.length) this.onWritten?.(written)
    } catch (err) {
      // Neither could take them: the caller fails a reply that has not gone out, but one that has (a
      // failed run's calls) is lost, so it is said here, with what was lost.
      this.log.error(
        { err: (err as Error).message, generations: records.map((r) => r.id) },
        'generations could be written neither to Redis nor to Postgres',
      )
      throw err
    }
  }
}
