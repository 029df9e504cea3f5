import { Pool, type Dispatcher } from 'undici'
import { injectTrace, inSpan, SpanKind, tracing } from './tracing.js'
// The runtime behind provisioning: a small interface, so a container orchestrator can replace the
// local runtime host (apps/runtime) without touching the provisioning flow.

export interface RuntimeSpec {
  hostname: string
  name: string
  instructions: string | null
  model: string | null
  /** Credential the runtime uses to call back into Roster; read from the intern's vault. */
  token: string
}

export interface RuntimeDriver {
  /** Writes the intern's runtime configuration; a no-op when it is unchanged. */
  configure(internId: string, spec: RuntimeSpec): Promise<{ written: boolean }>
  /** Starts the intern; a no-op when it already runs. */
  start(internId: string): Promise<{ started: boolean }>
  /** Whether the intern answers healthy on its own hostname. */
  healthy(hostname: string): Promise<boolean>
  /** The interns this runtime hosts (configured), and whether each runs now. */
  hosted(): Promise<Map<string, { running: boolean }>>
  stop(internId: string): Promise<void>
  /** Keeps a copy of the intern's workspace before a teardown; false when there is nothing to keep. */
  archive(internId: string): Promise<{ archived: boolean }>
  remove(internId: string): Promise<void>
  /** Releases connections on shutdown. */
  close(): Promise<void>
}

/** A failure worth retrying: the runtime could not be reached or answered 5xx. */
export class RuntimeUnavailableError extends Error {
  override name = 'RuntimeUnavailableError'
}

/**
 * Talks to apps/runtime over HTTP, through one keep-alive connection pool: provisioning makes
 * three calls per intern, and the global fetch costs several times more CPU per call.
 */
export class HttpRuntimeDriver implements RuntimeDriver {
  private readonly pool: Pool

  private readonly authorization: string

  constructor(
    private readonly baseUrl: string,
    /** The runtime host's control credential (RUNTIME_TOKEN). */
    token: string,
    private readonly timeoutMs = 5_000,
  ) {
    this.pool = new Pool(new URL(baseUrl).origin, { connections: 64, headersTimeout: timeoutMs, bodyTimeout: timeoutMs })
    this.authorization = `Bearer ${token}`
  }

  async configure(internId: string, spec: RuntimeSpec) {
    return (await this.call('PUT', `/v1/interns/${internId}`, spec)) as { written: boolean }
  }

  async start(internId: string) {
    return (await this.call('POST', `/v1/interns/${internId}/start`)) as { started: boolean }
  }

  async healthy(hostname: string): Promise<boolean> {
    if (tracing.on) return inSpan('runtime GET /healthz', { kind: SpanKind.CLIENT, attributes: this.attributes('GET', '/healthz') }, () => this.health(hostname))
    return this.health(hostname)
  }

  private async health(hostname: string): Promise<boolean> {
    try {
      const res = await this.pool.request({ method: 'GET', path: '/healthz', headers: injectTrace({ 'x-forwarded-host': hostname }) })
      await res.body.dump()
      return res.statusCode === 200
    } catch {
      return false
    }
  }

  async stop(internId: string) {
    await this.call('POST', `/v1/interns/${internId}/stop`)
  }

  async hosted() {
    const res = await this.pool.request({ method: 'GET', path: '/v1/interns', headers: { authorization: this.authorization } }).catch((cause) => {
      throw new RuntimeUnavailableError(`runtime host at ${this.baseUrl} is unreachable`, { cause })
    })
    if (res.statusCode !== 200) {
      await res.body.dump()
      throw new RuntimeUnavailableError(`runtime host answered ${res.statusCode} to GET /v1/interns`)
    }
    const { data } = (await res.body.json()) as { data: { id: string; running: boolean }[] }
    return new Map(data.map((i) => [i.id, { running: i.running }]))
  }

  async archive(internId: string) {
    return (await this.call('POST', `/v1/interns/${internId}/archive`)) as { archived: boolean }
  }

  async remove(internId: string) {
    await this.call('DELETE', `/v1/interns/${internId}`)
  }

  async close() {
    await this.pool.close()
  }

  private async call(method: 'PUT' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<unknown> {
    if (!tracing.on) return this.send(method, path, body)
    // Span names carry the route, not the intern's id (the id is an attribute).
    const route = path.replace(/\/v1\/interns\/[^/]+/, '/v1/interns/{id}')
    return inSpan(`runtime ${method} ${route}`, { kind: SpanKind.CLIENT, attributes: this.attributes(method, path) }, () => this.send(method, path, body))
  }

  private attributes(method: string, path: string) {
    const url = new URL(path, this.baseUrl)
    return { 'http.request.method': method, 'url.full': url.toString(), 'server.address': url.hostname, 'server.port': Number(url.port || 80) }
  }

  private async send(method: 'PUT' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<unknown> {
    let res: Dispatcher.ResponseData
    try {
      res = await this.pool.request({
        method,
        path,
        headers: injectTrace(body === undefined ? { authorization: this.authorization } : { authorization: this.authorization, 'content-type': 'application/json' }),
        body: body === undefined ? undefined : JSON.stringify(body),
      })
    } catch (cause) {
      throw new RuntimeUnavailableError(`runtime host at ${this.baseUrl} is unreachable`, { cause })
    }
    const text = await res.body.text()
    if (res.statusCode >= 500) throw new RuntimeUnavailableError(`runtime host answered ${res.statusCode} to ${method} ${path}`)
    if (res.statusCode >= 400) throw new Error(`runtime host refused ${method} ${path}: ${res.statusCode} ${text.slice(0, 200)}`)
    return text ? JSON.parse(text) : {}
  }
}
