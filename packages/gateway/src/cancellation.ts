/**
 * A request's cancellation, cheaper than an AbortController or an EventEmitter: one per request,
 * with at most a listener or two (the upstream call in flight). Code that needs a real AbortSignal
 * (fetches of server tools) gets one on demand.
 */
export class Cancellation {
  aborted = false
  private listeners: (() => void)[] = []
  private controller?: AbortController

  cancel() {
    if (this.aborted) return
    this.aborted = true
    const listeners = this.listeners
    this.listeners = []
    for (const fn of listeners) fn()
    this.controller?.abort()
  }

  /** Calls `fn` once on cancellation (at once if already cancelled); answers how to stop listening. */
  onCancel(fn: () => void): () => void {
    if (this.aborted) {
      fn()
      return () => {}
    }
    this.listeners.push(fn)
    return () => {
      const i = this.listeners.indexOf(fn)
      if (i >= 0) this.listeners.splice(i, 1)
    }
  }

  /** Listeners waiting (tests check none is left behind). */
  get listening() {
    return this.listeners.length
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController()
      if (this.aborted) this.controller.abort()
    }
    return this.controller.signal
  }
}
