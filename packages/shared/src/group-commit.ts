interface Pending<T, R> {
  item: T
  resolve(result: R): void
  reject(err: unknown): void
}

export interface GroupCommitOptions<T, R> {
  /** Writes several items in one statement, results in item order; throws if refused as a whole. */
  writeMany(items: T[]): Promise<R[]>
  /** Writes one item alone: every item of a refused batch, and every batch of one. */
  writeOne(item: T): Promise<R>
  /** Items of one key are written one after another: never in one batch, never in two at once. */
  key?(item: T): string
  /** Statements writing at once; the rest of the connection pool stays free for reads. */
  maxInFlight?: number
  maxBatch?: number
}

/**
 * Group commit: items that arrive while others are being written wait for the next batch, which
 * writes them all in one statement (one round trip, one plan, one commit). With no concurrency each
 * item is written alone, exactly as without batching. If a batch is refused as a whole, each of its
 * items is written alone, so every caller gets the answer its own item deserves.
 */
export class GroupCommit<T, R> {
  private queue: Pending<T, R>[] = []
  private inFlight = 0
  private scheduled = false
  private readonly busy = new Set<string>()
  /** Counters for operators and tests: batches written whole, items in them, batches split up. */
  readonly stats = { batches: 0, batchedItems: 0, splitBatches: 0 }

  constructor(private readonly options: GroupCommitOptions<T, R>) {}

  submit(item: T): Promise<R> {
    return new Promise((resolve, reject) => {
      this.queue.push({ item, resolve, reject })
      this.schedule()
    })
  }

  /** Flushes once the current event-loop turn has queued what it will, so same-turn arrivals share a batch. */
  private schedule() {
    if (this.scheduled || this.inFlight >= (this.options.maxInFlight ?? 4) || this.queue.length === 0) return
    this.scheduled = true
    setImmediate(() => {
      this.scheduled = false
      while (this.inFlight < (this.options.maxInFlight ?? 4) && this.queue.length > 0) {
        const batch = this.take()
        if (batch.length === 0) break // everything queued waits for a key being written
        this.inFlight++
        void this.write(batch).finally(() => {
          if (this.options.key) for (const p of batch) this.busy.delete(this.options.key(p.item))
          this.inFlight--
          this.schedule()
        })
      }
    })
  }

  /** The next batch in queue order, skipping items whose key is in this batch or being written. */
  private take(): Pending<T, R>[] {
    const { key, maxBatch = 64 } = this.options
    if (!key) return this.queue.splice(0, maxBatch)
    const batch: Pending<T, R>[] = []
    const rest: Pending<T, R>[] = []
    for (const p of this.queue) {
      const k = key(p.item)
      if (batch.length < maxBatch && !this.busy.has(k)) {
        this.busy.add(k)
        batch.push(p)
      } else rest.push(p)
    }
    this.queue = rest
    return batch
  }

  private async write(batch: Pending<T, R>[]) {
    if (batch.length > 1) {
      try {
        const results = await this.options.writeMany(batch.map((p) => p.item))
        this.stats.batches++
        this.stats.batchedItems += batch.length
        batch.forEach((p, i) => p.resolve(results[i]!))
        return
      } catch {
        // Refused as a whole: fall through and give each item its own statement and answer.
        this.stats.splitBatches++
      }
    }
    await Promise.all(batch.map((p) => this.options.writeOne(p.item).then(p.resolve, p.reject)))
  }
}
