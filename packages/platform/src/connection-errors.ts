import type { ParentLogger } from './logger.js'

/** What reports a connection's errors and its return: ioredis clients and BullMQ's queues and workers. */
interface Emitter {
  on(event: 'error', listener: (err: Error) => void): unknown
  on(event: 'ready', listener: () => void): unknown
}

/**
 * Logs a connection's errors instead of swallowing them, without a line per reconnect attempt: the
 * first error at once, then at most one line per `everyMs` saying how many more came; and one line
 * when the connection is ready again. (An error listener must exist, or Node throws; an empty one
 * hid outages from operators.)
 */
export function reportConnectionErrors(
  emitter: Emitter,
  log: Pick<ParentLogger, 'warn' | 'info'>,
  what: string,
  everyMs = 30_000,
): void {
  let lastAt = -Infinity
  let since = 0
  let failing = false
  emitter.on('error', (err) => {
    failing = true
    since++
    const now = Date.now()
    if (now - lastAt < everyMs) return
    log.warn(
      { err: { message: err.message, code: (err as NodeJS.ErrnoException).code }, errorsSinceLastLine: since },
      `${what}: ${err.message}`,
    )
    lastAt = now
    since = 0
  })
  emitter.on('ready', () => {
    if (!failing) return
    failing = false
    lastAt = -Infinity
    since = 0
    log.info(`${what}: connected again`)
  })
}
