import {
  answeredWithin,
  generationsStream,
  countedAgainst,
  limitNames,
  spendCounterTtl,
  spendEventsChannel,
  type SpendLimit,
  type Db,
  type GenerationLedger,
  type GenerationRecord,
  type LimitNames,
  type OnWritten,
  type ParentLogger,
  type RedisClient,
} from '@roster/shared'
import { insertGenerations } from '@roster/shared/repositories'
import { subscribersHaveHeard } from './plugins/change-events.js'

/** How long an append waits for Redis before writing to Postgres instead. */
const APPEND_WAIT_MS = 2_000

/** One request's records, waiting to be appended. */
interface Waiting {
  records: GenerationRecord[]
  limits: readonly SpendLimit[]
  done(err?: Error): void
}

/**
 * The API's end of the generations ledger: each record appended to the Redis stream the workers
 * drain (an append acknowledged by Redis outlives this process), or, while Redis cannot take it,
 * written to Postgres here. Either way the append completes before the reply's last byte is sent.
 * A record written both ways (Redis took it but its answer was lost) is written once: the write is
 * idempotent by id.
 *
 * Appends are group-committed: those made in one turn of the event loop go to Redis together at
 * its end (setImmediate), as one stream entry (one command, one write to the socket), and those
 * made while one is under way go together as soon as it is answered. Alone, an append waits for
 * nothing more than its own round trip; under load a request's append shares its system calls with
 * the others of its moment, which is most of what an append costs.
 */
export class StreamGenerationLedger implements GenerationLedger {
  private readonly stream: string
  private readonly channel: string
  private readonly names: (limit: SpendLimit, at: number) => LimitNames
  private queued: Waiting[] = []
  private sending = false
  private scheduled = false

  constructor(
    private readonly redis: RedisClient,
    queuePrefix: string,
    private readonly db: Db,
    private readonly log: Pick<ParentLogger, 'warn' | 'error'>,
    private readonly told: {
      /** The records written here (the spend metrics count them; the drain counts the rest). */
      onWritten?: OnWritten
      /** A counter an append took to a limit of its request, with its new value (SpendLimits). */
      onCounted?: (counter: string, value: bigint) => void
    } = {},
  ) {
    this.stream = generationsStream(queuePrefix)
    this.channel = spendEventsChannel(queuePrefix)
    this.names = limitNames(queuePrefix)
  }

  append(records: GenerationRecord[], limits: readonly SpendLimit[] = []): Promise<void> {
    if (records.length === 0) return Promise.resolve()
    if (this.redis.status !== 'ready') return this.toPostgres(records)
    return new Promise((resolve, reject) => {
      this.queued.push({ records, limits, done: (err) => (err ? reject(err) : resolve()) })
      if (this.sending || this.scheduled) return
      // Sent once the replies this turn of the event loop finishes are all in: one command for them.
      this.scheduled = true
      setImmediate(this.sendScheduled)
    })
  }

  private readonly sendScheduled = () => {
    this.scheduled = false
    if (!this.sending && this.queued.length) this.send()
  }

  /** Sends what is queued as one append; when it is answered, what queued meanwhile goes next. */
  private send() {
    const batch = this.queued
    this.queued = []
    this.sending = true
    this.toRedis(batch).then(
      () => {
        this.next()
        for (const w of batch) w.done()
      },
      (err: Error) => {
        this.next()
        // A Redis that failed or stopped answering (not yet seen as down) must not hold the replies:
        // after the wait, Postgres takes the records (a late append landing too is harmless: the
        // drain's write is idempotent by id).
        this.log.warn({ err: err.message }, 'generations could not be appended to Redis; writing them to Postgres')
        this.settleInPostgres(batch)
      },
    )
  }

  private next() {
    this.sending = false
    if (this.queued.length === 0) return
    if (this.redis.status === 'ready') return this.send()
    // Redis went away meanwhile: what waited goes to Postgres.
    const waiting = this.queued
    this.queued = []
    this.settleInPostgres(waiting)
  }

  /** Writes a batch's records to Postgres in one statement, and answers each of its requests. */
  private settleInPostgres(batch: Waiting[]) {
    this.toPostgres(batch.flatMap((w) => w.records)).then(
      () => batch.forEach((w) => w.done()),
      (failed: Error) => batch.forEach((w) => w.done(failed)),
    )
  }

  /**
   * One stream entry for the batch's records. Each limit's counter for its window rises in the same
   * transaction as the append, so a call counts against a limit exactly when it is accounted
   * (spend-limits.ts); a counter that reaches the lowest limit of it among the batch's requests is
   * published with its new value in that transaction too. Owners without a limit pay for no
   * counter: a limit set later counts what came before from the ledger.
   */
  private async toRedis(batch: Waiting[]): Promise<void> {
    const entry = JSON.stringify(batch.length === 1 ? batch[0]!.records : batch.flatMap((w) => w.records))
    const counters = new Map<string, { by: bigint; ttl: number; limit: bigint; last: Waiting }>()
    const at = Date.now()
    for (const w of batch)
      for (const limit of w.limits) {
        const { counter, period } = this.names(limit, at)
        const seen = counters.get(counter)
        // Two limits of one request on one counter (a key's own and its guardrail's) raise it once.
        if (seen?.last === w) {
          if (limit.pico < seen.limit) seen.limit = limit.pico
          continue
        }
        const by = w.records.reduce((sum, r) => sum + countedAgainst(limit, r), 0n)
        counters.set(counter, {
          by: (seen?.by ?? 0n) + by,
          ttl: spendCounterTtl(period),
          limit: seen && seen.limit < limit.pico ? seen.limit : limit.pico,
          last: w,
        })
      }
    if (counters.size === 0) {
      await answeredWithin(this.redis.xadd(this.stream, '*', 'b', entry), APPEND_WAIT_MS)
      return
    }
    // The entry and its counters in one script: atomic as a transaction, but one command on the
    // socket instead of two per counter (the keys share the prefix's hash tag: one cluster slot).
    const keys = [this.stream, ...counters.keys()]
    const args = [this.channel, entry]
    for (const c of counters.values()) args.push(c.by.toString(), String(c.ttl), c.limit.toString())
    const reached = (await answeredWithin(
      appendWithCounters(this.redis)(keys.length, ...keys, ...args),
      APPEND_WAIT_MS,
    )) as string[] | null
    // A counter at its limit was published: the other processes hear of it before this append's
    // request is answered. The append itself stands whatever this wait meets.
    if (reached?.length) await answeredWithin(subscribersHaveHeard(this.redis), APPEND_WAIT_MS).catch(() => undefined)
    const onCounted = this.told.onCounted
    if (onCounted && reached)
      for (let i = 0; i + 1 < reached.length; i += 2) onCounted(reached[i]!, BigInt(reached[i + 1]!))
  }

  private async toPostgres(records: GenerationRecord[]): Promise<void> {
    try {
      const written = await insertGenerations(this.db, records)
      if (written.length) this.told.onWritten?.(written)
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

/**
 * XADD the entry (ARGV[2]) to KEYS[1], then for each counter KEYS[i] INCRBY its amount, set its TTL
 * when the INCRBY made it (0: none), and when it reaches its limit note its value. The noted
 * counters are published on ARGV[1] and returned: counter, value, counter, value…
 *
 * Lua's numbers are doubles, exact only below 2^53 (about $9,007 in picodollars): INCRBY's answer
 * serves where it cannot be wrong (a new counter equals its amount; a counter clearly below its
 * limit, by more than a double's error, is below it), and only a counter within that margin of its
 * limit is read back as a decimal string and compared exactly (by length, then digit by digit). Most
 * appends so run one command per counter instead of three.
 */
const APPEND_WITH_COUNTERS = `
redis.call('XADD', KEYS[1], '*', 'b', ARGV[2])
local reached = {}
for i = 2, #KEYS do
  local at = 3 * i - 3
  local counted = redis.call('INCRBY', KEYS[i], ARGV[at])
  local ttl = tonumber(ARGV[at + 1])
  if ttl > 0 and counted == tonumber(ARGV[at]) then redis.call('EXPIRE', KEYS[i], ttl) end
  local limit = ARGV[at + 2]
  if counted >= tonumber(limit) * (1 - 1e-9) then
    local value = redis.call('GET', KEYS[i])
    if #value > #limit or (#value == #limit and value >= limit) then
      reached[#reached + 1] = KEYS[i]
      reached[#reached + 1] = value
    end
  end
end
if #reached > 0 then redis.call('PUBLISH', ARGV[1], cjson.encode(reached)) end
return reached`

type AppendCommand = (numKeys: number, ...keysAndArgs: string[]) => Promise<unknown>

/** The append script as a command of this client (sent by its digest; the body once, when Redis lacks it). */
function appendWithCounters(redis: RedisClient): AppendCommand {
  const client = redis as unknown as { rosterAppend?: AppendCommand; defineCommand: RedisClient['defineCommand'] }
  if (!client.rosterAppend) client.defineCommand('rosterAppend', { lua: APPEND_WITH_COUNTERS })
  return client.rosterAppend!.bind(client)
}
