import type { Db } from '../db.js'
import { insertMany, insertOne, type InsertOutcome, type PreparedCreate } from './create-statements.js'

interface Pending {
  item: PreparedCreate
  resolve(outcome: InsertOutcome): void
  reject(err: unknown): void
}

/**
 * Group commit for creates. Creates that arrive while others are being written wait for the next
 * batch, which writes them all in one statement (one round trip, one plan, one commit). With no
 * concurrency every create runs alone, exactly as without the batcher. If a batch is refused as a
 * whole, each of its creates runs alone, so every caller gets the answer its own request deserves.
 */
export class CreateBatcher {
  private queue: Pending[] = []
  private inFlight = 0
  private scheduled = false
  /** Counters for operators and tests: batches written whole, creates in them, batches split up. */
  readonly stats = { batches: 0, batchedCreates: 0, splitBatches: 0 }

  constructor(
    private readonly db: Db,
    private readonly limit: number,
    /** Statements writing at once; the rest of the pool stays free for reads. */
    private readonly maxInFlight = 4,
    private readonly maxBatch = 64,
  ) {}

  submit(item: PreparedCreate): Promise<InsertOutcome> {
    return new Promise((resolve, reject) => {
      this.queue.push({ item, resolve, reject })
      this.schedule()
    })
  }

  /** Flushes once the current event-loop turn has queued what it will, so same-turn arrivals share a batch. */
  private schedule() {
    if (this.scheduled || this.inFlight >= this.maxInFlight || this.queue.length === 0) return
    this.scheduled = true
    setImmediate(() => {
      this.scheduled = false
      while (this.inFlight < this.maxInFlight && this.queue.length > 0) {
        const batch = this.queue.splice(0, this.maxBatch)
        this.inFlight++
        void this.write(batch).finally(() => {
          this.inFlight--
          this.schedule()
        })
      }
    })
  }

  private async write(batch: Pending[]) {
    if (batch.length > 1) {
      try {
        const outcomes = await insertMany(this.db, batch.map((p) => p.item), this.limit)
        this.stats.batches++
        this.stats.batchedCreates += batch.length
        for (const p of batch) p.resolve(outcomes.get(p.item.internId)!)
        return
      } catch {
        // Refused as a whole: fall through and give each create its own statement and answer.
        this.stats.splitBatches++
      }
    }
    await Promise.all(
      batch.map((p) => insertOne(this.db, p.item, this.limit).then(p.resolve, p.reject)),
    )
  }
}
