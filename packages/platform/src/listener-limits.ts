import { readFileSync } from 'node:fs'
import { STATUS_CODES, type IncomingMessage, type Server, type ServerOptions, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { errorBody, type ListenerSettings } from '@roster/protocol'

// Every listener a client can reach (the API, the runtime host, the metrics and health ports, the
// egress proxies) holds a client to the same limits: the headers and the whole request must arrive in
// time, a body that stops arriving is cut, an idle keep-alive connection is closed, and connections
// past a ceiling are refused at once instead of running the process out of file descriptors.

/** How often Node checks connections against the header and request timeouts (its default, 30 s, would let a stall live that long past them). */
const CHECK_EVERY_MS = 1_000

/** The options of Fastify (and of node:http's createServer, under `http`) that enforce the settings. */
export function fastifyListenerOptions(s: ListenerSettings): {
  requestTimeout: number
  keepAliveTimeout: number
  http: ServerOptions
} {
  return {
    requestTimeout: s.REQUEST_TIMEOUT_MS,
    keepAliveTimeout: s.KEEP_ALIVE_TIMEOUT_MS,
    http: {
      headersTimeout: Math.min(s.HEADERS_TIMEOUT_MS, s.REQUEST_TIMEOUT_MS),
      connectionsCheckingInterval: CHECK_EVERY_MS,
    },
  }
}

/**
 * The options of node:http's createServer that enforce the settings (how often the timeouts are
 * checked can be set only there), for a plain server; give it its ceiling with `limitHttpServer`.
 */
export function httpServerOptions(s: ListenerSettings): ServerOptions {
  return {
    ...fastifyListenerOptions(s).http,
    requestTimeout: s.REQUEST_TIMEOUT_MS,
    keepAliveTimeout: s.KEEP_ALIVE_TIMEOUT_MS,
  }
}

/** A plain node:http server's connection ceiling (its timeouts come with `httpServerOptions`). */
export function limitHttpServer(
  server: Server,
  s: ListenerSettings,
  onCut?: (reason: 'max_connections') => void,
): Server {
  guardConnections(server, maxConnections(s), onCut)
  return server
}

/**
 * The connection ceiling, kept so that a flood of connections that send nothing cannot lock out the
 * clients that do: at the ceiling, a new connection takes the place of the connection that has been
 * idle longest (connected and sent nothing, or kept alive between requests), which is closed; only
 * when every connection is busy with a request is the newcomer closed instead. The silent ones go at
 * HEADERS_TIMEOUT_MS anyway; until then they are the first to make room. WebSocket connections
 * (upgraded) and requests in flight are never taken for idle.
 */
export function guardConnections(
  server: Server,
  max: number,
  onCut: (reason: 'max_connections') => void = () => {},
): void {
  /** Idle connections, the longest idle first (a Map keeps insertion order; a use moves one to the end). */
  const idle = new Map<Socket, true>()
  let open = 0
  server.on('connection', (socket: Socket) => {
    open++
    socket.once('close', () => {
      open--
      idle.delete(socket)
    })
    if (open > max) {
      const oldest = idle.keys().next().value
      onCut('max_connections')
      if (oldest === undefined) return void socket.destroy()
      idle.delete(oldest)
      oldest.destroy()
    }
    idle.set(socket, true)
  })
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket
    idle.delete(socket)
    res.once('finish', () => {
      if (!socket.destroyed) idle.set(socket, true)
    })
  })
  server.on('upgrade', (req: IncomingMessage) => idle.delete(req.socket))
  // A proxy's tunnels (CONNECT) likewise; a server with no 'connect' listener refuses CONNECT, and must go on doing so.
  if (server.listenerCount('connect') > 0) server.on('connect', (req: IncomingMessage) => idle.delete(req.socket))
}

/** Files a process keeps for itself beyond its clients' connections: database and Redis pools, logs, upstream pools, sandboxes. */
const RESERVED_DESCRIPTORS = 1_024

/**
 * The connection ceiling: the setting, or three quarters of what the file-descriptor limit leaves
 * once the process's own files are reserved (the ceiling must bite before EMFILE does: past the
 * limit the process cannot open its database connections either).
 */
export function maxConnections(s: Pick<ListenerSettings, 'MAX_CONNECTIONS'>, descriptors = openFilesLimit()): number {
  if (s.MAX_CONNECTIONS > 0) return s.MAX_CONNECTIONS
  return Math.max(64, Math.floor((descriptors - RESERVED_DESCRIPTORS) * 0.75))
}

/** The soft limit on open files (Linux: /proc/self/limits); where it cannot be read, the common 1,024. */
export function openFilesLimit(): number {
  try {
    const line = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1]
    return line === 'unlimited' ? 1_048_576 : Number(line ?? 1_024)
  } catch {
    return 1_024
  }
}

/**
 * A whole HTTP response with a JSON error body, for what a listener refuses before any route (a
 * request that is not HTTP, or too slow): written to the socket, which then closes.
 */
export function rawErrorResponse(status: number, body: unknown): string {
  const text = JSON.stringify(body)
  return `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`
}

/** What a listener answers a request it cuts for taking too long (it never reached a route). */
export const REQUEST_TIMEOUT_RESPONSE = rawErrorResponse(
  408,
  errorBody('timeout', 'the request did not arrive in time'),
)

/**
 * Cuts a request whose body stops arriving for `idleMs`, whatever REQUEST_TIMEOUT_MS still allows:
 * a client that sent its headers and part of a body, then nothing, held a connection (and the body
 * read so far) for good. The socket's idle timer runs only until the body has arrived, so a stream
 * answered slowly afterwards is not cut. A body already whole costs nothing.
 */
export function cutStalledBody(req: IncomingMessage, idleMs: number, onCut: () => void): void {
  if (req.complete || (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined))
    return
  const socket = req.socket
  // An injected request (light-my-request, in tests) has no real socket to time.
  if (typeof socket?.setTimeout !== 'function') return
  // The http server tells the request first when its socket times out: handled here, it does not destroy the socket itself.
  const stalled = () => {
    onCut()
    if (socket.writable) socket.end(REQUEST_TIMEOUT_RESPONSE)
    socket.destroySoon()
  }
  socket.setTimeout(idleMs)
  req.once('timeout', stalled)
  req.once('end', () => {
    socket.setTimeout(0)
    req.off('timeout', stalled)
  })
}
