import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { createHmac, randomBytes } from 'node:crypto'
import type { AddressInfo } from 'node:net'

// A stand-in for Slack, shaped as Slack documents it (docs.slack.dev), for Roster's tests and for
// trying the Slack flow locally: the OAuth v2 authorize page (approving or declining, as set) and
// the Web API methods Roster calls, answering as Slack does (HTTP 200 with `ok: false` and an
// `error` code for a refusal). It records every call. Not Slack: where the two differ, Slack wins.

/** An app registered with the stand-in (as a team makes one at api.slack.com/apps). */
export interface SlackSimApp {
  clientId: string
  clientSecret: string
  /** What Slack signs the app's events and clicks with (Roster is given it with the app). */
  signingSecret: string
  appId: string
}

export interface SlackSimCall {
  method: string
  params: Record<string, string>
}

/** A message the bot posted, as it reads now, with every text it had before (its updates). */
export interface SlackSimMessage {
  channel: string
  ts: string
  thread_ts?: string
  text: string
  history: string[]
  /** Its Block Kit blocks, as last posted or updated. */
  blocks?: Record<string, unknown>[]
  /** Its message metadata (event_type and event_payload), as posted. */
  metadata?: { event_type: string; event_payload: Record<string, unknown> }
}

/** An app made through the App Manifest API (apps.manifest.create), with the manifest it was made from. */
export interface SlackSimMintedApp extends SlackSimApp {
  manifest: Record<string, unknown>
  deleted: boolean
}

/**
 * A fault the next calls of a method get (those whose parameters contain `match`, if given): an
 * `ok: false` error, an HTTP status (429 with Retry-After), a slow answer (`delayMs`: the call
 * takes effect at once, its answer comes late, as when the caller dies waiting), or a slow take
 * (`holdMs`: the call takes effect only after that long, as when Slack is slow to take it).
 */
export interface SlackSimFault {
  method: string
  match?: string
  error?: string
  status?: number
  retryAfter?: number
  delayMs?: number
  holdMs?: number
  times: number
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
  /**
   * Issues an app configuration token and its refresh token, as a person does at api.slack.com/apps
   * ("Your App Configuration Tokens"); the token lasts `ttlSeconds` (Slack's: 12 hours).
   */
  issueConfigToken(ttlSeconds?: number): { token: string; refreshToken: string }
  /** Apps made with apps.manifest.create, by app id (deleted ones marked). */
  minted: Map<string, SlackSimMintedApp>
  /**
   * A file a person uploads, to share with a message (the event's `files`): Slack's file object,
   * its private download URL answering a bot token and a sign-in page to anything else.
   */
  addFile(name: string, content: Buffer | string, mimetype?: string): Record<string, unknown>
  /** Modals opened (views.open), in order, with the view as given. */
  views: { id: string; user?: string; view: Record<string, unknown> }[]
  /**
   * A person submitting an open modal (view_submission), signed, to `url`: `values` by block id
   * (a text, a number, or the chosen option's value). Slack's answer comes back as the response.
   */
  submitView(
    url: string,
    signingSecret: string,
    user: string,
    viewId: string,
    values: Record<string, string>,
  ): Promise<Response>
  /** Downloads of shared files, in order (with whether the token was good). */
  downloads: { fileId: string; authorized: boolean }[]
  /** What the authorize page does: approve (redirects with a code) or deny (`error=access_denied`). */
  decision: 'approve' | 'deny'
  /** Every Web API call, in order (secrets included: the stand-in is the other side). */
  calls: SlackSimCall[]
  /** Bot tokens issued, by app id. */
  tokens: Map<string, string>
  /** Messages posted, in order. */
  messages: SlackSimMessage[]
  /** Faults to inject (consumed as they fire). */
  faults: SlackSimFault[]
  /** Revokes a token, as an uninstall does: its calls answer invalid_auth. */
  revoke(token: string): void
  /** Whether a token was revoked (by auth.revoke or `revoke`). */
  isRevoked(token: string): boolean
  /** Told of every message posted or updated, as it happens (a benchmark times replies with it). */
  watchers: Set<(message: SlackSimMessage) => void>
  /** Messages only one user sees (chat.postEphemeral). */
  ephemerals: { channel: string; user: string; thread_ts?: string; text: string }[]
  /** A click on a button of a message's card, sent to `url` (form-encoded, signed) as Slack sends block_actions. */
  click(
    url: string,
    signingSecret: string,
    user: string,
    message: SlackSimMessage,
    buttonIndex: number,
  ): Promise<Response>
  /** Sends an Events API payload to `url`, signed with the app's signing secret, as Slack does. */
  sendEvent(url: string, signingSecret: string, payload: object, headers?: Record<string, string>): Promise<Response>
  close(): Promise<void>
}

/** A Events API event_callback envelope around `event`, as Slack sends one. */
export function eventCallback(
  teamId: string,
  event: Record<string, unknown>,
  eventId = `Ev${randomBytes(5).toString('hex').toUpperCase()}`,
) {
  return {
    token: 'deprecated-verification-token',
    team_id: teamId,
    api_app_id: 'A0',
    event: { event_ts: event.ts, ...event },
    type: 'event_callback',
    event_id: eventId,
    event_time: Math.floor(Date.now() / 1000),
  }
}

/** Slack's v0 signature headers over a body, as Slack signs what it sends. */
function signed(signingSecret: string, body: string) {
  const timestamp = String(Math.floor(Date.now() / 1000))
  const signature = `v0=${createHmac('sha256', signingSecret).update(`v0:${timestamp}:${body}`).digest('hex')}`
  return { 'x-slack-request-timestamp': timestamp, 'x-slack-signature': signature }
}

const id = (prefix: string) => `${prefix}${randomBytes(5).toString('hex').toUpperCase()}`

export async function startSlackSim(opts: { port?: number } = {}): Promise<SlackSim> {
  const apps = new Map<string, SlackSimApp>()
  /** Authorization codes not yet exchanged: single use, bound to the app and redirect URL. */
  const codes = new Map<string, { clientId: string; redirectUri: string; user: string }>()
  const team = { id: id('T'), name: 'Roster Test Workspace' }
  const revoked = new Set<string>()
  /** Triggers a click issued (good for 3 seconds, once), with who clicked. */
  const triggers = new Map<string, { user: string; at: number }>()
  const issueTrigger = (user: string) => {
    const trigger = `${Date.now()}.${randomBytes(6).toString('hex')}`
    triggers.set(trigger, { user, at: Date.now() })
    return trigger
  }
  /** Files people uploaded, by id. */
  const files = new Map<string, Buffer>()
  /** App configuration tokens (by token: when it expires) and the refresh tokens not yet spent. */
  const configTokens = new Map<string, number>()
  const refreshTokens = new Set<string>()
  const issueConfigToken = (ttlSeconds = 12 * 3600) => {
    const token = `xoxe.xoxp-1-${randomBytes(12).toString('hex')}`
    const refreshToken = `xoxe-1-${randomBytes(12).toString('hex')}`
    configTokens.set(token, Date.now() + ttlSeconds * 1000)
    refreshTokens.add(refreshToken)
    return { token, refreshToken, exp: Math.floor(Date.now() / 1000) + ttlSeconds }
  }
  let clock = 0
  /** Slack's message timestamps: seconds and a unique suffix. */
  const nextTs = () => `${Math.floor(Date.now() / 1000)}.${String(++clock).padStart(6, '0')}`

  const sim: SlackSim = {
    url: '',
    apiUrl: '',
    authorizeUrl: '',
    team,
    decision: 'approve',
    calls: [],
    tokens: new Map(),
    messages: [],
    watchers: new Set(),
    ephemerals: [],
    faults: [],
    minted: new Map(),
    downloads: [],
    views: [],
    async submitView(url, signingSecret, user, viewId, values) {
      const opened = sim.views.find((v) => v.id === viewId)
      if (!opened) throw new Error(`no view ${viewId} was opened`)
      const blocks = (opened.view.blocks ?? []) as {
        block_id?: string
        element?: { type: string; action_id: string }
      }[]
      const state: Record<string, Record<string, unknown>> = {}
      for (const b of blocks) {
        if (!b.block_id || !b.element) continue
        const given = values[b.block_id]
        state[b.block_id] = {
          [b.element.action_id]:
            b.element.type === 'static_select'
              ? { type: 'static_select', selected_option: given === undefined ? null : { value: given } }
              : { type: b.element.type, value: given ?? null },
        }
      }
      const payload = {
        type: 'view_submission',
        team: { id: team.id },
        user: { id: user, team_id: team.id },
        api_app_id: 'A0',
        trigger_id: `${Date.now()}.${randomBytes(4).toString('hex')}`,
        view: { ...opened.view, id: viewId, state: { values: state }, hash: randomBytes(6).toString('hex') },
      }
      const body = new URLSearchParams({ payload: JSON.stringify(payload) }).toString()
      return fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...signed(signingSecret, body) },
        body,
      })
    },
    addFile(name, content, mimetype = 'text/plain') {
      const fileId = id('F')
      const bytes = Buffer.from(content)
      files.set(fileId, bytes)
      const url = `${sim.url}/files-pri/${team.id}-${fileId}/${encodeURIComponent(name)}`
      return {
        id: fileId,
        name,
        title: name,
        mimetype,
        filetype: 'text',
        size: bytes.length,
        mode: 'hosted',
        is_external: false,
        url_private: url,
        url_private_download: `${sim.url}/files-pri/${team.id}-${fileId}/download/${encodeURIComponent(name)}`,
      }
    },
    issueConfigToken: (ttlSeconds) => {
      const { token, refreshToken } = issueConfigToken(ttlSeconds)
      return { token, refreshToken }
    },
    revoke: (token) => void revoked.add(token),
    isRevoked: (token) => revoked.has(token),
    async click(url, signingSecret, user, message, buttonIndex) {
      const actions = (message.blocks ?? []).find((b) => b.type === 'actions') as
        { block_id?: string; elements: { action_id: string; value: string; text: unknown }[] } | undefined
      const button = actions?.elements[buttonIndex]
      if (!button) throw new Error(`the message has no button ${buttonIndex}`)
      const payload = {
        type: 'block_actions',
        user: { id: user, username: user.toLowerCase(), team_id: team.id },
        api_app_id: 'A0',
        team,
        container: { type: 'message', message_ts: message.ts, channel_id: message.channel, is_ephemeral: false },
        trigger_id: issueTrigger(user),
        channel: { id: message.channel },
        message: { type: 'message', ts: message.ts, text: message.text, blocks: message.blocks },
        response_url: `${sim.url}/actions/${message.ts}`,
        actions: [
          {
            type: 'button',
            block_id: actions!.block_id,
            action_id: button.action_id,
            text: button.text,
            value: button.value,
            action_ts: `${Date.now() / 1000}`,
          },
        ],
      }
      const body = new URLSearchParams({ payload: JSON.stringify(payload) }).toString()
      return fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...signed(signingSecret, body) },
        body,
      })
    },
    async sendEvent(url, signingSecret, payload, headers = {}) {
      const body = JSON.stringify(payload)
      return fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...signed(signingSecret, body), ...headers },
        body,
      })
    },
    addApp() {
      const app = {
        clientId: `${Date.now()}.${Math.floor(Math.random() * 1e10)}`,
        clientSecret: randomBytes(16).toString('hex'),
        signingSecret: randomBytes(16).toString('hex'),
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

  /** tooling.tokens.rotate, apps.manifest.create and .delete: the App Manifest API, with a configuration token. */
  function manifestMethod(method: string, p: Record<string, string>, token: string | undefined): object {
    if (method === 'tooling.tokens.rotate') {
      if (!p.refresh_token || !refreshTokens.delete(p.refresh_token))
        return { ok: false, error: 'invalid_refresh_token' }
      const fresh = issueConfigToken()
      return {
        ok: true,
        token: fresh.token,
        refresh_token: fresh.refreshToken,
        team_id: team.id,
        user_id: 'U0CONFIG',
        iat: fresh.exp - 12 * 3600,
        exp: fresh.exp,
      }
    }
    const expires = token ? configTokens.get(token) : undefined
    if (expires === undefined) return { ok: false, error: 'invalid_auth' }
    if (expires <= Date.now()) return { ok: false, error: 'token_expired' }
    if (method === 'apps.manifest.create') {
      let manifest: Record<string, unknown>
      try {
        manifest = JSON.parse(p.manifest ?? '') as Record<string, unknown>
      } catch {
        return { ok: false, error: 'invalid_manifest', errors: [{ message: 'not JSON', pointer: '/' }] }
      }
      const errors = manifestErrors(manifest)
      if (errors.length) return { ok: false, error: 'invalid_manifest', errors }
      const app = { ...sim.addApp(), manifest, deleted: false }
      sim.minted.set(app.appId, app)
      return {
        ok: true,
        app_id: app.appId,
        credentials: {
          client_id: app.clientId,
          client_secret: app.clientSecret,
          verification_token: randomBytes(12).toString('hex'),
          signing_secret: app.signingSecret,
        },
        oauth_authorize_url: `${sim.authorizeUrl}?client_id=${app.clientId}`,
      }
    }
    if (method === 'apps.manifest.delete') {
      const app = p.app_id ? sim.minted.get(p.app_id) : undefined
      if (!p.app_id) return { ok: false, error: 'invalid_app_id' }
      if (!app || app.deleted) return { ok: false, error: 'app_not_found' }
      app.deleted = true
      apps.delete(app.clientId)
      const botToken = sim.tokens.get(app.appId)
      if (botToken) revoked.add(botToken)
      return { ok: true }
    }
    return { ok: false, error: 'unknown_method' }
  }

  /** chat.postMessage, chat.update, assistant.threads.setStatus, auth.revoke: as Slack answers them. */
  function botMethod(method: string, p: Record<string, string>, token: string): object {
    if (method === 'chat.postMessage') {
      if (!p.channel) return { ok: false, error: 'channel_not_found' }
      if (!p.text && !p.blocks) return { ok: false, error: 'no_text' }
      const message: SlackSimMessage = {
        channel: p.channel,
        ts: nextTs(),
        ...(p.thread_ts ? { thread_ts: p.thread_ts } : {}),
        text: p.text ?? '',
        history: [],
        ...(p.blocks ? { blocks: JSON.parse(p.blocks) as Record<string, unknown>[] } : {}),
        ...(p.metadata ? { metadata: JSON.parse(p.metadata) as SlackSimMessage['metadata'] } : {}),
      }
      sim.messages.push(message)
      for (const w of sim.watchers) w(message)
      return {
        ok: true,
        channel: p.channel,
        ts: message.ts,
        message: { type: 'message', text: message.text, ts: message.ts },
      }
    }
    if (method === 'chat.update') {
      const message = sim.messages.find((m) => m.channel === p.channel && m.ts === p.ts)
      if (!message) return { ok: false, error: 'message_not_found' }
      message.history.push(message.text)
      message.text = p.text ?? ''
      if (p.blocks) message.blocks = JSON.parse(p.blocks) as Record<string, unknown>[]
      for (const w of sim.watchers) w(message)
      return { ok: true, channel: p.channel, ts: p.ts, text: message.text }
    }
    if (method === 'chat.postEphemeral') {
      if (!p.channel || !p.user) return { ok: false, error: 'channel_not_found' }
      sim.ephemerals.push({
        channel: p.channel,
        user: p.user,
        ...(p.thread_ts ? { thread_ts: p.thread_ts } : {}),
        text: p.text ?? '',
      })
      return { ok: true, message_ts: nextTs() }
    }
    if (method === 'conversations.replies') {
      // The thread's messages, oldest first (the bot's own, as this stand-in knows no others);
      // metadata only when asked for, as Slack does.
      if (!p.channel || !p.ts) return { ok: false, error: 'thread_not_found' }
      const withMeta = p.include_all_metadata === 'true' || (p.include_all_metadata as unknown) === true
      const messages = sim.messages
        .filter((m) => m.channel === p.channel && (m.thread_ts === p.ts || m.ts === p.ts))
        .map((m) => ({
          type: 'message',
          ts: m.ts,
          thread_ts: m.thread_ts,
          text: m.text,
          ...(withMeta && m.metadata ? { metadata: m.metadata } : {}),
        }))
      return { ok: true, messages, has_more: false }
    }
    if (method === 'views.open') {
      const trigger = p.trigger_id ? triggers.get(p.trigger_id) : undefined
      if (!trigger) return { ok: false, error: 'invalid_trigger_id' }
      triggers.delete(p.trigger_id!)
      if (Date.now() - trigger.at > 3_000) return { ok: false, error: 'expired_trigger_id' }
      let view: Record<string, unknown>
      try {
        view = JSON.parse(p.view ?? '') as Record<string, unknown>
      } catch {
        return { ok: false, error: 'invalid_arguments' }
      }
      if (view.type !== 'modal' || !Array.isArray(view.blocks)) return { ok: false, error: 'invalid_arguments' }
      const opened = { id: id('V'), user: trigger.user, view }
      sim.views.push(opened)
      return { ok: true, view: { id: opened.id, ...view } }
    }
    if (method === 'assistant.threads.setStatus') return { ok: true }
    if (method === 'auth.revoke') {
      revoked.add(token)
      return { ok: true, revoked: true }
    }
    return { ok: false, error: 'unknown_method' }
  }

  /** The stand-in's own controls, for a person trying Roster's Slack flow by hand (docs/slack.md). */
  async function control(path: string, body: Record<string, unknown>, res: ServerResponse) {
    const str = (k: string) => (typeof body[k] === 'string' ? (body[k] as string) : undefined)
    const app = [...apps.values()].find((a) => a.clientId === str('client_id')) ?? [...apps.values()][0]
    if (path === '/sim/messages') return json(res, { messages: sim.messages, ephemerals: sim.ephemerals })
    // An app configuration token, as a workspace admin generates one: its refresh token is what Roster's CLI stores.
    if (path === '/sim/config-token') return json(res, { ok: true, refresh_token: sim.issueConfigToken().refreshToken })
    if (!app) return json(res, { ok: false, error: 'no app registered' })
    if (path === '/sim/say') {
      const url = str('events_url')
      if (!url || !str('text')) return json(res, { ok: false, error: 'events_url and text are required' })
      const dm = str('channel')?.startsWith('D')
      const event = {
        type: dm ? 'message' : 'app_mention',
        ...(dm ? { channel_type: 'im' } : {}),
        user: str('user') ?? 'U0LOCAL',
        text: str('text'),
        ts: nextTs(),
        channel: str('channel') ?? 'C0LOCAL',
        ...(str('thread_ts') ? { thread_ts: str('thread_ts') } : {}),
      }
      const sent = await sim.sendEvent(url, app.signingSecret, eventCallback(team.id, event))
      return json(res, { ok: sent.ok, status: sent.status, ts: event.ts, channel: event.channel })
    }
    if (path === '/sim/click') {
      const message = sim.messages.find((m) => m.ts === str('ts'))
      const url = str('interactivity_url')
      if (!message || !url)
        return json(res, { ok: false, error: 'interactivity_url and the ts of a card are required' })
      const sent = await sim.click(url, app.signingSecret, str('user') ?? 'U0LOCAL', message, Number(body.button ?? 0))
      return json(res, { ok: sent.ok, status: sent.status })
    }
    res.writeHead(404).end()
  }

  /** A Web API call's answer, by the method and the token it came with. */
  async function answerFor(method: string, params: Record<string, string>, authorization: string | undefined) {
    if (method === 'oauth.v2.access') return oauthAccess(params, authorization)
    const token = (authorization ?? '').replace(/^Bearer /, '') || params.token
    if (method.startsWith('apps.manifest.') || method === 'tooling.tokens.rotate')
      return manifestMethod(method, params, token)
    // The bot's own methods: its token, as issued and not revoked.
    if (!token || ![...sim.tokens.values()].includes(token)) return { ok: false, error: 'not_authed' }
    if (revoked.has(token)) return { ok: false, error: 'invalid_auth' }
    return botMethod(method, params, token)
  }

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', sim.url)
    if (url.pathname.startsWith('/sim/')) {
      const chunks: Buffer[] = []
      for await (const c of req) chunks.push(c as Buffer)
      const raw = Buffer.concat(chunks).toString('utf8')
      return control(url.pathname, raw ? (JSON.parse(raw) as Record<string, unknown>) : {}, res)
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
      const chunks: Buffer[] = []
      for await (const c of req) chunks.push(c as Buffer)
      const raw = Buffer.concat(chunks).toString('utf8')
      const params = (req.headers['content-type'] ?? '').includes('json')
        ? (JSON.parse(raw || '{}') as Record<string, string>)
        : Object.fromEntries(new URLSearchParams(raw))
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

/** What apps.manifest.create would refuse in a manifest (the parts Roster sets; Slack checks more). */
function manifestErrors(m: Record<string, unknown>): { code: string; message: string; pointer: string }[] {
  const errors: { code: string; message: string; pointer: string }[] = []
  const at = (...path: string[]) =>
    path.reduce<unknown>((v, k) => (v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined), m)
  const name = at('display_information', 'name')
  if (typeof name !== 'string' || name.length < 1 || name.length > 35)
    errors.push({ code: 'invalid_value', message: 'must be 1 to 35 characters', pointer: '/display_information/name' })
  const bot = at('features', 'bot_user', 'display_name')
  if (typeof bot !== 'string' || bot.length < 1 || bot.length > 80)
    errors.push({
      code: 'invalid_value',
      message: 'a bot user needs a display name',
      pointer: '/features/bot_user/display_name',
    })
  const url = at('settings', 'event_subscriptions', 'request_url')
  if (typeof url !== 'string' || !/^https?:\/\//.test(url))
    errors.push({ code: 'invalid_url', message: 'must be a URL', pointer: '/settings/event_subscriptions/request_url' })
  const scopes = at('oauth_config', 'scopes', 'bot')
  if (!Array.isArray(scopes) || scopes.length === 0)
    errors.push({ code: 'invalid_value', message: 'a bot needs scopes', pointer: '/oauth_config/scopes/bot' })
  return errors
}
