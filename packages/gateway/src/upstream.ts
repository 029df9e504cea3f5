import { isByok } from './byok.js'
import type { IncomingHttpHeaders } from 'node:http'
import { Pool, type Dispatcher } from 'undici'
import type { Endpoint } from './catalogue.js'
import type { AnyAdapter } from './adapters/adapter.js'
import { GatewayError, gatewayError, upstreamError } from './errors.js'
import type { Cancellation } from './cancellation.js'
import { FairGate } from './fair-gate.js'

export interface CallHooks {
  cancel?: Cancellation
  /** Whose call this is (an API key): it waits for a place within that tenant's share of the provider's connections. */
  tenant?: string
  headers?: Record<string, string>
  /** The provider answered (status line and headers in). */
  onStart?(): void
  /**
   * Streaming: each chunk of a 2xx body, handed over synchronously as it comes off the socket.
   * A promise answered means "not now": the upstream is paused until it settles. What it throws
   * ends the call with that error. Without it the whole body is collected and answered.
   */
  onChunk?(chunk: Buffer): Promise<void> | void
}

/**
 * HTTP to providers: one keep-alive pool per origin. Credentials are read from the environment
 * once per endpoint, by the name the catalogue gives, and go only into the request headers.
 *
 * Calls go through undici's dispatch handler rather than `request()`: a reply's chunks reach the
 * engine straight from the parser instead of through a Readable stream and its async iterator,
 * which cost a stream's first chunk ~0.08 ms (measured) and every call a stream object.
 */
export interface UpstreamOptions {
  /** Connections per provider origin (undici's pool), and how many of them one tenant's calls may hold at once. */
  connections?: number
  connectionsPerTenant?: number
  /** Told how many calls wait for a place, per origin, whenever it changes. */
  onWaiting?: (origin: string, count: number) => void
}

/**
 * How the engine reaches providers: `Upstream` (HTTP, below) in a running gateway; anything that
 * answers alike in a test of the engine on its own (engine.test.ts scripts one).
 */
export interface Transport {
  /**
   * One call: the whole body of a 2xx reply, or (with `hooks.onChunk`) nothing once the streamed
   * body has ended; a GatewayError for an error status or a transport failure.
   */
  call(endpoint: Endpoint, adapter: Wire, body: object, hooks?: CallHooks): Promise<Buffer | undefined>
  close(): Promise<void>
}

/** What of a protocol the transport needs: where its calls go under the endpoint's base URL, and their headers. */
export type Wire = Pick<AnyAdapter, 'path' | 'headers'>

/** The tenant of calls that name none: they share one share. */
const ANONYMOUS = ''

export class Upstream implements Transport {
  private readonly pools = new Map<string, { pool: Pool; gate: FairGate }>()
  private readonly connections: number
  private readonly perTenant: number

  constructor(
    private readonly env: NodeJS.ProcessEnv,
    private readonly options: UpstreamOptions = {},
  ) {
    this.connections = options.connections ?? 256
    this.perTenant = Math.min(options.connectionsPerTenant ?? this.connections, this.connections)
  }

  /**
   * Sends a call once its tenant has a place among the origin's connections (FairGate). Answers the
   * whole body of a 2xx reply, or (with `onChunk`) nothing once the streamed body has ended; throws
   * a GatewayError for an error status or a transport failure.
   */
  call(endpoint: Endpoint, adapter: Wire, body: object, hooks: CallHooks = {}): Promise<Buffer | undefined> {
    const target = this.target(endpoint, adapter)
    const tenant = hooks.tenant ?? ANONYMOUS
    const entered = target.gate.enter(tenant, hooks.cancel)
    return entered === true
      ? this.send(target, endpoint, body, hooks, tenant)
      : entered.then(() => this.send(target, endpoint, body, hooks, tenant))
  }

  private send(
    target: Target,
    endpoint: Endpoint,
    body: object,
    hooks: CallHooks,
    tenant: string,
  ): Promise<Buffer | undefined> {
    return new Promise((resolve, reject) => {
      const handler = new UpstreamCall(endpoint, hooks, resolve, reject, () => target.gate.leave(tenant))
      target.pool.dispatch(
        {
          method: 'POST',
          path: target.path,
          headers: hooks.headers ? { ...target.headers, ...hooks.headers } : target.headers,
          body: JSON.stringify(body),
          headersTimeout: endpoint.timeout_ms,
          bodyTimeout: endpoint.timeout_ms,
        },
        handler,
      )
    })
  }

  /**
   * Where an endpoint's calls go and with which headers, worked out once per endpoint: URL parsing
   * and environment reads are not free at thousands of calls a second, and a process's environment
   * does not change under it.
   */
  // By protocol first (a handful of module-level objects), then endpoint: one endpoint's calls may
  // go to more than one path (the Images API beside Chat Completions).
  private readonly targets = new WeakMap<Wire, WeakMap<Endpoint, Target>>()
  private target(endpoint: Endpoint, adapter: Wire): Target {
    let ofWire = this.targets.get(adapter)
    if (!ofWire) this.targets.set(adapter, (ofWire = new WeakMap()))
    let target = ofWire.get(endpoint)
    if (!target) {
      const url = new URL(endpoint.base_url.replace(/\/$/, '') + adapter.path)
      // A workspace's own credential (BYOK), or the catalogue's from the environment.
      const key = isByok(endpoint)
        ? endpoint.byok.key
        : endpoint.api_key_env
          ? this.env[endpoint.api_key_env]
          : undefined
      target = { ...this.pool(url.origin), path: url.pathname + url.search, headers: adapter.headers(key) }
      ofWire.set(endpoint, target)
    }
    return target
  }

  async close() {
    await Promise.all([...this.pools.values()].map((p) => p.pool.close()))
  }

  private pool(origin: string) {
    let entry = this.pools.get(origin)
    if (!entry) {
      const onWaiting = this.options.onWaiting
      entry = {
        pool: new Pool(origin, { connections: this.connections, pipelining: 1, keepAliveTimeout: 30_000 }),
        gate: new FairGate(this.connections, this.perTenant, onWaiting && ((count) => onWaiting(origin, count))),
      }
      this.pools.set(origin, entry)
    }
    return entry
  }
}

/** Where an endpoint's calls go: its origin's pool and gate, its path, and its headers. */
interface Target {
  pool: Pool
  gate: FairGate
  path: string
  headers: Record<string, string>
}

class Cancelled extends Error {
  override name = 'AbortError'
  constructor() {
    super('the client closed the connection')
  }
}

/** One upstream call's life: undici calls these as the reply comes in. */
class UpstreamCall implements Dispatcher.DispatchHandler {
  private controller?: Dispatcher.DispatchController
  private status = 0
  private retryAfter?: string | string[]
  private readonly chunks: Buffer[] = []
  /** What ended the call from our side (a consumer's error), reported instead of the abort it caused. */
  private failure?: unknown
  private settled = false
  private readonly stopListening?: () => void

  constructor(
    private readonly endpoint: Endpoint,
    private readonly hooks: CallHooks,
    private readonly resolve: (body: Buffer | undefined) => void,
    private readonly reject: (err: unknown) => void,
    /** Gives the call's place back (FairGate), once, when it has ended. */
    private readonly done: () => void,
  ) {
    this.stopListening = hooks.cancel?.onCancel(this.cancelled)
  }

  // A cancellation before the request reached a connection is acted on in onRequestStart.
  private readonly cancelled = () => this.controller?.abort(new Cancelled())

  onRequestStart(controller: Dispatcher.DispatchController) {
    this.controller = controller
    if (this.hooks.cancel?.aborted) controller.abort(new Cancelled())
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders) {
    this.status = statusCode
    this.retryAfter = headers['retry-after']
    if (statusCode < 400) this.hooks.onStart?.()
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer) {
    const onChunk = this.hooks.onChunk
    if (!onChunk || this.status >= 400) {
      this.chunks.push(chunk)
      return
    }
    try {
      const wait = onChunk(chunk)
      if (wait) {
        controller.pause()
        wait.then(
          () => controller.resume(),
          (err) => this.fail(controller, err),
        )
      }
    } catch (err) {
      this.fail(controller, err)
    }
  }

  onResponseEnd() {
    if (this.status >= 400) {
      this.settle(
        undefined,
        upstreamError(
          this.endpoint.provider,
          this.status,
          Buffer.concat(this.chunks).toString('utf8'),
          this.retryAfter,
        ),
      )
    } else
      this.settle(
        this.hooks.onChunk ? undefined : this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks),
      )
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, err: Error) {
    if (this.failure !== undefined) return this.settle(undefined, this.failure)
    this.settle(undefined, this.hooks.cancel?.aborted ? err : connectionError(this.endpoint, err))
  }

  private fail(controller: Dispatcher.DispatchController, err: unknown) {
    this.failure = err
    controller.abort(err instanceof Error ? err : new Error(String(err)))
  }

  private settle(body: Buffer | undefined, err?: unknown) {
    if (this.settled) return
    this.settled = true
    this.done()
    this.stopListening?.()
    if (err !== undefined) this.reject(err)
    else this.resolve(body)
  }
}

/** A transport failure (no answer, a timeout, a stream cut) as a canonical error. */
function connectionError(endpoint: Endpoint, err: unknown): GatewayError {
  if (err instanceof GatewayError) return err
  const e = err as { name?: string; code?: string; message?: string }
  const timedOut = /timeout/i.test(e?.name ?? '') || /TIMEOUT/.test(e?.code ?? '')
  return timedOut
    ? gatewayError('timeout', `${endpoint.provider} did not answer within ${endpoint.timeout_ms} ms`)
    : gatewayError('provider_unavailable', `${endpoint.provider} could not be reached or closed the connection`)
}
