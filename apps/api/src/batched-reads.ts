import { answeredWithin, type RedisClient } from '@roster/shared'

/** How long a counter read waits for Redis before the check goes on with the ledger's count alone (ms). */
const COUNTER_WAIT_MS = 1_000

/** The spend check's reads of Redis counters, batched (SpendLimits). */
export class BatchedReads {
  /** Counter reads asked for while an MGET is in flight (they go together when it returns). */
  private waiting: { keys: string[]; resolve: (v: (string | null)[]) => void; reject: (e: unknown) => void }[] = []
  private reading = false

  constructor(private readonly redis: RedisClient) {}

  /**
   * Reads counters with at most one MGET in flight: sent at once when none is, else with every
   * read asked for meanwhile, in one MGET when it returns. Under load the requests that arrive
   * during one round trip share the next (one socket write for all, where each paid its own);
   * alone, a read leaves at once. Every read still leaves after its request was checked.
   */
  read(keys: string[]): Promise<(string | null)[]> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ keys, resolve, reject })
      if (!this.reading) this.readWaiting()
    })
  }

  private readWaiting() {
    const batch = this.waiting
    this.waiting = []
    this.reading = batch.length > 0
    if (!this.reading) return
    // A Redis that stops answering (a host cut off: its connection still looks ready) must not hold
    // the requests: past COUNTER_WAIT_MS the batch fails (the ledger's count then stands alone) and
    // the next read may go.
    answeredWithin(this.redis.mget(batch.flatMap((r) => r.keys)), COUNTER_WAIT_MS).then(
      (values) => {
        let at = 0
        for (const r of batch) r.resolve(values.slice(at, (at += r.keys.length)))
        this.readWaiting()
      },
      (err: unknown) => {
        for (const r of batch) r.reject(err)
        this.readWaiting()
      },
    )
  }
}
