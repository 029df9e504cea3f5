import type { FastifyRequest, onRequestHookHandler } from 'fastify'
import { AppError, type Caller } from '@roster/shared'

// Fair shares of one API process: how many requests and streams one key, and one workspace, may
// have open at once, and how many request-body bytes all clients together may have in flight. Past a
// key's or a workspace's share the answer is 429 with Retry-After (in the route's own error shape,
// by the one error handler); past the process's body budget, 503. Counted per process: behind a load
// balancer each process holds its share, so N processes admit N times as much.

export interface AdmissionLimits {
  /** Open requests and streams per key (0: no limit). */
  perKey: number
  /** Open requests and streams per workspace (0: no limit). */
  perWorkspace: number
  /** Request-body bytes in flight in the process, as declared (Content-Length) or the route's limit when not (0: no limit). */
  bodyBytes: number
}

/** Why a request was not admitted. */
export type Refusal = { status: 429 | 503; message: string }

export class Admission {
  private readonly keys = new Map<string, number>()
  private readonly workspaces = new Map<string, number>()
  private bodyBytes = 0

  constructor(
    private readonly limits: AdmissionLimits,
    /** Told of each refusal, by the limit that refused (metrics). */
    private readonly refused: (limit: 'key_concurrency' | 'workspace_concurrency' | 'body_bytes') => void = () => {},
  ) {}

  /** Admits one request of `caller` carrying up to `bytes` of body: its release, or why not. */
  enter(caller: Pick<Caller, 'keyId' | 'workspaceId'>, bytes = 0): (() => void) | Refusal {
    const { perKey, perWorkspace, bodyBytes } = this.limits
    const key = this.keys.get(caller.keyId) ?? 0
    if (perKey && key >= perKey) return this.refuse('key_concurrency', 429, `this key already has ${perKey} requests open on this server (KEY_CONCURRENCY); send the next when one has ended`)
    const workspace = this.workspaces.get(caller.workspaceId) ?? 0
    if (perWorkspace && workspace >= perWorkspace) return this.refuse('workspace_concurrency', 429, `this workspace already has ${perWorkspace} requests open on this server (WORKSPACE_CONCURRENCY); send the next when one has ended`)
    if (bodyBytes && bytes && this.bodyBytes + bytes > bodyBytes) return this.refuse('body_bytes', 503, 'this server is reading as many request bodies as it can hold (REQUEST_BODY_BYTES); retry shortly')
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

  private refuse(limit: 'key_concurrency' | 'workspace_concurrency' | 'body_bytes', status: 429 | 503, message: string): Refusal {
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
 * until its response has ended or its connection closed, streams included.
 */
export function admit(admission: Admission, bodyLimit: number): onRequestHookHandler {
  return (req, reply, done) => {
    const entered = admission.enter(req.caller!, declaredBytes(req, bodyLimit))
    if (typeof entered !== 'function') return done(refusalError(entered))
    reply.raw.once('close', entered)
    done()
  }
}
