import { Agent, request } from 'undici'
import { guardedLookup, readCapped, refusedLiteral } from '@roster/gateway'
import { SECRET_PLACEHOLDER, type Db, type EgressRequest, type EgressResult, type SecretEgress } from '@roster/shared'
import { releasableSecrets, type VaultService } from '@roster/shared/vault'

// An intern's outbound HTTP that carries a secret (its http_request tool, and what its shell
// commands send through their egress proxy). The model never holds a secret: it writes a
// placeholder, `{{secret:NAME}}`, in a header or the body, and the egress puts the value in on the
// way out, only when the secret NAME resolves to is bound to the request's host exactly (the
// intern's own, else its attached vault's, else the workspace's). Anything that comes back with a
// released value in it has the placeholder put back, so the value reaches neither the model nor a
// transcript. It runs in the API tier, never on a runtime host: the hosts run the interns' code and
// hold no master key; a host asks for a request here on behalf of an intern placed on it, and the
// request is made from here (so HTTPS needs no interception).

export interface EgressOptions {
  db: Db
  vault: VaultService
  /** Reach private, loopback and link-local addresses too (tests and labs; off by default). */
  allowPrivateNetworks: boolean
  /** Names resolved to fixed addresses instead of DNS (tests map their hostnames to the loopback). */
  hosts?: Record<string, string>
  timeoutMs: number
  maxBytes: number
}

export type HttpRequestArgs = Omit<EgressRequest, 'method'> & { method?: string }
export type HttpRequestResult = EgressResult

export class Egress implements SecretEgress {
  private readonly agent: Agent

  constructor(private readonly options: EgressOptions) {
    // The same address guard as web_fetch's, in the connection's own lookup.
    this.agent = new Agent({ connect: { timeout: options.timeoutMs, lookup: guardedLookup(options) } })
  }

  /** One request on the intern's behalf, with its secrets released to the hosts they are bound to. */
  async send(internId: string, args: HttpRequestArgs, signal?: AbortSignal): Promise<HttpRequestResult> {
    let url: URL
    try {
      url = new URL(String(args.url))
    } catch {
      return { error: 'url is not a valid URL' }
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      return { error: `only http and https URLs are requested, not ${url.protocol}` }
    const refused = refusedLiteral(url.hostname, this.options)
    if (refused) return { error: refused }
    if (/\{\{secret:/.test(safeDecode(url.href)))
      return { error: 'secrets go in headers or the body, never in the URL (URLs end up in logs)' }
    const headers = { ...(args.headers ?? {}) }
    const wanted = new Set<string>()
    for (const text of [...Object.values(headers), args.body ?? ''])
      for (const m of String(text).matchAll(SECRET_PLACEHOLDER)) wanted.add(m[1]!)
    const host = url.hostname.toLowerCase()
    const released = wanted.size
      ? await releasableSecrets(this.options.db, this.options.vault, internId, host)
      : new Map<string, string>()
    const missing = [...wanted].filter((n) => !released.has(n))
    if (missing.length)
      return {
        error: `not sent: ${missing.join(', ')} ${missing.length > 1 ? 'are' : 'is'} not a secret bound to ${host} (bind the host to it, or ask for the secret)`,
      }
    const fill = (text: string) => text.replace(SECRET_PLACEHOLDER, (_, name: string) => released.get(name)!)
    for (const k of Object.keys(headers)) headers[k] = fill(String(headers[k]))
    try {
      const res = await request(url, {
        method: (args.method ?? 'GET').toUpperCase() as 'GET',
        headers: { 'user-agent': 'Roster-intern/1', ...headers },
        body: args.body === undefined ? undefined : fill(args.body),
        dispatcher: this.agent,
        signal: signal
          ? AbortSignal.any([signal, AbortSignal.timeout(this.options.timeoutMs)])
          : AbortSignal.timeout(this.options.timeoutMs),
        headersTimeout: this.options.timeoutMs,
        bodyTimeout: this.options.timeoutMs,
        maxRedirections: 0,
      } as Parameters<typeof request>[1])
      const { text, truncated } = await readCapped(res.body, args.max_bytes ?? this.options.maxBytes)
      const scrub = (text: string) => scrubSecrets(text, released)
      const outHeaders = Object.fromEntries(
        Object.entries(res.headers).map(([k, v]) => [k, scrub(Array.isArray(v) ? v.join(', ') : String(v ?? ''))]),
      )
      return { status: res.statusCode, headers: outHeaders, body: scrub(text), truncated }
    } catch (err) {
      return { error: `request failed: ${scrubSecrets((err as Error).message, released)}` }
    }
  }

  async close() {
    await this.agent.close()
  }
}

/** Puts the placeholder back wherever a released value appears (longest values first, so none hides inside another). */
export function scrubSecrets(text: string, released: Map<string, string>): string {
  let out = text
  for (const [name, value] of [...released].sort((a, b) => b[1].length - a[1].length))
    if (value) out = out.split(value).join(`{{secret:${name}}}`)
  return out
}

const safeDecode = (text: string) => {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}
