import type { FastifyReply, FastifyRequest } from 'fastify'
import pLimit from 'p-limit'
import { SESSION_COOKIE } from './session-cookie.js'

// The console's own lane. A console page is a burst of requests (50 members refreshing the spend
// page at once make 150), each a fraction of a millisecond of this process's one thread; handled
// as they arrive, a burst holds every gateway request that lands behind it for its whole length.
// So the console's requests (its static files, and calls made with its session cookie) take turns:
// at most `concurrency` at once, each admitted after a turn of the event loop, in which requests
// waiting on I/O (the gateway's) go first. A burst then takes a little longer, and the gateway's
// requests wait for one console request at most, not for all of them. Streams (an intern's events,
// a chat) are not held in the lane: they last as long as they are open.

/** The longest a console request holds its place in the lane (a stream's lasts as long as it is open: never in it). */
const HOLD_AT_MOST_MS = 10_000

function inLane(req: FastifyRequest): boolean {
  // A key in a header: an API client, never the console.
  if (req.headers.authorization || req.headers['x-api-key']) return false
  const url = req.url
  if (url.startsWith('/console/')) return true
  if (!req.headers.cookie?.includes(`${SESSION_COOKIE}=`)) return false
  return !url.includes('/events') && !url.includes('/chat/completions')
}

/**
 * An onRequest hook that queues the console's requests in a lane of `concurrency`. A callback hook,
 * not an async one: every request passes it (the gateway's first), and only the console's wait.
 */
export function consoleLane(concurrency: number) {
  const limit = pLimit(concurrency)
  const hook = (req: FastifyRequest, reply: FastifyReply, next: () => void): void => {
    if (!inLane(req)) return next()
    const gone = () => reply.raw.destroyed || req.raw.socket?.destroyed === true
    void limit(
      () =>
        new Promise<void>((done) => {
          // The slot is held until the response is over (sent, failed or cut off), and never
          // longer than HOLD_AT_MOST_MS: a lost event cannot close the lane.
          const free = () => {
            clearTimeout(timer)
            done()
          }
          const timer = setTimeout(free, HOLD_AT_MOST_MS)
          timer.unref()
          if (gone()) free()
          else reply.raw.once('close', free)
          setImmediate(() => {
            // Its client left while it waited: nothing is done for it, nothing is written.
            if (!gone()) return next()
            reply.hijack()
            reply.raw.destroy()
          })
        }),
    )
  }
  /** How many console requests wait for their turn now (its test waits on it). */
  return Object.assign(hook, { waiting: () => limit.pendingCount })
}
