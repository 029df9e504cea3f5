import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { timingSafeEqual } from 'node:crypto'
import { defaultSettings, requestSettings, type SimSettings } from './settings.js'
import { answerOllama, type OllamaModel } from './ollama.js'
import { plan, scriptedFault } from './plan.js'
import { StreamWriter } from './writer.js'
import { obj, type Json } from './json-view.js'
import { BY_PATH } from './protocols/index.js'
import { replay, sendCut } from './replay.js'
import { IMAGES_PATH, imagesAnswer } from './protocols/images.js'
import { chatError } from './protocols/chat-completions.js'

export interface Simulator {
  url: string
  server: Server
  /** Requests seen per path, and the last body per path (for tests of what a gateway sent). */
  stats: {
    requests: Record<string, number>
    lastBody: Record<string, unknown>
    lastHeaders: Record<string, IncomingMessage['headers']>
    /** Requests whose caller went away before the answer ended (a gateway should cancel them). */
    cancelled: number
    /** The credential each request carried (bearer or x-api-key; '' for none), in the order they came. */
    credentials: string[]
  }
  /** The server's settings, read by every request: a test may change them (a slower model, say). */
  settings: SimSettings
  /**
   * A reply given whole as bytes (a test's provider traffic, generated from a protocol's grammar):
   * answers the model name it returns (or `name`, replacing what it answered), for every request, cut
   * anywhere by `seed`.
   */
  script(reply: ScriptedReply, name?: `script/${string}`): string
  close(): Promise<void>
}

/** Bytes a scripted model answers with: a stream (`text/event-stream`) or a whole reply. */
export interface ScriptedReply {
  bytes: Buffer
  stream: boolean
  status?: number
  seed?: number
}

/**
 * The upstream simulator: a real HTTP server speaking OpenAI Chat Completions, OpenAI Responses and
 * Anthropic Messages, streamed or not. Deterministic replies; latency, pace, reply length, tool
 * calls, usage and faults come from the settings, or per request from `x-sim-*` headers.
 */
export async function startSimulator(
  options: Partial<SimSettings> & {
    port?: number
    host?: string
    /** Stand in for an Ollama server with these models pulled (its /api/tags and /api/show). */
    ollama?: OllamaModel[]
  } = {},
): Promise<Simulator> {
  const base: SimSettings = { ...defaultSettings, ...options }
  const seenPrompts = new Set<string>()
  const scriptedFailures = new Map<string, number>()
  const stats: Simulator['stats'] = { requests: {}, lastBody: {}, lastHeaders: {}, cancelled: 0, credentials: [] }
  const scripts = new Map<string, ScriptedReply>()

  const server = createServer((req, res) => {
    void handle(req, res).catch(() => {
      if (!res.headersSent) json(res, 500, { error: { message: 'simulator failure', type: 'server_error' } })
      else res.destroy()
    })
  })

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const path = (req.url ?? '/').split('?')[0]!
    if (req.method === 'GET' && (path === '/health' || path === '/v1/models')) {
      return json(
        res,
        200,
        path === '/health' ? { status: 'ok' } : { object: 'list', data: [{ id: 'sim', object: 'model' }] },
      )
    }
    if (await answerOllama(req, res, path, options.ollama, () => readBody(req))) return
    if (req.method === 'POST' && path === IMAGES_PATH) return answerImages(req, res, path)
    const protocol = BY_PATH.get(path)
    if (req.method !== 'POST' || !protocol)
      return json(res, 404, { error: { message: `no route ${req.method} ${path}`, type: 'not_found' } })
    const settings = requestSettings(base, req.headers)
    stats.requests[path] = (stats.requests[path] ?? 0) + 1
    stats.lastHeaders[path] = req.headers
    if (stats.credentials.length < 10_000) stats.credentials.push(credentialOf(req))
    res.on('close', () => {
      if (!res.writableFinished && settings.fault !== 'cut') stats.cancelled++
    })

    if (settings.apiKey && !authorised(req, settings.apiKey))
      return json(res, 401, protocol.error(401, 'invalid api key'))
    let body: Json
    try {
      body = obj(JSON.parse(await readBody(req)))
    } catch {
      return json(res, 400, protocol.error(400, 'body is not JSON'))
    }
    stats.lastBody[path] = body
    if (settings.latencyMs > 0) await new Promise((r) => setTimeout(r, settings.latencyMs))
    // A recording of real provider traffic, replayed as it was sent (replay.ts).
    if (typeof body.model === 'string' && body.model.startsWith('replay/'))
      return replay(res, path, body.model, body.stream === true, settings.cutSeed)
    const scripted = typeof body.model === 'string' ? scripts.get(body.model) : undefined
    if (scripted)
      return sendCut(res, scripted.bytes, scripted.status ?? 200, scripted.stream, scripted.seed ?? settings.cutSeed)

    const refused = protocol.refuse?.(body)
    if (refused) return json(res, 400, protocol.error(400, refused))
    const ask = protocol.ask(body)
    const fault = settings.fault === 'none' ? (scriptedFault(ask, scriptedFailures) ?? 'none') : settings.fault
    switch (fault) {
      case 'timeout':
        return // never answers; the caller's timeout decides
      case '429':
        res.setHeader('retry-after', '2')
        return json(res, 429, protocol.error(429, 'rate limited by the simulator'))
      case '500':
      case '503':
        return json(res, Number(fault), protocol.error(Number(fault), 'simulated upstream failure'))
      case 'garbled':
        // The provider answered, then its body broke off.
        res.writeHead(200, { 'content-type': 'application/json' })
        return res.end('{"id":"garbled-')
    }
    const answer = plan(ask, settings, seenPrompts)
    if (body.stream === true) {
      const out = new StreamWriter(res, settings, Math.max(1, Math.floor(answer.text.length / 2)))
      return protocol.stream(answer, out, body, settings)
    }
    return json(res, 200, protocol.reply(answer, settings))
  }

  /** OpenAI's Images API (protocols/images.ts), with the settings' key and faults as any protocol has them. */
  async function answerImages(req: IncomingMessage, res: ServerResponse, path: string) {
    const settings = requestSettings(base, req.headers)
    stats.requests[path] = (stats.requests[path] ?? 0) + 1
    stats.lastHeaders[path] = req.headers
    if (stats.credentials.length < 10_000) stats.credentials.push(credentialOf(req))
    if (settings.apiKey && !authorised(req, settings.apiKey)) return json(res, 401, chatError(401, 'invalid api key'))
    let body: Json
    try {
      body = obj(JSON.parse(await readBody(req)))
    } catch {
      return json(res, 400, chatError(400, 'body is not JSON'))
    }
    stats.lastBody[path] = body
    if (settings.latencyMs > 0) await new Promise((r) => setTimeout(r, settings.latencyMs))
    if (settings.fault === '429' || settings.fault === '500' || settings.fault === '503')
      return json(res, Number(settings.fault), chatError(Number(settings.fault), 'simulated upstream failure'))
    if (settings.fault === 'timeout') return
    const answer = imagesAnswer(body)
    return json(res, answer.status, answer.body)
  }

  await new Promise<void>((resolve) => server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  return {
    url: `http://${options.host ?? '127.0.0.1'}:${port}`,
    server,
    stats,
    settings: base,
    script: (reply, name = `script/${scripts.size + 1}`) => {
      scripts.set(name, reply)
      return name
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

function authorised(req: IncomingMessage, key: string): boolean {
  const given = credentialOf(req)
  const a = Buffer.from(String(given))
  const b = Buffer.from(key)
  return a.length === b.length && timingSafeEqual(a, b)
}

function json(res: ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body)
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
  res.end(text)
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    req.on('error', reject)
  })
}

/** The credential a request carries: Anthropic's header, or the bearer token. */
function credentialOf(req: IncomingMessage): string {
  const key = req.headers['x-api-key']
  return (Array.isArray(key) ? key[0] : key) ?? /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? ''
}
