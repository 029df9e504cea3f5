import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { connect, type Socket } from 'node:net'
import { chmod, chown, mkdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { Agent, request } from 'undici'
import { guardedLookup, refusedLiteral } from '@roster/gateway'
import { SECRET_PLACEHOLDER, type ListenerSettings, type SecretEgress } from '@roster/protocol'
import { httpServerOptions, limitHttpServer } from '@roster/platform'

// How an intern's shell commands reach the network. A sandbox has no network of its own (no
// interface but its own loopback); a command granted the network gets this intern's HTTP proxy,
// a Unix socket bound into its sandbox, with a forwarder inside on 127.0.0.1:3128 and
// HTTP_PROXY/HTTPS_PROXY pointing there. So every byte out goes through the egress rules:
// - plain HTTP is forwarded by the proxy, which refuses private and loopback addresses (Roster's own
//   database and services among them); a request carrying a `{{secret:NAME}}` placeholder goes
//   through the egress, which puts the value in only for a host the secret is bound to and scrubs it
//   from the answer, as for the http_request tool;
// - HTTPS is a CONNECT tunnel to an allowed address; the proxy cannot see inside it, so it puts no
//   secret into HTTPS (no certificate is minted): for a secret over HTTPS, the intern uses
//   http_request, which makes the request itself.
// A command that ignores the proxy settings reaches nothing: there is no other way out.

export interface EgressProxyOptions {
  /** Directory of the proxies' sockets (short: a Unix socket path holds at most 107 bytes). */
  dir: string
  allowPrivateNetworks: boolean
  hosts?: Record<string, string>
  timeoutMs: number
  /** Largest request body the proxy takes. */
  maxRequestBytes: number
  /** With the vault: requests with secret placeholders go through it. Without, they are refused. */
  egress?: SecretEgress
  /** Timeouts and the connection ceiling of each intern's proxy (the host's listener settings). */
  limits?: ListenerSettings
  /** The user sandboxed commands run as (a root host): each socket is given to it, the directory opened for passing. */
  socketOwner?: { uid: number; gid: number }
}

const HOP_BY_HOP = new Set([
  'connection',
  'proxy-connection',
  'proxy-authorization',
  'keep-alive',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
])

/**
 * What a proxy lets through beyond the egress rules (a gateway sandbox's `network_policy`): these
 * hosts only (`*` any run of characters; an exact name not its subdomains), on these ports, and no
 * secrets (a gateway sandbox is no intern's).
 */
export interface ProxyPolicy {
  allowedHosts: readonly string[]
  ports: readonly number[]
}

/** Whether a host matches a pattern of the policy's (`*` any run of characters, nothing else special). */
export function hostAllowed(host: string, patterns: readonly string[]): boolean {
  const name = host.toLowerCase().replace(/\.$/, '')
  const literal = (part: string) => part.replace(/[.+?^$(){}|[\]\\]/g, '\\$&')
  return patterns.some((p) => new RegExp('^' + p.split('*').map(literal).join('.*') + '$').test(name))
}

export class EgressProxies {
  private readonly sockets = new Map<string, Promise<{ path: string; server: Server; tunnels: Set<Socket> }>>()
  private readonly policies = new Map<string, ProxyPolicy>()
  private readonly agent: Agent
  private readonly lookup: ReturnType<typeof guardedLookup>

  constructor(private readonly options: EgressProxyOptions) {
    this.lookup = guardedLookup(options)
    this.agent = new Agent({ connect: { timeout: options.timeoutMs, lookup: this.lookup } })
  }

  /** The socket of `internId`'s proxy (or a gateway sandbox's, with its policy), started at its first network command. */
  async socketFor(internId: string, policy?: ProxyPolicy): Promise<string> {
    if (policy) this.policies.set(internId, policy)
    let started = this.sockets.get(internId)
    if (!started) {
      started = this.start(internId)
      this.sockets.set(internId, started)
      started.catch(() => this.sockets.delete(internId))
    }
    return (await started).path
  }

  /** Stops `internId`'s proxy (it is suspended or removed). */
  async close(internId: string) {
    const started = this.sockets.get(internId)
    this.sockets.delete(internId)
    this.policies.delete(internId)
    const proxy = await started?.catch(() => undefined)
    if (!proxy) return
    // Tunnels left the HTTP server's keeping when they were established: ended here, or close would wait on them.
    for (const socket of proxy.tunnels) socket.destroy()
    proxy.server.closeAllConnections()
    await new Promise((r) => proxy.server.close(r))
    await rm(proxy.path, { force: true })
  }

  async closeAll() {
    await Promise.all([...this.sockets.keys()].map((id) => this.close(id)))
    await this.agent.close()
  }

  private async start(internId: string) {
    await mkdir(this.options.dir, { recursive: true, mode: 0o700 })
    const path = join(this.options.dir, `${internId}.sock`)
    await rm(path, { force: true })
    const tunnels = new Set<Socket>()
    const limits = this.options.limits
    const server = createServer(
      limits ? httpServerOptions(limits) : {},
      (req, res) => void this.forward(internId, req, res).catch(() => res.destroy()),
    )
    server.on('connect', (req: IncomingMessage, socket: Socket, head: Buffer) => {
      tunnels.add(socket)
      socket.once('close', () => tunnels.delete(socket))
      this.tunnel(internId, req, socket, head)
    })
    server.on('clientError', (_err, socket) => socket.destroy())
    if (limits) limitHttpServer(server, limits)
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(path, () => resolve()))
    const owner = this.options.socketOwner
    if (owner) {
      // bwrap, running as the sandbox user, must reach the socket to mount it; only that user may connect.
      await chmod(this.options.dir, 0o711)
      await chown(path, owner.uid, owner.gid)
      await chmod(path, 0o600)
    }
    return { path, server, tunnels }
  }

  /** Plain HTTP: forwarded byte for byte, or through the egress when it carries a secret placeholder. */
  private async forward(internId: string, req: IncomingMessage, res: ServerResponse) {
    let url: URL
    try {
      url = new URL(req.url ?? '')
      if (url.protocol !== 'http:') throw new Error()
    } catch {
      return refuse(res, 400, "this is the intern's egress proxy: send absolute http:// URLs, or CONNECT for https")
    }
    const refused =
      refusedLiteral(url.hostname, this.options) ?? this.outsidePolicy(internId, url.hostname, url.port || '80')
    if (refused) return refuse(res, 403, refused)
    const body = await readBody(req, this.options.maxRequestBytes)
    if (!body) return refuse(res, 413, `the request body is larger than ${this.options.maxRequestBytes} bytes`)
    const headers: Record<string, string> = {}
    for (const [k, v] of Object.entries(req.headers))
      if (!HOP_BY_HOP.has(k) && v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v
    const method = req.method ?? 'GET'
    const text = body.toString('utf8')
    const placeholder = (t: string) => new RegExp(SECRET_PLACEHOLDER.source).test(t)
    if (placeholder(text) || Object.values(headers).some(placeholder)) {
      if (!this.options.egress || this.policies.has(internId))
        return refuse(res, 502, 'secrets are not available here (no vault on this host, or no intern of this sandbox)')
      // Asked uncompressed, so what comes back can be scrubbed of any value that was put in.
      const out = await this.options.egress.send(internId, {
        method,
        url: url.href,
        headers: { ...headers, 'accept-encoding': 'identity' },
        body: body.length ? text : undefined,
      })
      if ('error' in out) return refuse(res, 502, out.error)
      const back: Record<string, string> = Object.fromEntries(
        Object.entries(out.headers).filter(
          ([k]) => !HOP_BY_HOP.has(k) && k !== 'content-length' && k !== 'content-encoding',
        ),
      )
      res.writeHead(out.status, back).end(out.body)
      return
    }
    try {
      const upstream = await request(url, {
        method: method as 'GET',
        headers,
        body: body.length ? body : undefined,
        dispatcher: this.agent,
        signal: AbortSignal.timeout(this.options.timeoutMs),
        headersTimeout: this.options.timeoutMs,
        bodyTimeout: this.options.timeoutMs,
      })
      const back: Record<string, string | string[]> = {}
      for (const [k, v] of Object.entries(upstream.headers)) if (!HOP_BY_HOP.has(k) && v !== undefined) back[k] = v
      res.writeHead(upstream.statusCode, back)
      for await (const chunk of upstream.body) if (!res.write(chunk)) await new Promise((r) => res.once('drain', r))
      res.end()
    } catch (err) {
      if (!res.headersSent) refuse(res, 502, `request failed: ${(err as Error).message}`)
      else res.destroy()
    }
  }

  /** HTTPS (and any CONNECT): a tunnel to an allowed address, never looked into. */
  /** Why a policy's sandbox may not reach host:port (undefined: it may, or the proxy has no policy). */
  private outsidePolicy(id: string, host: string, port: string): string | undefined {
    const policy = this.policies.get(id)
    if (!policy) return undefined
    const name = host.replace(/^\[|\]$/g, '')
    if (!hostAllowed(name, policy.allowedHosts)) return `${name} is not among the hosts this sandbox may reach`
    if (!policy.ports.includes(Number(port)))
      return `port ${port} is not one this sandbox may reach (${policy.ports.join(', ')})`
    return undefined
  }

  private tunnel(id: string, req: IncomingMessage, client: Socket, head: Buffer) {
    const match = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(req.url ?? '')
    const fail = (status: string, why: string) =>
      client.end(`HTTP/1.1 ${status}\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n${why}\n`)
    if (!match) return fail('400 Bad Request', 'CONNECT needs host:port')
    const host = match[1]!.replace(/^\[|\]$/g, '')
    const refused = refusedLiteral(host, this.options) ?? this.outsidePolicy(id, host, match[2]!)
    if (refused) return fail('403 Forbidden', refused)
    const upstream = connect({ host, port: Number(match[2]), lookup: this.lookup, timeout: this.options.timeoutMs })
    let connected = false
    upstream.once('connect', () => {
      connected = true
      upstream.setTimeout(0)
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n')
      if (head.length) upstream.write(head)
      upstream.pipe(client).pipe(upstream)
    })
    upstream.once('timeout', () => upstream.destroy(new Error('connection timed out')))
    upstream.once('error', (err) => (connected ? client.destroy() : fail('502 Bad Gateway', err.message)))
    client.once('error', () => upstream.destroy())
    client.once('close', () => upstream.destroy())
  }
}

function refuse(res: ServerResponse, status: number, why: string) {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'x-roster-egress': 'refused' }).end(`${why}\n`)
}

/** The whole body, or undefined past `max` bytes. */
async function readBody(req: IncomingMessage, max: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req) {
    size += (chunk as Buffer).length
    if (size > max) return undefined
    chunks.push(chunk as Buffer)
  }
  return Buffer.concat(chunks)
}
