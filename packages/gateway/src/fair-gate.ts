/**
 * Fair shares of one provider origin's connections. At most `capacity` calls are in flight at once
 * (the pool's connections) and at most `perTenant` of them for one tenant (an API key); a call past
 * either waits, and when a place frees the waiting tenants are served in turn, one call each, so a
 * key that holds its whole share with long streams delays only its own next calls, never another
 * key's. A call admitted at once costs no promise.
 */
export class FairGate {
  private inFlight = 0
  private readonly byTenant = new Map<string, number>()
  /** Waiting calls per tenant, tenants in the order they will be served (a Map keeps insertion order). */
  private readonly waiting = new Map<string, Waiter[]>()
  private queued = 0

  constructor(
    readonly capacity: number,
    readonly perTenant: number,
    /** Told how many calls wait, whenever it changes (a gauge). */
    private readonly onWaiting: (count: number) => void = () => {},
  ) {}

  /**
   * A place for one call of `tenant`: true when taken at once, else a promise of it. A wait the
   * client ends (`cancel`: it went away) rejects with an AbortError and takes no place.
   */
  enter(tenant: string, cancel?: { onCancel(fn: () => void): () => void }): true | Promise<void> {
    if (this.inFlight < this.capacity && (this.byTenant.get(tenant) ?? 0) < this.perTenant) {
      this.take(tenant)
      return true
    }
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { resolve, reject, stopListening: () => {} }
      let queue = this.waiting.get(tenant)
      if (!queue) this.waiting.set(tenant, (queue = []))
      queue.push(waiter)
      this.onWaiting(++this.queued)
      if (cancel) waiter.stopListening = cancel.onCancel(() => this.abandon(tenant, waiter, new WaitCancelled()))
    })
  }

  /** Gives back one place of `tenant`, and hands free places to waiting tenants in turn. */
  leave(tenant: string): void {
    this.inFlight--
    const held = (this.byTenant.get(tenant) ?? 1) - 1
    if (held <= 0) this.byTenant.delete(tenant)
    else this.byTenant.set(tenant, held)
    this.serve()
  }

  /** Calls in flight and waiting, for tests. */
  get state() {
    return { inFlight: this.inFlight, waiting: this.queued }
  }

  private take(tenant: string) {
    this.inFlight++
    this.byTenant.set(tenant, (this.byTenant.get(tenant) ?? 0) + 1)
  }

  private serve() {
    if (this.queued === 0) return
    // One pass over the waiting tenants, oldest turn first: each below its share gets one call in and
    // goes to the back of the line if it has more waiting.
    for (const [tenant, queue] of [...this.waiting]) {
      if (this.inFlight >= this.capacity) return
      if ((this.byTenant.get(tenant) ?? 0) >= this.perTenant) continue
      const waiter = queue.shift()!
      this.waiting.delete(tenant)
      if (queue.length) this.waiting.set(tenant, queue)
      this.onWaiting(--this.queued)
      waiter.stopListening()
      this.take(tenant)
      waiter.resolve()
    }
  }

  private abandon(tenant: string, waiter: Waiter, reason: unknown) {
    const queue = this.waiting.get(tenant)
    const i = queue?.indexOf(waiter) ?? -1
    if (i < 0) return
    queue!.splice(i, 1)
    if (!queue!.length) this.waiting.delete(tenant)
    this.onWaiting(--this.queued)
    waiter.reject(reason)
  }
}

class WaitCancelled extends Error {
  override name = 'AbortError'
  constructor() {
    super('the client closed the connection while its call waited for a connection')
  }
}

interface Waiter {
  resolve: () => void
  reject: (reason: unknown) => void
  stopListening: () => void
}
