import {
  connectRedis,
  internEventsChannel,
  keyEventsChannel,
  reportConnectionErrors,
  type ParentLogger,
  type RedisClient,
  type RedisSettings,
} from '@roster/shared'

/**
 * The API's ear for change events: one subscriber connection per process. Each intern event evicts
 * the cached rows (`onChange`) and wakes the SSE streams watching those interns; each key event
 * makes the authenticator forget what it names (`onKeyChange`: keys' digests in base64, and
 * workspaces as `w:<id>`).
 */
export class InternWatch {
  private readonly listeners = new Map<string, Set<() => void>>()
  private readonly subscriber: RedisClient

  constructor(
    redis: RedisSettings,
    queuePrefix: string,
    onChange: (ids: string[]) => void,
    log: Pick<ParentLogger, 'warn' | 'info'>,
    onKeyChange: (entries: string[]) => void = () => {},
  ) {
    const keyChannel = keyEventsChannel(queuePrefix)
    this.subscriber = connectRedis(redis, { maxRetriesPerRequest: null, lazyConnect: true })
    reportConnectionErrors(this.subscriber, log, 'intern change events: redis')
    this.subscriber.on('message', (channel: string, message: string) => {
      if (channel === keyChannel) return onKeyChange(message.split(','))
      const ids = message.split(',')
      onChange(ids)
      for (const id of ids) for (const fn of this.listeners.get(id) ?? []) fn()
    })
    // ioredis subscribes again by itself after a reconnect; a close before the first subscribe is fine.
    this.subscriber
      .connect()
      .then(() => this.subscriber.subscribe(internEventsChannel(queuePrefix), keyChannel))
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
