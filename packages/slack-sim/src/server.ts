import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { randomBytes } from 'node:crypto'
import type { AddressInfo } from 'node:net'

// A stand-in for Slack, shaped as Slack documents it (docs.slack.dev), for Roster's tests and for
// trying the Slack flow locally: the OAuth v2 authorize page (approving or declining, as set) and
// the Web API methods Roster calls, answering as Slack does (HTTP 200 with `ok: false` and an
// `error` code for a refusal). It records every call. Not Slack: where the two differ, Slack wins.

/** An app registered with the stand-in (as a team makes one at api.slack.com/apps). */
export interface SlackSimApp {
  clientId: string
  clientSecret: string
  appId: string
}

export interface SlackSimCall {
  method: string
  params: Record<string, string>
}

export interface SlackSim {
  url: string
  /** The Web API's base URL (`SLACK_API_URL`). */
  apiUrl: string
  /** The authorize page (`SLACK_AUTHORIZE_URL`). */
  authorizeUrl: string
  /** The workspace installs land in. */
  team: { id: string; name: string }
  /** Registers an app (a team-made one): its credentials. */
  addApp(): SlackSimApp
  /** What the authorize page does: approve (redirects with a code) or deny (`error=access_denied`). */
  decision: 'approve' | 'deny'
  /** Every Web API call, in order (secrets included: the stand-in is the other side). */
  calls: SlackSimCall[]
  /** Bot tokens issued, by app id. */
  tokens: Map<string, string>
  close(): Promise<void>
}

const id = (prefix: string) => `${prefix}${randomBytes(5).toString('hex').toUpperCase()}`

export async function startSlackSim(opts: { port?: number } = {}): Promise<SlackSim> {
  const apps = new Map<string, SlackSimApp>()
  /** Authorization codes not yet exchanged: single use, bound to the app and redirect URL. */
  const codes = new Map<string, { clientId: string; redirectUri: string; user: string }>()
  const team = { id: id('T'), name: 'Roster Test Workspace' }

  const sim: SlackSim = {
    url: '',
    apiUrl: '',
    authorizeUrl: '',
    team,
    decision: 'approve',
    calls: [],
    tokens: new Map(),
    addApp() {
      const app = {
        clientId: `${Date.now()}.${Math.floor(Math.random() * 1e10)}`,
        clientSecret: randomBytes(16).toString('hex'),
        appId: id('A'),
      }
      apps.set(app.clientId, app)
      return app
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }

  const json = (res: ServerResponse, body: object) => {
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' })
    res.end(JSON.stringify(body))
  }

  /** oauth.v2.access: the app's credentials (in the body, or HTTP Basic) and a code, once. */
  function oauthAccess(p: Record<string, string>, authorization: string | undefined) {
    let clientId = p.client_id
    let secret = p.client_secret
    if (authorization?.startsWith('Basic ')) {
      const [user, pass] = Buffer.from(authorization.slice(6), 'base64').toString().split(':')
      clientId = user ?? clientId
      secret = pass ?? secret
    }
    const app = clientId ? apps.get(clientId) : undefined
    if (!app) return { ok: false, error: 'invalid_client_id' }
    if (secret !== app.clientSecret) return { ok: false, error: 'bad_client_secret' }
    const code = p.code ? codes.get(p.code) : undefined
    if (!code || code.clientId !== clientId) return { ok: false, error: 'invalid_code' }
    codes.delete(p.code!)
    if (p.redirect_uri !== undefined && p.redirect_uri !== code.redirectUri)
      return { ok: false, error: 'bad_redirect_uri' }
    const token = `xoxb-${randomBytes(12).toString('hex')}`
    sim.tokens.set(app.appId, token)
    return {
      ok: true,
      access_token: token,
      token_type: 'bot',
      scope: 'app_mentions:read,chat:write',
      bot_user_id: id('U'),
      app_id: app.appId,
      team,
      enterprise: null,
      is_enterprise_install: false,
      authed_user: { id: code.user },
    }
  }

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', sim.url)
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
      const chunks: Buffer[] = []
      for await (const c of req) chunks.push(c as Buffer)
      const raw = Buffer.concat(chunks).toString('utf8')
      const params = (req.headers['content-type'] ?? '').includes('json')
        ? (JSON.parse(raw || '{}') as Record<string, string>)
        : Object.fromEntries(new URLSearchParams(raw))
      sim.calls.push({ method, params })
      if (method === 'oauth.v2.access') return json(res, oauthAccess(params, req.headers.authorization))
      return json(res, { ok: false, error: 'unknown_method' })
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
