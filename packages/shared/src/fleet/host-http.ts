import { Pool, type Dispatcher } from 'undici'
import { injectTrace, inSpan, SpanKind, tracing } from '@roster/platform'
import { HostErrorBody } from '@roster/protocol'
import { hostCredential } from './hosts.js'

// Calls to runtime hosts over HTTP: one keep-alive pool per host, each call with the host's
// credential for its epoch and the placement's generation, traced, its failures named.

/** A host as a caller reaches it. */
export interface HostAddress {
  hostId: string
  address: string
  epoch: number
}

const PLACEMENT_HEADER = 'x-roster-placement'

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

export class HostHttp {
  private readonly pools = new Map<string, Pool>()

  constructor(
    /** Host credentials are derived from it; without it no host can be called. */
    private readonly credentialKey: Buffer | undefined,
    private readonly options: { timeoutMs?: number } = {},
  ) {}

  async close() {
    await Promise.all([...this.pools.values()].map((p) => p.close()))
  }

  pool(address: string) {
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

  headers(at: HostAddress, generation: number | undefined, json: boolean) {
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

  async call(
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

  attributes(at: HostAddress, method: string, path: string) {
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
