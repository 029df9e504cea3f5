import { limitNames, type LimitNames, type Db, type RedisClient, type SpendLimit } from '@roster/shared'
import { spendOfOwners } from '@roster/shared/repositories'
import { spentRefusal } from './spend-refusal.js'
import { BatchedReads } from './batched-reads.js'

/** What an owner spent in a period: through the shared credential, and through its own keys (BYOK). */
type Spend = { credits: bigint; byok: bigint }
const NOTHING: Spend = Object.freeze({ credits: 0n, byok: 0n })

/**
 * What counts as spent against `limit`: the larger of Redis's counter and the ledger's sum (with
 * spend through the owner's own provider keys only where the limit counts it).
 */
function spentAgainst(limit: SpendLimit, counted: bigint, ledger: Spend): bigint {
  const inLedger = ledger.credits + (limit.includeByok ? ledger.byok : 0n)
  return counted > inLedger ? counted : inLedger
}

/** How long an owner's spend read from Postgres is trusted by this process (ms). */
const POSTGRES_READ_MS = 1_000
/** How long a counter read from Redis (or heard of) is trusted while spend events arrive (ms). */
const COUNTER_READ_MS = 1_000
/** Entries kept before a cache starts afresh (bounds the memory of many owners and periods). */
const MAX_ENTRIES = 50_000

/**
 * An owner's spend in a period as the ledger last said it: `value` read when `at`, `pending` while a
 * read is under way (the value before it still serves until its time is up), `used` by a check
 * since that read.
 */
type Sum = {
  key: string
  owner: string
  period: string
  at: number
  value?: Spend
  pending?: Promise<Spend>
  used: boolean
}

/**
 * Refuses a request, before any upstream call, when a limit it counts against is spent in its
 * window (402): its key's limit, its workspace's budgets, its account's credits. What an owner spent is the larger of two
 * counts: Redis's counter for the window, which each append of a generation raises (by what counts
 * against the limit) in the same transaction as the append itself (every API process sees a call
 * the moment it is accounted), and the ledger's own sum in Postgres (the spend table: what the
 * drain wrote, and what the API wrote itself while Redis was away), read at most once a second.
 *
 * A counter once read is known here for COUNTER_READ_MS while this process hears spend events
 * (`trusted`): the append that takes a counter to a limit of its request publishes the counter's
 * new value in the same script (generation-ledger.ts), and waits until every subscriber has it
 * (plugins/change-events.ts) before its reply's last byte; `saw` takes it in. Below its limits a counter need not be read again for each request; at a limit,
 * every process knows it before a request sent after that reply arrives. Any change to keys,
 * workspaces or guardrails (`forget`), and a gap in the events, drop what is known: a lowered
 * limit meets a counter read afresh.
 *
 * Overspend is bounded by what was admitted before the limit was crossed: requests already past
 * this check when the counter reached the limit finish, and are counted; the next is refused.
 * At most KEY_CONCURRENCY requests of a key run at once, so a key can exceed its limit by at most
 * the cost of that many requests.
 */
export class SpendLimits {
  private readonly fromPostgres = new Map<string, Sum>()
  /** Counters read or heard of, by key: trusted for COUNTER_READ_MS while `trusted()`. */
  private readonly counted = new Map<string, { at: number; value: bigint }>()
  private readonly reads: BatchedReads
  private readonly names: (limit: SpendLimit, at: number) => LimitNames

  constructor(
    private readonly redis: RedisClient,
    queuePrefix: string,
    private readonly db: Db,
    private readonly now: () => number = Date.now,
    /** Whether spend events arrive now (the API's subscriber is connected); without, every check reads. */
    private readonly trusted: () => boolean = () => false,
  ) {
    this.names = limitNames(queuePrefix)
    this.reads = new BatchedReads(redis)
  }

  /** A counter's value, from an append that reached a limit (this process's or, by event, another's). */
  saw(counter: string, value: bigint): void {
    this.keep(counter, value, this.now())
  }

  /** Keeps a counter's value as of `at`; a fresher one known here (counters only rise) stands. */
  private keep(counter: string, value: bigint, at: number) {
    const k = this.counted.get(counter)
    if (k && at - k.at < COUNTER_READ_MS) {
      if (k.value > value) value = k.value
      if (k.at > at) at = k.at
    } else if (!k && this.counted.size >= MAX_ENTRIES) this.counted.clear()
    this.counted.set(counter, { at, value })
  }

  /**
   * Limits changed, or events may have been missed: every counter and ledger sum is read afresh (a
   * budget that now counts BYOK must not meet a sum read before the spend it now counts).
   */
  forget(): void {
    this.counted.clear()
    this.fromPostgres.clear()
  }

  /**
   * Nothing to wait for (undefined) when no limit applies, or when every count it needs is known
   * here: most requests pay no promise for this. A spent limit throws (402), at once when known.
   */
  check(limits: readonly SpendLimit[] | undefined): Promise<void> | undefined {
    if (!limits?.length) return undefined
    const now = this.now()
    const names = limits.map((l) => this.names(l, now))
    const known = this.known(names, now)
    const ledgers = this.ledgers(limits, names, now)
    if (known && !(ledgers instanceof Promise)) {
      limits.forEach((l, i) => this.refuseIfSpent(l, known[i]!, ledgers[i]!))
      return undefined
    }
    // Every limit's counter in one command, and the ledger's sums that are due in one statement: a
    // request under several limits reads Redis once and Postgres at most once.
    const counters = names.map((n) => n.counter)
    return Promise.all([known ?? this.counters(counters, now), ledgers]).then(([counted, spent]) =>
      limits.forEach((l, i) => this.refuseIfSpent(l, counted[i]!, spent[i]!)),
    )
  }

  /**
   * What each limit has left, counted as `check` counts it (the larger of Redis's counter and the
   * ledger's sum): for showing which limit binds a key (the console's keys page), not for refusing.
   */
  async standing(limits: readonly SpendLimit[]): Promise<{ limit: SpendLimit; spentPico: bigint }[]> {
    if (!limits.length) return []
    const now = this.now()
    const names = limits.map((l) => this.names(l, now))
    const [counted, spent] = await Promise.all([
      this.known(names, now) ??
        this.counters(
          names.map((n) => n.counter),
          now,
        ),
      this.ledgers(limits, names, now),
    ])
    return limits.map((limit, i) => ({ limit, spentPico: spentAgainst(limit, counted[i]!, spent[i]!) }))
  }

  /** Every counter's value when all are known and fresh, else undefined (they are read together). */
  private known(names: LimitNames[], now: number): bigint[] | undefined {
    if (!this.trusted()) return undefined
    const values: bigint[] = []
    for (const n of names) {
      const k = this.counted.get(n.counter)
      if (!k || now - k.at >= COUNTER_READ_MS) return undefined
      values.push(k.value)
    }
    return values
  }

  /**
   * Each limit's sum in the ledger, trusted for POSTGRES_READ_MS; the checks that come while a read
   * is under way share it. When any is due, every other sum a check used since its last read and
   * half through its time goes in the same statement: the owners a process serves are read together
   * about once a second, not each at its own moment (a statement's cost is mostly its own, not its
   * rows'). A failed read keeps what was known, trusted until its time is up; a sum never read is
   * then forgotten.
   */
  private ledgers(limits: readonly SpendLimit[], names: LimitNames[], now: number): Spend[] | Promise<Spend[]> {
    const fresh = (sum: Sum) => sum.value !== undefined && now - sum.at < POSTGRES_READ_MS
    const sums = names.map((n, i) => {
      let sum = this.fromPostgres.get(n.ledger)
      if (!sum) {
        if (this.fromPostgres.size >= MAX_ENTRIES) this.fromPostgres.clear()
        sum = { key: n.ledger, owner: limits[i]!.owner, period: n.period, at: now, used: true }
        this.fromPostgres.set(n.ledger, sum)
      }
      sum.used = true
      return sum
    })
    if (sums.every(fresh)) return sums.map((sum) => sum.value!)
    if (sums.some((sum) => !fresh(sum) && !sum.pending)) this.readSums(sums, now)
    return Promise.all(sums.map((sum) => (fresh(sum) ? sum.value! : sum.pending!)))
  }

  /**
   * Reads a check's sums that are not fresh, with every other sum a check used since its last read
   * and half through its time.
   */
  private readSums(sums: Sum[], now: number): void {
    const due = sums.filter((sum) => !sum.pending && (sum.value === undefined || now - sum.at >= POSTGRES_READ_MS))
    const asked = new Set(due)
    for (const sum of this.fromPostgres.values())
      if (
        sum.used &&
        !sum.pending &&
        sum.value !== undefined &&
        now - sum.at >= POSTGRES_READ_MS / 2 &&
        !asked.has(sum)
      )
        due.push(sum)
    const read = spendOfOwners(this.db, due)
    for (const sum of due) {
      sum.used = false
      sum.pending = read.then(
        (found) => {
          sum.pending = undefined
          sum.at = now
          return (sum.value = found.get(sum.key) ?? NOTHING)
        },
        (err: unknown) => {
          sum.pending = undefined
          if (sum.value === undefined && this.fromPostgres.get(sum.key) === sum) this.fromPostgres.delete(sum.key)
          throw err
        },
      )
      // A sum read with the others may have no check waiting: its failure is the next check's to meet.
      sum.pending.catch(() => {})
    }
  }

  private refuseIfSpent(limit: SpendLimit, counted: bigint, ledger: Spend): void {
    if (spentAgainst(limit, counted, ledger) >= limit.pico) throw spentRefusal(limit)
  }

  /** Redis's counts (0 while Redis is away: the ledger's then stands alone), kept as read. */
  private async counters(counters: string[], sent: number): Promise<bigint[]> {
    const none = () => counters.map(() => 0n)
    if (this.redis.status !== 'ready') return none()
    try {
      const values = (await this.reads.read(counters)).map((v) => BigInt(v ?? 0))
      // Kept as of when the read left: an event heard meanwhile (a higher value) stands.
      if (this.trusted()) counters.forEach((c, i) => this.keep(c, values[i]!, sent))
      return values
    } catch {
      return none()
    }
  }
}
