import { performance } from 'node:perf_hooks'
import type { FastifyRequest, onRequestHookHandler } from 'fastify'
import { AppError, type Caller } from '@roster/shared'
import { afterRefusalDelay } from './refusal-delay.js'
import { callerOf } from './caller.js'

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
//
// The squeeze counts what loads the process on a client's behalf: its requests to the doors. An
// intern chat stream waits on its runtime host (a relay: it costs this process next to nothing) and
// an intern key's model calls are the work of a turn a client already waits on: neither is squeezed,
// and an intern's calls are no competitor of its own workspace's keys (a user is not squeezed by the
// very interns its chats wait on). Both still count against KEY_CONCURRENCY and
// WORKSPACE_CONCURRENCY, and both are others for every other workspace's keys.

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

/** What a request is to the process: its own work for a client, or a relay waiting on a runtime host. */
export type Work = 'request' | 'relay'

/** Who a request is from: its key, workspace and the key's kind (an intern's calls are its turns' work). */
export type Admitted = Pick<Caller, 'keyId' | 'workspaceId'> & Partial<Pick<Caller, 'kind'>>

/** Why a request was not admitted. */
export type Refusal = { status: 429 | 503; message: string }

/** The share of time the event loop may be busy before the per-key share shrinks. */
export const OVERLOADED = 0.9
/** How often the load is read and the share adjusted. */
const ADJUST_EVERY_MS = 250
/** How lately another key must have made a request for a key to be squeezed for it. */
const OTHERS_RECENT_MS = 1_000

export class Admission {
  /** Open requests per key, every kind of work (KEY_CONCURRENCY). */
  private readonly keys = new Map<string, number>()
  /** Open requests per key that the squeeze counts (a client's own requests to the doors). */
  private readonly pressing = new Map<string, number>()
  /** Per workspace, how many of its interns' keys have requests open (its turns' work, no competitor of its keys). */
  private readonly turnKeys = new Map<string, number>()
  private readonly workspaces = new Map<string, number>()
  private bodyBytes = 0
  /** The per-key share now: the setting, or less under load. */
  private keyShare: number
  /** The party to have entered last, and the last other party before it, with when (noteActive). */
  private latest = { party: '', at: -Infinity }
  private previous = { party: '', at: -Infinity }
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
      for (const n of this.pressing.values()) busiest = Math.max(busiest, n)
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

  /**
   * Admits one request of `caller` carrying up to `bytes` of body: its release, or why not. `work`:
   * a relay to a runtime host is held to KEY_CONCURRENCY but never squeezed.
   */
  enter(caller: Admitted, bytes = 0, work: Work = 'request'): (() => void) | Refusal {
    const { perKey, perWorkspace, bodyBytes } = this.limits
    const { keyId, workspaceId } = caller
    const key = this.keys.get(keyId) ?? 0
    const turnWork = caller.kind === 'intern'
    const squeezable = work === 'request' && !turnWork
    const pressing = squeezable ? (this.pressing.get(keyId) ?? 0) : 0
    // Squeezing protects other keys: a key alone on the process (a lone client's burst, a cold
    // start's busy loop) keeps its whole share.
    const now = performance.now()
    const party = turnWork ? turnsOf(workspaceId) : keyId
    const share = squeezable && this.othersAbout(caller, key, party, now) ? this.keyShare : perKey
    this.noteActive(party, now)
    if (share && (perKey === 0 || share < perKey) && pressing >= share)
      return this.refuse(
        'key_concurrency',
        429,
        `this key already has ${pressing} requests open on this server, its share is ${share} while this server is loaded (KEY_CONCURRENCY ${perKey}, lowered under load); send the next when one has ended`,
      )
    if (perKey && key >= perKey)
      return this.refuse(
        'key_concurrency',
        429,
        `this key already has ${key} requests open on this server, its share is ${perKey} (KEY_CONCURRENCY); send the next when one has ended`,
      )
    const workspace = this.workspaces.get(workspaceId) ?? 0
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
    this.keys.set(keyId, key + 1)
    if (squeezable) this.pressing.set(keyId, pressing + 1)
    if (turnWork && key === 0) increment(this.turnKeys, workspaceId)
    this.workspaces.set(workspaceId, workspace + 1)
    this.bodyBytes += bytes
    let left = false
    return () => {
      if (left) return
      left = true
      this.bodyBytes -= bytes
      decrement(this.keys, keyId)
      if (squeezable) decrement(this.pressing, keyId)
      if (turnWork && !this.keys.has(keyId)) decrement(this.turnKeys, workspaceId)
      decrement(this.workspaces, workspaceId)
    }
  }

  /**
   * Whether another party has requests open, or made one in the last OTHERS_RECENT_MS (a client
   * that calls one at a time is about between its calls too): another key, or another workspace's
   * interns; never the caller's own workspace's interns, whose calls are its turns' work.
   */
  private othersAbout(caller: Admitted, open: number, party: string, now: number): boolean {
    const ownTurns = this.turnKeys.get(caller.workspaceId) ?? 0
    if (this.keys.size - (open > 0 ? 1 : 0) - ownTurns > 0) return true
    const other = this.latest.party === party ? this.previous : this.latest
    return other.party !== '' && other.party !== turnsOf(caller.workspaceId) && now - other.at < OTHERS_RECENT_MS
  }

  /** Keeps the last two distinct parties to have entered, and when, in place (it runs on every request). */
  private noteActive(party: string, now: number) {
    if (this.latest.party !== party) {
      const spare = this.previous
      this.previous = this.latest
      this.latest = spare
      spare.party = party
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

/** The party an intern's calls belong to: its workspace's turns. */
const turnsOf = (workspaceId: string) => `turns:${workspaceId}`

function increment(counts: Map<string, number>, id: string) {
  counts.set(id, (counts.get(id) ?? 0) + 1)
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
export function admit(admission: Admission, bodyLimit: number, work: Work = 'request'): onRequestHookHandler {
  const refusalDelayMs = admission.refusalDelayMs
  return (req, reply, done) => {
    const entered = admission.enter(callerOf(req), declaredBytes(req, bodyLimit), work)
    if (typeof entered !== 'function') return afterRefusalDelay(refusalDelayMs, () => done(refusalError(entered)))
    reply.raw.once('close', entered)
    done()
  }
}
