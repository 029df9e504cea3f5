/**
 * Serialized list pages, kept for at most `ttlMs` and all dropped on any change event (a change to
 * one intern can move it in or out of any page of its workspace). Clients that poll a list get the
 * same bytes without a query per poll. Nothing is served from here while change events cannot
 * arrive (`trusted()` false).
 */
export class ListCache {
  private readonly pages = new Map<string, { body: string; until: number }>()
  private epoch = 0

  constructor(
    private readonly ttlMs: number,
    private readonly trusted: () => boolean,
    private readonly maxEntries = 5_000,
  ) {}

  async get(key: string, load: () => Promise<unknown>): Promise<string> {
    const hit = this.pages.get(key)
    if (hit && hit.until > Date.now() && this.trusted()) return hit.body
    const epoch = this.epoch
    const body = JSON.stringify(await load())
    if (epoch === this.epoch && this.ttlMs > 0) {
      if (this.pages.size >= this.maxEntries) this.pages.clear()
      this.pages.set(key, { body, until: Date.now() + this.ttlMs })
    }
    return body
  }

  clear() {
    this.epoch++
    this.pages.clear()
  }
}
