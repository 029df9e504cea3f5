import type { FastifyPluginAsync, FastifyRequest } from 'fastify'
import type { WebSocket } from 'ws'
import sjson from 'secure-json-parse'
import { Cancellation, GatewayError, describeIssues, parseResponsesRequest, type StreamSink } from '@roster/gateway'
import { gatewayErrorBody, webSocketErrorEvent } from '@roster/shared'
import { requireKey } from '../plugins/auth.js'
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../plugins/input-guards.js'
import type { AppDeps } from '../deps.js'
import { callOptions, ownKeys } from './gateway-run.js'
import { refusalError } from '../plugins/fair-use.js'
import { callerOf } from '../plugins/caller.js'

/** How the engine writes the event that ends a response which completed. */
const COMPLETED = '{"type":"response.completed"'

/** Bytes queued on a socket past which the engine waits before reading more from the provider. */
const HIGH_WATER = 1 << 20

/**
 * The WebSocket transport of /responses (Open Responses' `x-openresponses-websocket`): one
 * connection, many requests. Each `response.create` message is answered with the same events, in
 * the same order, as the SSE stream of the same request (each event one text message, no `[DONE]`);
 * requests on one connection are answered one after the other. Nothing is stored, but the
 * connection holds its latest completed response (ContinuationHeld): a request whose
 * `previous_response_id` names it continues it with only its new input, as OpenAI's WebSocket mode
 * serves `store: false` responses. Any other `previous_response_id` (an older response, another
 * connection's, one that failed) is answered with the schema's error event and code
 * `previous_response_not_found` (what clients recover from by sending the whole history), and the
 * connection stays usable, as after any refused request. A request that fails evicts what was held.
 * A client that closes the connection cancels the request in progress and frees what it held.
 */
export const responsesWebSocketRoutes =
  (deps: AppDeps): FastifyPluginAsync =>
  async (app) => {
    const budget = deps.webSockets
    const { WS_WAITING_MESSAGES: maxWaiting, WS_IDLE_TIMEOUT_MS: idleMs } = budget.limits
    app.route({
      method: 'GET',
      url: '/responses',
      // Refused before the upgrade, as HTTP: no key, or the key (or the process) at its connections.
      onRequest: [
        requireKey(deps.authenticate, { inference: true }),
        (req, _reply, done) => {
          const refusal = budget.refusal(callerOf(req).keyId)
          done(refusal && refusalError(refusal))
        },
      ],
      schema: { hide: true },
      // A GET that does not ask for the upgrade is told what this path takes.
      handler: (_req, reply) =>
        reply
          .code(426)
          .header('upgrade', 'websocket')
          .send(
            gatewayErrorBody(
              'invalid_request',
              'GET /responses is the WebSocket transport: upgrade the connection, or POST /responses',
              426,
            ),
          ),
      wsHandler: (socket, req) => {
        budget.opened(socket, callerOf(req).keyId)
        let queue: Promise<void> = Promise.resolve()
        const cancel = new Cancellation()
        let waiting = 0
        // Closed when nothing has run or waited for WS_IDLE_TIMEOUT_MS.
        let idle: NodeJS.Timeout | undefined
        const rest = () => {
          clearTimeout(idle)
          idle = waiting === 0 ? setTimeout(() => socket.close(1000, 'idle'), idleMs).unref() : undefined
        }
        const held = new ContinuationHeld(budget)
        socket.on('close', () => {
          clearTimeout(idle)
          cancel.cancel()
          held.evict()
        })
        rest()
        socket.on('message', (data: Buffer, isBinary) => {
          // Requests wait their turn, but not without end: each may hold a body of up to 20 MiB, so
          // both the requests one connection may queue and the bytes all connections hold are bounded.
          if (waiting > maxWaiting)
            return sendError(
              socket,
              429,
              'rate_limit_exceeded',
              `${maxWaiting} requests are already waiting on this connection (WS_WAITING_MESSAGES); send the next when one is answered`,
            )
          const release = budget.hold(data.length)
          if (!release)
            return sendError(
              socket,
              503,
              'server',
              'this server holds as many waiting WebSocket requests as it can (WS_WAITING_BYTES); send it again when one is answered',
            )
          waiting++
          clearTimeout(idle)
          queue = queue
            .then(() =>
              cancel.aborted ? undefined : answer(deps, req, socket, isBinary ? undefined : data, cancel, held),
            )
            .catch((err) => req.log.error({ err }, 'responses websocket request failed'))
            .finally(() => {
              release()
              waiting--
              rest()
            })
        })
      },
    })
  }

/** A request's failure, as the schema's WebSocketErrorEvent. */
function sendError(socket: WebSocket, status: number, code: string, message: string, param: string | null = null) {
  if (socket.readyState !== socket.OPEN) return
  socket.send(JSON.stringify(webSocketErrorEvent(status, code, message, param)))
}

async function answer(
  deps: AppDeps,
  req: FastifyRequest,
  socket: WebSocket,
  data: Buffer | undefined,
  connection: Cancellation,
  held: ContinuationHeld,
) {
  if (data === undefined) return sendError(socket, 400, 'invalid_request', 'messages are JSON text frames')
  let message: Record<string, unknown>
  try {
    message = sjson.parse(data.toString(), undefined, { protoAction: 'error', constructorAction: 'error' }) as Record<
      string,
      unknown
    >
  } catch (err) {
    return sendError(socket, 400, 'invalid_request', `the message is not valid JSON: ${(err as Error).message}`)
  }
  if (typeof message !== 'object' || message === null || Array.isArray(message))
    return sendError(socket, 400, 'invalid_request', 'a message is a JSON object')
  if (nestsDeeperThan(message, MAX_JSON_DEPTH))
    return sendError(socket, 400, 'invalid_request', `the message nests deeper than ${MAX_JSON_DEPTH} levels`)
  if (message.type !== 'response.create')
    return sendError(
      socket,
      400,
      'invalid_request',
      `unknown client event type ${JSON.stringify(message.type)}: send response.create`,
      'type',
    )
  for (const field of ['stream', 'stream_options', 'background'] as const) {
    if (field in message)
      return sendError(
        socket,
        400,
        'invalid_request',
        `${field} is an HTTP field and must not be sent over WebSocket`,
        field,
      )
  }
  const { type: _type, previous_response_id: previous, ...body } = message
  let earlier: unknown[] = []
  let earlierBytes = 0
  if (previous !== undefined && previous !== null) {
    if (typeof previous !== 'string')
      return sendError(
        socket,
        400,
        'invalid_request',
        'previous_response_id is a string or null',
        'previous_response_id',
      )
    const items = held.itemsOf(previous)
    if (!items)
      return sendError(
        socket,
        404,
        'previous_response_not_found',
        `responses are not stored: a connection continues only the last response it completed${held.id ? ` (${held.id})` : ''}; send the whole conversation in input`,
        'previous_response_id',
      )
    earlier = items
    earlierBytes = held.bytes
  }
  const given = body.input
  // An input of another type goes to the request's check as it came, and is refused there.
  const continued = earlier.length > 0 && (given === undefined || typeof given === 'string' || Array.isArray(given))
  const input = continued
    ? [
        ...earlier,
        ...(typeof given === 'string' ? [{ role: 'user', content: given }] : Array.isArray(given) ? given : []),
      ]
    : given
  const parsed = parseResponsesRequest({ ...body, ...(input !== undefined ? { input } : {}), stream: true })
  if (!parsed.success)
    return sendError(socket, 400, 'invalid_request', `invalid request: ${describeIssues(parsed.error)}`)

  // A request on a WebSocket holds its key's share as one over HTTP does.
  const entered = deps.admission.enter(callerOf(req), data.length)
  if (typeof entered !== 'function')
    return sendError(socket, entered.status, entered.status === 429 ? 'rate_limit_exceeded' : 'server', entered.message)
  // The connection's cancellation ends the upstream call when the client goes away (its listener
  // is removed when the call ends, so one serves every request on the connection).
  try {
    const opts = callOptions(deps, req, connection, 'responses_ws')
    const byok = ownKeys(deps, req)
    if (byok) opts.byok = await byok
    // What the request's own input was (a preset's may add to it): the conversation a continuation goes on from.
    held.evict()
    const sink = webSocketSink(socket, (completed) =>
      held.keep(completed, parsed.data.input, earlierBytes + data.length),
    )
    await deps.responses.stream(parsed.data, opts, sink)
  } catch (err) {
    held.evict()
    if (connection.aborted) return
    if (err instanceof GatewayError) return sendError(socket, err.status, err.errorType, err.message)
    req.log.error({ err }, 'responses websocket request failed')
    sendError(socket, 500, 'server', 'the request failed; it may be sent again')
  } finally {
    entered()
  }
}

/**
 * The engine's SSE output as WebSocket messages: each event's `data:` JSON one message; the
 * `[DONE]` marker and comment lines (keepalives) have no WebSocket counterpart.
 */
function webSocketSink(socket: WebSocket, onCompleted: (response: string) => void): StreamSink {
  return {
    open() {},
    write(chunk) {
      if (socket.readyState !== socket.OPEN) return true
      let at = 0
      while (at < chunk.length) {
        const end = chunk.indexOf('\n\n', at)
        const frame = chunk.slice(at, end < 0 ? chunk.length : end)
        at = end < 0 ? chunk.length : end + 2
        const data = frame.indexOf('data: ')
        if (frame.startsWith(':') || data < 0) continue
        const json = frame.slice(data + 6)
        if (json === '[DONE]') continue
        if (json.startsWith(COMPLETED)) onCompleted(json)
        socket.send(json)
      }
      return socket.bufferedAmount < HIGH_WATER
    },
    cork() {},
    uncork() {},
    async drain() {
      while (socket.readyState === socket.OPEN && socket.bufferedAmount >= HIGH_WATER)
        await new Promise((r) => setTimeout(r, 5))
    },
    end() {},
  }
}

/**
 * The latest response a connection completed, as the conversation a request may continue by its
 * id (`previous_response_id`): the request's input, then the response's output as input items. It
 * lives as long as the connection and counts against the bytes all connections may hold
 * (WS_WAITING_BYTES); one that does not fit is not held, and its continuation is refused as not found.
 */
class ContinuationHeld {
  private held?: { id: string; items: unknown[]; bytes: number; release: () => void }

  constructor(private readonly budget: { hold(bytes: number): (() => void) | undefined }) {}

  get id(): string | undefined {
    return this.held?.id
  }

  /** About how many bytes of JSON what is held came as. */
  get bytes(): number {
    return this.held?.bytes ?? 0
  }

  itemsOf(id: string): unknown[] | undefined {
    return this.held?.id === id ? this.held.items : undefined
  }

  /** Holds a completed response (the `response.completed` event's JSON) and the input that made it (`inputBytes` as sent). */
  keep(completedEvent: string, input: unknown, inputBytes: number) {
    this.evict()
    const bytes = inputBytes + completedEvent.length
    const release = this.budget.hold(bytes)
    if (!release) return
    const { response } = JSON.parse(completedEvent) as { response: { id: string; output: unknown[] } }
    const asked = typeof input === 'string' ? [{ role: 'user', content: input }] : Array.isArray(input) ? input : []
    this.held = { id: response.id, items: [...asked, ...response.output], bytes, release }
  }

  evict() {
    this.held?.release()
    this.held = undefined
  }
}
