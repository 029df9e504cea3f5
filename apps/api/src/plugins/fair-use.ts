import type { FastifyRequest, onRequestHookHandler } from 'fastify'
import { AppError, type Caller } from '@roster/shared'
import { afterRefusalDelay } from './refusal-delay.js'

// Fair shares of one API process: how many requests and streams one key, and one workspace, may
// have open at once, and how many request-body bytes all clients together may have in flight. Past a
// key's or a workspace's share the answer is 429 with Retry-After (in the route's own error shape,
// by the one error handler); past the process's body budget, 503. Counted per process: behind a load
// balancer each process holds its share, so N processes admit N times as much.
//
// Under load the key's share shrinks: while the event loop is busy more than OVERLOADED of the time,
// every key is held to the share of the busiest one halved (never below KEY_CONCURRENCY_UNDER_LOAD),
// and it grows back as the load eases; but only while other keys have requests open on the process,
// or made one in the last second: squeezing is for them, and a key alone keeps KEY_CONCURRENCY. A
// key that floods the process is squeezed to a share like anyone else's, so the others' requests do
// not queue behind its own (the limit adapts as Envoy's adaptive concurrency and Netflix's
// concurrency-limits do, on the loop's busyness here).

export interface AdmissionLimits {
  /** Open requests and streams per key (0: no limit). */
  perKey: number
  /** The least the per-key share shrinks to under load (0: it never shrinks). */
  perKeyUnderLoad?: number
  /** Open requests and streams per workspace (0: no limit). */
  perWorkspace: number
  /** Request-body bytes in flight in the process, as declared (Content-Length) or the route's limit when not (0: no limit). */
  bodyBytes: number
  /** How long a refused request waits for its answer (see admit). */
  refusalDelayMs?: number
}

/** Why a request was not admitted. */
export type Refusal = { status: 429 | 503; message: string }

/** The share of time the event loop may be busy before the per-key share shrinks. */
export const OVERLOADED = 0.9
/** How often the load is read and the share adjusted. */
const ADJUST_EVERY_MS = 250
/** How lately another key must have made a request for a key to be squeezed for it. */
const OTHERS_RECENT_MS = 1_000

export class Admission {
  private readonly keys = new Map<string, number>()
  private readonly workspaces = new Map<string, number>()
  private bodyBytes = 0
  /** The per-key share now: the setting, or less under load. */
  private keyShare: number
  /** The key to have entered last, and the last other key before it, with when (noteActive). */
  private latest = { keyId: '', at: -Infinity }
  private previous = { keyId: '', at: -Infinity }
  private timer?: NodeJS.Timeout

  constructor(
    private readonly limits: AdmissionLimits,
    /** Told of each refusal, by the limit that refused (metrics). */
    private readonly refused: (limit: 'key_concurrency' | 'workspace_concurrency' | 'body_bytes') => void = () => {},
  ) {
    this.keyShare = limits.perKey
    if (limits.perKeyUnderLoad) {
      let last = performance.eventLoopUtilization()
      this.timer = setInterval(() => {
        const now = performance.eventLoopUtilization()
        this.adjust(performance.eventLoopUtilization(now, last).utilization)
        last = now
      }, ADJUST_EVERY_MS).unref()
    }
  }

  /**
   * One reading of the load: busy past OVERLOADED, the share becomes half the busiest key's open
   * requests (at least perKeyUnderLoad); eased, it grows back by an eighth of the setting a step.
   */
  adjust(utilization: number) {
    const { perKey, perKeyUnderLoad = 0 } = this.limits
    if (!perKeyUnderLoad) return
    if (utilization > OVERLOADED) {
      let busiest = 0
      for (const n of this.keys.values()) busiest = Math.max(busiest, n)
      this.keyShare = Math.max(perKeyUnderLoad, Math.floor(Math.min(this.keyShare || busiest, busiest) / 2))
    } else if (utilization < OVERLOADED - 0.15) {
      this.keyShare = perKey ? Math.min(perKey, this.keyShare + Math.ceil(perKey / 8)) : 0
    }
  }

  get refusalDelayMs(): number {
    return this.limits.refusalDelayMs ?? 0
  }

  /** The per-key share in force now. */
  get share(): number {
    return this.keyShare
  }

  close() {
    clearInterval(this.timer)
  }

  /** Admits one request of `caller` carrying up to `bytes` of body: its release, or why not. */
  enter(caller: Pick<Caller, 'keyId' | 'workspaceId'>, bytes = 0): (() => void) | Refusal {
    const { perKey, perWorkspace, bodyBytes } = this.limits
    const key = this.keys.get(caller.keyId) ?? 0
    // Squeezing protects other keys: a key alone on the process (a lone client's burst, a cold
    // start's busy loop) keeps its whole share.
    const now = performance.now()
    const share = this.othersAbout(caller.keyId, key, now) ? this.keyShare : perKey
    this.noteActive(caller.keyId, now)
    if (share && key >= share) {
      const why =
        share < perKey
          ? `${share} while this server is loaded (KEY_CONCURRENCY ${perKey}, lowered under load)`
          : `${share} (KEY_CONCURRENCY)`
      return this.refuse(
        'key_concurrency',
        429,
        `this key already has ${key} requests open on this server, its share is ${why}; send the next when one has ended`,
      )
    }
    const workspace = this.workspaces.get(caller.workspaceId) ?? 0
    if (perWorkspace && workspace >= perWorkspace)
      return this.refuse(
        'workspace_concurrency',
        429,
        `this workspace already has ${perWorkspace} requests open on this server (WORKSPACE_CONCURRENCY); send the next when one has ended`,
      )
    if (bodyBytes && bytes && this.bodyBytes + bytes > bodyBytes)
      return this.refuse(
        'body_bytes',
        503,
        'this server is reading as many request bodies as it can hold (REQUEST_BODY_BYTES); retry shortly',
      )
    this.keys.set(caller.keyId, key + 1)
    this.workspaces.set(caller.workspaceId, workspace + 1)
    this.bodyBytes += bytes
    let left = false
    return () => {
      if (left) return
      left = true
      this.bodyBytes -= bytes
      decrement(this.keys, caller.keyId)
      decrement(this.workspaces, caller.workspaceId)
    }
  }

  /**
   * Whether another key has requests open, or made one in the last OTHERS_RECENT_MS (a client
   * that calls one at a time is about between its calls too).
   */
  private othersAbout(keyId: string, open: number, now: number): boolean {
    if (this.keys.size - (open > 0 ? 1 : 0) > 0) return true
    const other = this.latest.keyId === keyId ? this.previous : this.latest
    return other.keyId !== '' && now - other.at < OTHERS_RECENT_MS
  }

  /** Keeps the last two distinct keys to have entered, and when, in place (it runs on every request). */
  private noteActive(keyId: string, now: number) {
    if (this.latest.keyId !== keyId) {
      const spare = this.previous
      this.previous = this.latest
      this.latest = spare
      spare.keyId = keyId
    }
    this.latest.at = now
  }

  private refuse(
    limit: 'key_concurrency' | 'workspace_concurrency' | 'body_bytes',
    status: 429 | 503,
    message: string,
  ): Refusal {
    this.refused(limit)
    return { status, message }
  }

  /** Open requests now (for tests and metrics). */
  open(keyId: string): number {
    return this.keys.get(keyId) ?? 0
  }
}

function decrement(counts: Map<string, number>, id: string) {
  const n = (counts.get(id) ?? 1) - 1
  if (n <= 0) counts.delete(id)
  else counts.set(id, n)
}

/** The refusal as the error the route's shape renders, with its Retry-After. */
export function refusalError(refusal: Refusal, retryAfter = 1): AppError {
  return new AppError(refusal.status === 429 ? 'rate_limited' : 'overloaded', refusal.message, { retryAfter })
}

/** What a route's body may hold at most, as declared: its Content-Length, else the route's limit. */
function declaredBytes(req: FastifyRequest, limit: number): number {
  const length = req.headers['content-length']
  if (length !== undefined) return Math.min(Number(length) || 0, limit)
  return req.headers['transfer-encoding'] !== undefined ? limit : 0
}

/**
 * onRequest hook, after the key is known: the request holds its share (and its body's bytes)
 * until its response has ended or its connection closed, streams included. A refusal is answered
 * after `refusalDelayMs` (refusal-delay.ts).
 */
export function admit(admission: Admission, bodyLimit: number): onRequestHookHandler {
  const refusalDelayMs = admission.refusalDelayMs
  return (req, reply, done) => {
    const entered = admission.enter(req.caller!, declaredBytes(req, bodyLimit))
    if (typeof entered !== 'function') return afterRefusalDelay(refusalDelayMs, () => done(refusalError(entered)))
    reply.raw.once('close', entered)
    done()
  }
}
