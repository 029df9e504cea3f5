import { randomBytes } from 'node:crypto'
import { id } from './signing.js'
import type { SimState } from './state.js'

/** oauth.v2.access: the app's credentials (in the body, or HTTP Basic) and a code, once. */
export function oauthAccess(
  { apps, codes, sim, team }: SimState,
  p: Record<string, string>,
  authorization: string | undefined,
) {
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
