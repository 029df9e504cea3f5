import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { randomBytes } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import { control } from './controls.js'
import { addApp, addFile, click, sendEvent, submitView } from './person.js'
import { json } from './respond.js'
import { id } from './signing.js'
import { newState, newTeam } from './state.js'
import type { SlackSim } from './types.js'
import { botMethod } from './web-api-bot.js'
import { manifestMethod } from './web-api-manifest.js'
import { oauthAccess } from './web-api-oauth.js'

export { eventCallback } from './signing.js'
export type * from './types.js'

// A stand-in for Slack, shaped as Slack documents it (docs.slack.dev), for Roster's tests and for
// trying the Slack flow locally: the OAuth v2 authorize page (approving or declining, as set) and
// the Web API methods Roster calls, answering as Slack does (HTTP 200 with `ok: false` and an
// `error` code for a refusal). It records every call. Not Slack: where the two differ, Slack wins.

export async function startSlackSim(opts: { port?: number } = {}): Promise<SlackSim> {
  const sim: SlackSim = {
    url: '',
    apiUrl: '',
    authorizeUrl: '',
    team: newTeam(),
    decision: 'approve',
    calls: [],
    tokens: new Map(),
    people: new Map(),
    messages: [],
    watchers: new Set(),
    ephemerals: [],
    faults: [],
    minted: new Map(),
    downloads: [],
    views: [],
    submitView: (...args) => submitView(state, ...args),
    addFile: (...args) => addFile(state, ...args),
    issueConfigToken: (ttlSeconds) => {
      const { token, refreshToken } = state.issueConfigToken(ttlSeconds)
      return { token, refreshToken }
    },
    revoke: (token) => void state.revoked.add(token),
    isRevoked: (token) => state.revoked.has(token),
    click: (...args) => click(state, ...args),
    sendEvent,
    addApp: () => addApp(state),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
  const state = newState(sim)
  const { apps, codes, files, revoked } = state

  /** A Web API call's answer, by the method and the token it came with. */
  async function answerFor(method: string, params: Record<string, string>, authorization: string | undefined) {
    if (method === 'oauth.v2.access') return oauthAccess(state, params, authorization)
    const token = (authorization ?? '').replace(/^Bearer /, '') || params.token
    if (method.startsWith('apps.manifest.') || method === 'tooling.tokens.rotate')
      return manifestMethod(state, method, params, token)
    // The bot's own methods: its token, as issued and not revoked.
    if (!token || ![...sim.tokens.values()].includes(token)) return { ok: false, error: 'not_authed' }
    if (revoked.has(token)) return { ok: false, error: 'invalid_auth' }
    return botMethod(state, method, params, token)
  }

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', sim.url)
    if (url.pathname.startsWith('/sim/')) {
      const raw = await textOf(req)
      const body = parsed<Record<string, unknown>>(raw || '{}')
      if (!body) return json(res, { ok: false, error: 'invalid_json' })
      return control(state, url.pathname, body, res)
    }
    const filePath = /^\/files-pri\/[A-Z0-9]+-(F[A-Z0-9]+)\//.exec(url.pathname)
    if (req.method === 'GET' && filePath) {
      // A bot token that is good reads the file; anything else gets Slack's sign-in page (HTTP 200).
      const token = (req.headers.authorization ?? '').replace(/^Bearer /, '')
      const authorized = [...sim.tokens.values()].includes(token) && !revoked.has(token)
      const bytes = files.get(filePath[1]!)
      sim.downloads.push({ fileId: filePath[1]!, authorized })
      if (!authorized || !bytes) {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        return res.end('<!DOCTYPE html><html><body>Sign in to Slack</body></html>')
      }
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': bytes.length })
      return res.end(bytes)
    }
    if (req.method === 'GET' && url.pathname === '/oauth/v2/authorize') {
      const q = Object.fromEntries(url.searchParams)
      const app = q.client_id ? apps.get(q.client_id) : undefined
      if (!app || !q.redirect_uri) {
        res.writeHead(400, { 'content-type': 'text/plain' })
        return res.end('invalid_client_id or missing redirect_uri')
      }
      const back = new URL(q.redirect_uri)
      if (sim.decision === 'deny') back.searchParams.set('error', 'access_denied')
      else {
        const code = `${Date.now()}.${randomBytes(8).toString('hex')}`
        codes.set(code, { clientId: app.clientId, redirectUri: q.redirect_uri, user: id('U') })
        back.searchParams.set('code', code)
      }
      if (q.state !== undefined) back.searchParams.set('state', q.state)
      res.writeHead(302, { location: back.toString() })
      return res.end()
    }
    if (req.method === 'POST' && url.pathname.startsWith('/api/')) {
      const method = url.pathname.slice(5)
      const raw = await textOf(req)
      const params = (req.headers['content-type'] ?? '').includes('json')
        ? parsed<Record<string, string>>(raw || '{}')
        : Object.fromEntries(new URLSearchParams(raw))
      // Slack's answer to a body that is not JSON (HTTP 200, as every refusal).
      if (!params) return json(res, { ok: false, error: 'invalid_json' })
      sim.calls.push({ method, params })
      const fault = sim.faults.find(
        (f) =>
          f.method === method &&
          f.times > 0 &&
          (f.match === undefined || Object.values(params).some((v) => String(v).includes(f.match!))),
      )
      if (fault?.holdMs !== undefined) {
        fault.times--
        await new Promise((r) => setTimeout(r, fault.holdMs))
        return json(res, await answerFor(method, params, req.headers.authorization))
      }
      if (fault?.drop) {
        // Taken, and the answer lost: the connection is cut before a byte of it.
        fault.times--
        await answerFor(method, params, req.headers.authorization)
        return req.socket.destroy()
      }
      if (fault?.delayMs !== undefined) {
        // A slow answer: the call takes effect now; its answer comes late (or to nobody).
        fault.times--
        const answer = await answerFor(method, params, req.headers.authorization)
        await new Promise((r) => setTimeout(r, fault.delayMs))
        return json(res, answer)
      }
      if (fault) {
        fault.times--
        if (fault.status) {
          res.writeHead(fault.status, {
            'content-type': 'application/json',
            ...(fault.retryAfter !== undefined ? { 'retry-after': String(fault.retryAfter) } : {}),
          })
          return res.end(JSON.stringify({ ok: false, error: fault.status === 429 ? 'ratelimited' : 'fatal_error' }))
        }
        return json(res, { ok: false, error: fault.error ?? 'fatal_error' })
      }
      return json(res, await answerFor(method, params, req.headers.authorization))
    }
    res.writeHead(404).end()
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      res.writeHead(500, { 'content-type': 'text/plain' })
      res.end(String(err))
    })
  })
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve))
  sim.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  sim.apiUrl = `${sim.url}/api/`
  sim.authorizeUrl = `${sim.url}/oauth/v2/authorize`
  return sim
}

/** A JSON object, or undefined for anything else (not JSON, or JSON that is not an object). */
function parsed<T extends object>(raw: string): T | undefined {
  try {
    const value: unknown = JSON.parse(raw)
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as T) : undefined
  } catch {
    return undefined
  }
}

/** A request's whole body, as text. */
async function textOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const c of req) chunks.push(c as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}
