import type { ServerResponse } from 'node:http'
import { eventCallback } from './signing.js'
import { json } from './respond.js'
import type { SimState } from './state.js'

/** The stand-in's own controls, for a person trying Roster's Slack flow by hand (docs/slack.md). */
export async function control(
  { sim, apps, team, nextTs }: SimState,
  path: string,
  body: Record<string, unknown>,
  res: ServerResponse,
) {
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
    // A reply in a channel's thread that does not mention the app comes as the channel's message.
    const unmentioned = !dm && body.mention === false
    const event = {
      type: dm || unmentioned ? 'message' : 'app_mention',
      ...(dm ? { channel_type: 'im' } : unmentioned ? { channel_type: 'channel' } : {}),
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
    if (!message || !url) return json(res, { ok: false, error: 'interactivity_url and the ts of a card are required' })
    const sent = await sim.click(url, app.signingSecret, str('user') ?? 'U0LOCAL', message, Number(body.button ?? 0))
    return json(res, { ok: sent.ok, status: sent.status })
  }
  res.writeHead(404).end()
}
