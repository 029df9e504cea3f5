import { Pool, type Dispatcher } from 'undici'
import type { Db } from '../db.js'
import { injectTrace, inSpan, SpanKind, tracing } from '@roster/platform'
import { readEventStream } from '@roster/platform'
import {
  HostErrorBody,
  HostedIntern,
  RunEvent,
  Steered,
  type ChatRequest,
  type InternSpec,
  type WorkspaceFilePut,
} from '@roster/protocol'
import { hostCredential } from './hosts.js'
import { placementOf, type PlacedOn } from '../repositories/interns.js'

// The runtime hosts as the workers and the API call them: each call goes to the host the intern is
// placed on, with that host's credential for its epoch and the placement's generation (a host
// refuses a call for a placement it no longer holds). One keep-alive pool per host.

/** A host as a caller reaches it. */
export interface HostAddress {
  hostId: string
  address: string
  epoch: number
}

/** A failure worth retrying: the host could not be reached or answered 5xx. */
export class RuntimeUnavailableError extends Error {
  override name = 'RuntimeUnavailableError'
  /** No connection was made: the host cannot have received the call (a retry cannot do it twice). */
  get undelivered(): boolean {
    const code = (this.cause as { code?: string } | undefined)?.code
    return code !== undefined && UNDELIVERED.has(code)
  }
}
const UNDELIVERED = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_CONNECT_TIMEOUT',
])

/** A refusal of the host's own (one of HOST_ERRORS), by code. */
export class HostRefusal extends Error {
  override name = 'HostRefusal'
  constructor(
    readonly status: number,
    readonly body: HostErrorBody,
  ) {
    super(body.message)
  }
}

/** What a chat call came to: the run's events, a steer, or the host's refusal. */
export type ChatOutcome =
  | { kind: 'stream'; events: AsyncIterable<RunEvent> }
  | { kind: 'steered'; session_id: string }
  | { kind: 'refused'; status: number; error: HostErrorBody }

const PLACEMENT_HEADER = 'x-roster-placement'

export class FleetDriver {
  private readonly pools = new Map<string, Pool>()

  constructor(
    private readonly db: Db | undefined,
    /** Host credentials are derived from it; without it no host can be called. */
    private readonly credentialKey: Buffer | undefined,
    private readonly options: { timeoutMs?: number } = {},
  ) {}

  /** Where the record places an intern now. */
  placement(internId: string): Promise<(PlacedOn & { status: string }) | undefined> {
    if (!this.db) return Promise.resolve(undefined)
    return placementOf(this.db, internId)
  }

  async configure(at: PlacedOn, internId: string, spec: InternSpec) {
    return (await this.call(at, 'PUT', `/v1/interns/${internId}`, spec, at.generation)) as { written: boolean }
  }

  async start(at: PlacedOn, internId: string) {
    return (await this.call(at, 'POST', `/v1/interns/${internId}/start`, undefined, at.generation)) as {
      started: boolean
    }
  }

  async stop(at: PlacedOn, internId: string) {
    await this.call(at, 'POST', `/v1/interns/${internId}/stop`, undefined, at.generation)
  }

  /** Keeps a copy of the intern's workspace before a teardown; false when there is nothing to keep. */
  async archive(at: PlacedOn, internId: string) {
    return (await this.call(at, 'POST', `/v1/interns/${internId}/archive`, undefined, at.generation)) as {
      archived: boolean
    }
  }

  /** Puts a file into the intern's workspace (its directories made); where it landed and its size. */
  async putFile(at: PlacedOn, internId: string, path: string, bytes: Uint8Array) {
    const body: WorkspaceFilePut = { path, content_base64: Buffer.from(bytes).toString('base64') }
    return (await this.call(at, 'PUT', `/v1/interns/${internId}/files`, body, at.generation)) as {
      path: string
      bytes: number
    }
  }

  async remove(at: HostAddress, internId: string) {
    await this.call(at, 'DELETE', `/v1/interns/${internId}`)
  }

  /** Whether the intern answers healthy on its own hostname, at its host. */
  async healthy(at: HostAddress, hostname: string): Promise<boolean> {
    const check = async () => {
      try {
        const res = await this.pool(at.address).request({
          method: 'GET',
          path: '/healthz',
          headers: injectTrace({ 'x-forwarded-host': hostname }),
        })
        await res.body.dump()
        return res.statusCode === 200
      } catch {
        return false
      }
    }
    if (tracing.on)
      return inSpan(
        'runtime GET /healthz',
        { kind: SpanKind.CLIENT, attributes: this.attributes(at, 'GET', '/healthz') },
        check,
      )
    return check()
  }

  /** The interns a host has, and whether each runs. */
  async hosted(at: HostAddress): Promise<Map<string, HostedIntern>> {
    const { data } = (await this.call(at, 'GET', '/v1/interns')) as { data: unknown[] }
    return new Map(data.map((d) => HostedIntern.parse(d)).map((i) => [i.id, i]))
  }

  /**
   * A prompt or a reply for an intern, at its host: its run's events as they come (a steer, or the
   * host's refusal, answered as such). `headersTimeoutMs`: how long the host may take to take it.
   */
  async chat(
    at: PlacedOn,
    internId: string,
    body: ChatRequest,
    signal: AbortSignal,
    headersTimeoutMs: number,
  ): Promise<ChatOutcome> {
    let res: Dispatcher.ResponseData
    try {
      res = await this.pool(at.address).request({
        method: 'POST',
        path: `/v1/interns/${internId}/chat`,
        headers: injectTrace(this.headers(at, at.generation, true)),
        body: JSON.stringify(body),
        signal,
        headersTimeout: headersTimeoutMs,
        bodyTimeout: 0,
      })
    } catch (cause) {
      if ((cause as { code?: string }).code === 'UND_ERR_HEADERS_TIMEOUT') throw cause
      throw new RuntimeUnavailableError(`runtime host ${at.hostId} is unreachable`, { cause })
    }
    if (res.statusCode === 200)
      return { kind: 'stream', events: readEventStream(res.body, (data) => RunEvent.parse(JSON.parse(data))) }
    const json = await res.body.json().catch(() => undefined)
    if (res.statusCode === 202) return { kind: 'steered', session_id: Steered.parse(json).session_id }
    const error = HostErrorBody.safeParse(json)
    if (!error.success) throw new RuntimeUnavailableError(`runtime host ${at.hostId} answered ${res.statusCode}`)
    return { kind: 'refused', status: res.statusCode, error: error.data }
  }

  async close() {
    await Promise.all([...this.pools.values()].map((p) => p.close()))
  }

  private pool(address: string) {
    let pool = this.pools.get(address)
    if (!pool) {
      const timeout = this.options.timeoutMs ?? 5_000
      this.pools.set(
        address,
        (pool = new Pool(new URL(address).origin, { connections: 64, headersTimeout: timeout, bodyTimeout: timeout })),
      )
    }
    return pool
  }

  private headers(at: HostAddress, generation: number | undefined, json: boolean) {
    if (!this.credentialKey)
      throw new RuntimeUnavailableError(
        'no runtime host can be called without VAULT_MASTER_KEY (host credentials are derived from it)',
      )
    const headers: Record<string, string> = {
      authorization: `Bearer ${hostCredential(this.credentialKey, at.hostId, at.epoch)}`,
    }
    if (generation !== undefined) headers[PLACEMENT_HEADER] = String(generation)
    if (json) headers['content-type'] = 'application/json'
    return headers
  }

  private async call(
    at: HostAddress,
    method: 'GET' | 'PUT' | 'POST' | 'DELETE',
    path: string,
    body?: unknown,
    generation?: number,
  ): Promise<unknown> {
    const send = () => this.send(at, method, path, body, generation)
    if (!tracing.on) return send()
    // Span names carry the route, not the intern's id (the id is an attribute).
    const route = path.replace(/\/v1\/interns\/[^/]+/, '/v1/interns/{id}')
    return inSpan(
      `runtime ${method} ${route}`,
      { kind: SpanKind.CLIENT, attributes: this.attributes(at, method, path) },
      send,
    )
  }

  private attributes(at: HostAddress, method: string, path: string) {
    const url = new URL(path, at.address)
    return {
      'http.request.method': method,
      'url.full': url.toString(),
      'server.address': url.hostname,
      'server.port': Number(url.port || 80),
      'roster.runtime.host': at.hostId,
    }
  }

  private async send(
    at: HostAddress,
    method: string,
    path: string,
    body: unknown,
    generation: number | undefined,
  ): Promise<unknown> {
    let res: Dispatcher.ResponseData
    try {
      res = await this.pool(at.address).request({
        method: method as 'GET',
        path,
        headers: injectTrace(this.headers(at, generation, body !== undefined)),
        body: body === undefined ? undefined : JSON.stringify(body),
      })
    } catch (cause) {
      throw new RuntimeUnavailableError(`runtime host ${at.hostId} at ${at.address} is unreachable`, { cause })
    }
    const text = await res.body.text()
    if (res.statusCode >= 500)
      throw new RuntimeUnavailableError(
        `runtime host ${at.hostId} answered ${res.statusCode} to ${method} ${path}: ${text.slice(0, 200)}`,
      )
    if (res.statusCode >= 400) {
      const refusal = HostErrorBody.safeParse(safeJson(text))
      if (refusal.success) throw new HostRefusal(res.statusCode, refusal.data)
      throw new Error(`runtime host ${at.hostId} refused ${method} ${path}: ${res.statusCode} ${text.slice(0, 200)}`)
    }
    return text ? JSON.parse(text) : {}
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}
