import type { Db } from '../db.js'
import type { InternRecord } from './view.js'
import { internRecord, internRecords } from '../repositories/interns.js'

/**
 * Reads interns by id for pollers. Rows are kept for at most `ttlMs` and dropped as soon as a
 * change event names them, so 64 clients polling one intern cost one query per change, not one per
 * poll. While change events cannot arrive (`trusted()` is false), every read goes to Postgres.
 * Concurrent misses for one id share one query.
 */
export class InternReader {
  private readonly rows = new Map<string, { row: InternRecord | undefined; until: number }>()
  private readonly loading = new Map<string, Promise<InternRecord | undefined>>()
  /** Bumped by every eviction, so a load that raced with a change is not cached. */
  private epoch = 0

  constructor(
    private readonly db: Db,
    private readonly ttlMs: number,
    private readonly trusted: () => boolean,
    private readonly maxEntries = 20_000,
  ) {}

  /** The row kept for `id` while it may be trusted (undefined inside: known not to exist). */
  private kept(id: string, now: number, trusted: boolean) {
    const hit = this.rows.get(id)
    return hit && hit.until > now && trusted ? hit : undefined
  }

  /** Keeps a row read since `epoch`, unless a change came meanwhile (it may be older than the change). */
  private keep(id: string, row: InternRecord | undefined, epoch: number) {
    if (epoch !== this.epoch || this.ttlMs <= 0) return
    if (this.rows.size >= this.maxEntries) this.rows.delete(this.rows.keys().next().value!)
    this.rows.set(id, { row, until: Date.now() + this.ttlMs })
  }

  async get(id: string): Promise<InternRecord | undefined> {
    const hit = this.kept(id, Date.now(), this.trusted())
    if (hit) return hit.row
    const inFlight = this.loading.get(id)
    if (inFlight) return inFlight
    const epoch = this.epoch
    const load = internRecord(this.db, id)
      .then((row) => {
        this.keep(id, row, epoch)
        return row
      })
      .finally(() => this.loading.delete(id))
    this.loading.set(id, load)
    return load
  }

  /** Several interns, in the order asked (undefined: none): those not kept here in one query. */
  async getMany(ids: readonly string[]): Promise<(InternRecord | undefined)[]> {
    const now = Date.now()
    const trusted = this.trusted()
    const found = new Map<string, InternRecord | undefined>()
    const missing: string[] = []
    for (const id of ids) {
      const hit = this.kept(id, now, trusted)
      if (hit) found.set(id, hit.row)
      else missing.push(id)
    }
    if (missing.length) {
      const epoch = this.epoch
      const rows = new Map((await internRecords(this.db, missing)).map((r) => [r.id, r]))
      for (const id of missing) {
        found.set(id, rows.get(id))
        this.keep(id, rows.get(id), epoch)
      }
    }
    return ids.map((id) => found.get(id))
  }

  evict(ids: Iterable<string>) {
    this.epoch++
    for (const id of ids) {
      this.rows.delete(id)
      this.loading.delete(id)
    }
  }
}
