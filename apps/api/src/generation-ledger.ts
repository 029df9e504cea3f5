import {
  generationsStream,
  insertGenerations,
  spendCounter,
  spendCounterTtl,
  spendPeriods,
  type Db,
  type GenerationLedger,
  type GenerationRecord,
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
    private readonly log: Pick<ParentLogger, 'warn'>,
  ) {
    this.stream = generationsStream(queuePrefix)
  }

  async append(records: GenerationRecord[]): Promise<void> {
    if (records.length === 0) return
    if (this.redis.status === 'ready') {
      try {
        // A Redis that stopped answering (not yet seen as down) must not hold the reply: after the
        // wait, Postgres takes the records (a late XADD landing too is harmless).
        // The records and their keys' spend counters in one transaction: a call is counted against
        // its key's limit exactly when it is accounted (spend-limits.ts).
        const tx = this.redis.multi()
        for (const r of records) {
          tx.xadd(this.stream, '*', 'g', JSON.stringify(r))
          if (!r.key_id || r.cost_pico === '0') continue
          const kind = r.is_byok ? 'byok' : 'credits'
          for (const period of Object.values(spendPeriods(new Date(r.created_at)))) {
            const counter = spendCounter(this.queuePrefix, r.key_id, period, kind)
            tx.incrby(counter, r.cost_pico)
            const ttl = spendCounterTtl(period)
            if (ttl) tx.expire(counter, ttl)
          }
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
    await insertGenerations(this.db, records)
  }
}
