import { LRUCache } from 'lru-cache'
import pLimit from 'p-limit'

/** How old an answer may be and still be served while a fresh one is fetched. */
const STALE_SERVED_MS = 60_000

// Analytics answers, shared: a console page open on many members' screens asks the same question
// at once, and each answer sums many rollup rows. The same query of the same account (its body,
// as sent) runs once for everyone who asks while it runs; its answer is served as it is for `ttlMs`
// (a spend page a few seconds old), and up to a minute old while a fresh one is fetched behind it
// (a crowd refreshing the page never waits for the query). At most `concurrency` queries run at
// once in this process, so the crowd cannot take the database's and the gateway's share of the
// machine with it.
export class AnalyticsAnswers {
  private readonly answers: LRUCache<string, { value: unknown; at: number }>
  private readonly inflight = new Map<string, Promise<unknown>>()
  private readonly running: ReturnType<typeof pLimit>
  private readonly ttlMs: number

  constructor(opts: { ttlMs: number; concurrency: number; max?: number }) {
    this.running = pLimit(opts.concurrency)
    this.answers = new LRUCache({ max: opts.max ?? 1_000 })
    this.ttlMs = opts.ttlMs
  }

  /** `query`'s answer for `accountId`, shared with every identical `body` of that account. */
  async get<T>(accountId: string, body: unknown, query: () => Promise<T>): Promise<T> {
    if (this.ttlMs <= 0) return this.running(query)
    const key = `${accountId} ${JSON.stringify(body)}`
    const kept = this.answers.get(key)
    const age = kept ? Date.now() - kept.at : Infinity
    if (kept && age < this.ttlMs) return kept.value as T
    const fresh = this.fetch(key, query)
    if (kept && age < STALE_SERVED_MS) {
      fresh.catch(() => {}) // the next asker runs it again
      return kept.value as T
    }
    return fresh
  }

  private fetch<T>(key: string, query: () => Promise<T>): Promise<T> {
    const running = this.inflight.get(key)
    if (running) return running as Promise<T>
    const started = this.running(query)
      .then((value) => {
        this.answers.set(key, { value, at: Date.now() })
        return value
      })
      .finally(() => this.inflight.delete(key))
    this.inflight.set(key, started)
    return started
  }
}
