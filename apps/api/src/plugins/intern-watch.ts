import {
  internEventsChannel,
  keyEventsChannel,
  reportConnectionErrors,
  spendEventsChannel,
  type ParentLogger,
  type RedisClient,
  type TimedRedisSettings,
  listeningConnection,
} from '@roster/shared'

/** What the API does with each kind of change event. */
export interface ChangeHandlers {
  /** Interns changed: their cached rows go (SSE streams watching them are woken here). */
  interns(ids: string[]): void
  /** Keys (digests in base64), workspaces (`w:<id>`) or accounts (`a:<id>`) changed. */
  keys(entries: string[]): void
  /** An append took a spend counter to a limit: its new value. */
  spend(counter: string, value: bigint): void
  /** The subscriber connected again: events may have been missed meanwhile. */
  gap(): void
}

/**
 * The API's ear for change events: one subscriber connection per process, on three channels
 * (interns, keys and spend). While it is not connected (`live`), caches that rely on events are
 * not trusted; each time it connects again, `gap` says what was cached may have missed some.
 */
export class InternWatch {
  private readonly listeners = new Map<string, Set<() => void>>()
  private readonly subscriber: RedisClient

  constructor(
    redis: TimedRedisSettings,
    queuePrefix: string,
    log: Pick<ParentLogger, 'warn' | 'info'>,
    on: ChangeHandlers,
  ) {
    const keyChannel = keyEventsChannel(queuePrefix)
    const spendChannel = spendEventsChannel(queuePrefix)
    this.subscriber = listeningConnection(redis, { lazyConnect: true })
    reportConnectionErrors(this.subscriber, log, 'intern change events: redis')
    this.subscriber.on('message', (channel: string, message: string) => {
      if (channel === keyChannel) return on.keys(message.split(','))
      if (channel === spendChannel) return spendEvent(message, on.spend)
      const ids = message.split(',')
      on.interns(ids)
      for (const id of ids) for (const fn of this.listeners.get(id) ?? []) fn()
    })
    // Every connection after the first follows a gap (the first finds the caches empty).
    let connected = false
    this.subscriber.on('ready', () => {
      if (connected) on.gap()
      connected = true
    })
    // ioredis subscribes again by itself after a reconnect; a close before the first subscribe is fine.
    this.subscriber
      .connect()
      .then(() => this.subscriber.subscribe(internEventsChannel(queuePrefix), keyChannel, spendChannel))
      .catch(() => {})
  }

  /** Whether events can arrive now; while not, readers must not trust cached rows. */
  get live(): boolean {
    return this.subscriber.status === 'ready'
  }

  /** Calls `fn` whenever the intern changes; returns the way to stop. */
  listen(internId: string, fn: () => void): () => void {
    const set = this.listeners.get(internId) ?? new Set()
    set.add(fn)
    this.listeners.set(internId, set)
    return () => {
      set.delete(fn)
      if (set.size === 0) this.listeners.delete(internId)
    }
  }

  /** Local changes: tell our own listeners at once, without waiting for the round trip. */
  notify(ids: string[]) {
    for (const id of ids) for (const fn of this.listeners.get(id) ?? []) fn()
  }

  close() {
    this.subscriber.disconnect()
  }
}

/** A spend event's counters (a JSON array: counter, value, …); a malformed one is ignored. */
function spendEvent(message: string, spend: ChangeHandlers['spend']) {
  try {
    const pairs = JSON.parse(message) as unknown
    if (!Array.isArray(pairs)) return
    for (let i = 0; i + 1 < pairs.length; i += 2) {
      const [counter, value] = [pairs[i], pairs[i + 1]]
      if (typeof counter === 'string' && typeof value === 'string' && /^\d{1,30}$/.test(value))
        spend(counter, BigInt(value))
    }
  } catch {
    // Not ours to act on.
  }
}
