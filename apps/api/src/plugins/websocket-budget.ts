import type { WebSocket } from 'ws'
import type { ApiConfig, Metrics } from '@roster/shared'
import type { Refusal } from './fair-use.js'

type Limits = Pick<
  ApiConfig,
  | 'WS_CONNECTIONS_PER_KEY'
  | 'WS_CONNECTIONS'
  | 'WS_WAITING_MESSAGES'
  | 'WS_WAITING_BYTES'
  | 'WS_IDLE_TIMEOUT_MS'
  | 'WS_PING_MS'
>

/**
 * What the WebSocket transport of /responses may hold in one API process: connections per key and
 * in all, and the bytes of requests waiting their turn in all connections (each may be 20 MiB, so
 * without a ceiling a few connections with queues of large messages ran the heap out). Every
 * connection is pinged every WS_PING_MS and ended when it has answered none of the last two pings and
 * sent nothing since (one could be unread only because this process was busy), and one with nothing running or waiting is
 * closed after WS_IDLE_TIMEOUT_MS.
 */
export class WebSocketBudget {
  private readonly perKey = new Map<string, number>()
  /** Each open connection, with the pings it has left unanswered in a row. */
  private readonly alive = new Map<WebSocket, number>()
  private waitingBytes = 0
  private readonly pinger: NodeJS.Timeout

  constructor(
    readonly limits: Limits,
    private readonly metrics?: Metrics,
  ) {
    this.pinger = setInterval(() => this.ping(), limits.WS_PING_MS).unref()
  }

  /** Whether `keyId` may open another connection (checked before the upgrade, so a refusal is an HTTP 429/503). */
  refusal(keyId: string): Refusal | undefined {
    if (this.alive.size >= this.limits.WS_CONNECTIONS) {
      this.metrics?.fairUseRefusals.inc({ limit: 'ws_connections' })
      return {
        status: 503,
        message: `this server holds as many WebSocket connections as it can (WS_CONNECTIONS: ${this.limits.WS_CONNECTIONS}); retry shortly or use POST /responses`,
      }
    }
    if ((this.perKey.get(keyId) ?? 0) >= this.limits.WS_CONNECTIONS_PER_KEY) {
      this.metrics?.fairUseRefusals.inc({ limit: 'ws_connections_per_key' })
      return {
        status: 429,
        message: `this key already holds ${this.limits.WS_CONNECTIONS_PER_KEY} WebSocket connections on this server (WS_CONNECTIONS_PER_KEY); close one, or send more requests on each`,
      }
    }
    return undefined
  }

  /** Counts an open connection of `keyId` until it closes; pinged from now on. */
  opened(socket: WebSocket, keyId: string): void {
    this.perKey.set(keyId, (this.perKey.get(keyId) ?? 0) + 1)
    this.alive.set(socket, 0)
    this.metrics?.webSockets.set(this.alive.size)
    // A message is as good an answer as a pong: a pong sent behind megabytes of requests arrives late.
    const answered = () => this.alive.has(socket) && this.alive.set(socket, 0)
    socket.on('pong', answered)
    socket.on('message', answered)
    socket.once('close', () => {
      this.alive.delete(socket)
      const n = (this.perKey.get(keyId) ?? 1) - 1
      if (n <= 0) this.perKey.delete(keyId)
      else this.perKey.set(keyId, n)
      this.metrics?.webSockets.set(this.alive.size)
    })
  }

  /** Holds `bytes` of a waiting request: its release, or undefined when the process holds all it may. */
  hold(bytes: number): (() => void) | undefined {
    if (this.waitingBytes + bytes > this.limits.WS_WAITING_BYTES) {
      this.metrics?.fairUseRefusals.inc({ limit: 'ws_waiting' })
      return undefined
    }
    this.waitingBytes += bytes
    this.metrics?.webSocketWaitingBytes.set(this.waitingBytes)
    let released = false
    return () => {
      if (released) return
      released = true
      this.waitingBytes -= bytes
      this.metrics?.webSocketWaitingBytes.set(this.waitingBytes)
    }
  }

  /** Bytes held now, in all connections. */
  get waiting(): number {
    return this.waitingBytes
  }

  /** Ends each connection that answered neither of the last two pings, and pings the rest. */
  private ping() {
    for (const [socket, unanswered] of this.alive) {
      if (unanswered >= 2) {
        socket.terminate()
        continue
      }
      this.alive.set(socket, unanswered + 1)
      socket.ping()
    }
  }

  close() {
    clearInterval(this.pinger)
  }
}
