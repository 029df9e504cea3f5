import { hostname } from 'node:os'
import {
  generationsStream,
  pgErrorCode,
  reportConnectionErrors,
  type Db,
  type GenerationRecord,
  type Logger,
  type OnWritten,
  type RedisClient,
  listeningConnection,
  type TimedRedisSettings,
} from '@roster/shared'
import { insertGenerations, missingPartition } from '@roster/shared/repositories'

const GROUP = 'drain'

type Entry = [id: string, fields: string[]]

export interface DrainOptions {
  /** Records per batch written to Postgres. */
  batch?: number
  /** How long a read waits for new records before looking again (ms). */
  blockMs?: number
  /** Records another worker read and never acknowledged for this long are taken over (it died). */
  claimIdleMs?: number
  /** Wait after a failed write before the records are tried again (ms). */
  retryMs?: number
  /** Told of the records each write made new (the spend metrics count them). */
  onWritten?: OnWritten
  /**
   * Handed every record of a batch once it is written, before the batch is acknowledged (a batch
   * written again, after a crash, is handed again): the deliveries to observability destinations.
   * If it fails, the batch is not acknowledged and goes again.
   */
  beforeAck?: (records: GenerationRecord[]) => Promise<void>
}

/**
 * Drains the generations the API appended to its Redis stream into Postgres, in batches. Workers
 * share the stream as one consumer group; a record is acknowledged and deleted from the stream
 * only after the statement that wrote it committed, so a worker killed mid-batch leaves its records
 * pending, and another worker (or itself, restarted) writes them again: the write is idempotent by
 * generation id, so nothing is counted twice. A record Postgres refuses for its content (never
 * expected: the API builds them) is logged and dropped alone, so it cannot hold the stream up.
 */
export class GenerationDrain {
  private readonly redis: RedisClient
  private readonly stream: string
  private readonly consumer = `${hostname()}-${process.pid}`
  private stopped = false
  private loop?: Promise<void>
  private readonly batch: number
  private readonly blockMs: number
  private readonly claimIdleMs: number
  private readonly retryMs: number
  private readonly onWritten?: OnWritten
  private readonly beforeAck?: (records: GenerationRecord[]) => Promise<void>

  constructor(
    private readonly db: Db,
    settings: TimedRedisSettings,
    queuePrefix: string,
    private readonly log: Logger,
    options: DrainOptions = {},
  ) {
    // Its own connection: a blocking read holds it.
    this.redis = listeningConnection(settings)
    reportConnectionErrors(this.redis, log, 'generations drain: redis')
    this.stream = generationsStream(queuePrefix)
    this.batch = options.batch ?? 1_000
    this.onWritten = options.onWritten
    this.beforeAck = options.beforeAck
    this.blockMs = options.blockMs ?? 1_000
    this.claimIdleMs = options.claimIdleMs ?? 30_000
    this.retryMs = options.retryMs ?? 1_000
  }

  start() {
    this.loop = this.run()
  }

  async stop() {
    this.stopped = true
    this.redis.disconnect()
    await this.loop
  }

  private async run() {
    while (!this.stopped) {
      try {
        await this.ensureGroup()
        // Own records left unacknowledged (a failed write), then others' a dead worker left, then new ones.
        const mine = await this.read('0', 0)
        const entries = mine.length ? mine : await this.claim()
        await this.write(entries.length ? entries : await this.read('>', this.blockMs))
      } catch (err) {
        if (this.stopped) return
        // Redis came back without the stream (and so without the group): make them again.
        if (String((err as Error).message).includes('NOGROUP')) this.grouped = false
        this.log.warn({ err: (err as Error).message }, 'generations drain failed; trying again')
        await new Promise((r) => setTimeout(r, this.retryMs))
      }
    }
  }

  private grouped = false
  private async ensureGroup() {
    if (this.grouped) return
    try {
      await this.redis.xgroup('CREATE', this.stream, GROUP, '0', 'MKSTREAM')
    } catch (err) {
      if (!String((err as Error).message).includes('BUSYGROUP')) throw err
    }
    this.grouped = true
  }

  private async read(from: string, blockMs: number): Promise<Entry[]> {
    const args: (string | number)[] = ['GROUP', GROUP, this.consumer, 'COUNT', this.batch]
    if (blockMs > 0) args.push('BLOCK', blockMs)
    const reply = (await this.redis.call('XREADGROUP', ...args, 'STREAMS', this.stream, from)) as unknown[] | null
    if (!reply) return []
    // One stream asked for: [[stream, entries]], or, as this client gives it, [stream, entries].
    const one = (Array.isArray(reply[0]) ? reply[0] : reply) as [string, Entry[]]
    return one[1] ?? []
  }

  private async claim(): Promise<Entry[]> {
    const reply = (await this.redis.call(
      'XAUTOCLAIM',
      this.stream,
      GROUP,
      this.consumer,
      this.claimIdleMs,
      '0-0',
      'COUNT',
      this.batch,
    )) as [string, Entry[]]
    return reply[1] ?? []
  }

  /** Writes a batch and acknowledges it; a batch Postgres refuses for its content is written entry by entry, then record by record. */
  private async write(entries: Entry[]) {
    if (entries.length === 0) return
    const parsed = entries.map(([id, fields]) => ({ id, records: parse(fields) }))
    for (const b of parsed.filter((p) => !p.records))
      this.log.error({ entry: b.id }, 'an entry of the generations stream holds no record; dropped')
    const good = parsed.filter((p): p is { id: string; records: GenerationRecord[] } => !!p.records)
    const all = entries.map(([id]) => id)
    try {
      this.written(
        await insertGenerations(
          this.db,
          good.flatMap((g) => g.records),
        ),
      )
    } catch (err) {
      if (!isContentError(err)) throw err
      if (good.length > 1) {
        for (const g of good) await this.write([[g.id, ['b', JSON.stringify(g.records)]]])
        await this.done(parsed.filter((p) => !p.records).map((p) => p.id))
        return
      }
      for (const r of good[0]?.records ?? []) {
        try {
          this.written(await insertGenerations(this.db, [r]))
        } catch (one) {
          if (!isContentError(one)) throw one
          this.log.error({ err: (one as Error).message, generation: r.id }, 'a generation Postgres refuses; dropped')
        }
      }
    }
    await this.beforeAck?.(good.flatMap((g) => g.records))
    await this.done(all)
  }

  private written(records: GenerationRecord[]) {
    if (records.length) this.onWritten?.(records)
  }

  private async done(ids: string[]) {
    if (ids.length === 0) return
    await this.redis.xack(this.stream, GROUP, ...ids)
    await this.redis.xdel(this.stream, ...ids)
  }
}

/** The records of a stream entry: a request's (`b`, an array) or one (`g`). */
function parse(fields: string[]): GenerationRecord[] | undefined {
  for (const [name, many] of [
    ['b', true],
    ['g', false],
  ] as const) {
    const at = fields.indexOf(name)
    if (at < 0) continue
    try {
      const value: unknown = JSON.parse(fields[at + 1] ?? '')
      const records: unknown[] = many ? (Array.isArray(value) ? value : []) : [value]
      const whole = records.length > 0 && records.every((r) => typeof (r as { id?: unknown })?.id === 'string')
      return whole ? (records as GenerationRecord[]) : undefined
    } catch {
      return undefined
    }
  }
  return undefined
}

/** Postgres refused the data itself (a bad value, a constraint): writing it again will not help. */
function isContentError(err: unknown): boolean {
  const code = pgErrorCode(err)
  // A day without its partition is the database's to fix (insertGenerations makes it), never the record's fault.
  return !!code && (code.startsWith('22') || code.startsWith('23')) && !missingPartition(err)
}
