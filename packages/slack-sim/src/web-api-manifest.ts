import { randomBytes } from 'node:crypto'
import type { SimState } from './state.js'

/** tooling.tokens.rotate, apps.manifest.create and .delete: the App Manifest API, with a configuration token. */
export function manifestMethod(
  { sim, team, apps, revoked, configTokens, refreshTokens, issueConfigToken }: SimState,
  method: string,
  p: Record<string, string>,
  token: string | undefined,
): object {
  if (method === 'tooling.tokens.rotate') {
    if (!p.refresh_token || !refreshTokens.delete(p.refresh_token)) return { ok: false, error: 'invalid_refresh_token' }
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
