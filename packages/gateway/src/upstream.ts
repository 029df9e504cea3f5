import { Pool, type Dispatcher } from 'undici'
import type { Endpoint } from './catalogue.js'
import type { Adapter } from './adapters/adapter.js'
import { GatewayError, upstreamError } from './errors.js'
import type { Cancellation } from './cancellation.js'

type Json = Record<string, any>

/**
 * HTTP to providers: one keep-alive pool per origin. Credentials are read from the environment per
 * call, by the name the catalogue gives, and go only into the request headers.
 */
export class Upstream {
  private readonly pools = new Map<string, Pool>()

  constructor(private readonly env: NodeJS.ProcessEnv) {}

  /** Sends a call; answers the provider's 2xx response (body unread) or throws a GatewayError. */
  async send(endpoint: Endpoint, adapter: Adapter, body: Json, signal: Cancellation | undefined, extraHeaders: Record<string, string> = {}): Promise<Dispatcher.ResponseData> {
    const url = this.url(endpoint, adapter)
    const key = endpoint.api_key_env ? this.env[endpoint.api_key_env] : undefined
    let res: Dispatcher.ResponseData
    try {
      res = await this.pool(url.origin).request({
        method: 'POST',
        path: url.pathname + url.search,
        headers: { ...adapter.headers(key), ...extraHeaders },
        body: JSON.stringify(body),
        headersTimeout: endpoint.timeout_ms,
        bodyTimeout: endpoint.timeout_ms,
        signal,
      })
    } catch (err) {
      if (signal?.aborted) throw err
      throw connectionError(endpoint, err)
    }
    if (res.statusCode >= 400) {
      const text = await res.body.text().catch(() => '')
      throw upstreamError(endpoint.provider, res.statusCode, text, res.headers['retry-after'])
    }
    return res
  }

  /** Parsed once per endpoint and protocol: URL parsing is not free at thousands of calls a second. */
  private readonly urls = new WeakMap<Endpoint, URL>()
  private url(endpoint: Endpoint, adapter: Adapter): URL {
    let url = this.urls.get(endpoint)
    if (!url) this.urls.set(endpoint, (url = new URL(endpoint.base_url.replace(/\/$/, '') + adapter.path)))
    return url
  }

  async close() {
    await Promise.all([...this.pools.values()].map((p) => p.close()))
  }

  private pool(origin: string) {
    let pool = this.pools.get(origin)
    if (!pool) this.pools.set(origin, (pool = new Pool(origin, { connections: 256, pipelining: 1, keepAliveTimeout: 30_000 })))
    return pool
  }
}

/** A transport failure (no answer, a timeout, a stream cut) as a canonical error. */
export function connectionError(endpoint: Endpoint, err: unknown): GatewayError {
  if (err instanceof GatewayError) return err
  const e = err as { name?: string; code?: string; message?: string }
  const timedOut = /timeout/i.test(e?.name ?? '') || /TIMEOUT/.test(e?.code ?? '')
  return timedOut
    ? new GatewayError(504, 'timeout', `${endpoint.provider} did not answer within ${endpoint.timeout_ms} ms`)
    : new GatewayError(502, 'provider_unavailable', `${endpoint.provider} could not be reached or closed the connection`)
}
