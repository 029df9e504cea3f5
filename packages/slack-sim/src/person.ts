import { randomBytes } from 'node:crypto'
import { id, signed } from './signing.js'
import type { SimState } from './state.js'
import type { SlackSimApp, SlackSimFile, SlackSimMessage } from './types.js'

// What people do in the stand-in's workspace, sent to Roster as Slack sends it: a team registering an
// app, a file uploaded, an event, a click on a card's button, a modal submitted. Each is signed with
// the app's signing secret.

/** Registers an app (a team-made one): its credentials. */
export function addApp({ apps }: SimState): SlackSimApp {
  const app = {
    clientId: `${Date.now()}.${Math.floor(Math.random() * 1e10)}`,
    clientSecret: randomBytes(16).toString('hex'),
    signingSecret: randomBytes(16).toString('hex'),
    appId: id('A'),
  }
  apps.set(app.clientId, app)
  return app
}

/** A file uploaded: Slack's file object, its private URLs served by the stand-in. */
export function addFile(
  { sim, team, files }: SimState,
  name: string,
  content: Buffer | string,
  mimetype = 'text/plain',
): SlackSimFile {
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
}

/** An Events API payload, signed, as Slack sends one. */
export function sendEvent(
  url: string,
  signingSecret: string,
  payload: object,
  headers: Record<string, string> = {},
): Promise<Response> {
  const body = JSON.stringify(payload)
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...signed(signingSecret, body), ...headers },
    body,
  })
}

/** An interaction payload (block_actions, view_submission), form-encoded and signed, as Slack sends one. */
function sendInteraction(url: string, signingSecret: string, payload: object): Promise<Response> {
  const body = new URLSearchParams({ payload: JSON.stringify(payload) }).toString()
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...signed(signingSecret, body) },
    body,
  })
}

/** A click on a button of a message's card (block_actions), with a trigger good for views.open. */
export function click(
  { sim, team, issueTrigger }: SimState,
  url: string,
  signingSecret: string,
  user: string,
  message: SlackSimMessage,
  buttonIndex: number,
): Promise<Response> {
  const actions = (message.blocks ?? []).find((b) => b.type === 'actions') as
    { block_id?: string; elements: { action_id: string; value: string; text: unknown }[] } | undefined
  const button = actions?.elements[buttonIndex]
  if (!button) throw new Error(`the message has no button ${buttonIndex}`)
  return sendInteraction(url, signingSecret, {
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
  })
}

/** A person submitting an open modal (view_submission): `values` by block id. */
export function submitView(
  { sim, team }: SimState,
  url: string,
  signingSecret: string,
  user: string,
  viewId: string,
  values: Record<string, string>,
): Promise<Response> {
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
  return sendInteraction(url, signingSecret, {
    type: 'view_submission',
    team: { id: team.id },
    user: { id: user, team_id: team.id },
    api_app_id: 'A0',
    trigger_id: `${Date.now()}.${randomBytes(4).toString('hex')}`,
    view: { ...opened.view, id: viewId, state: { values: state }, hash: randomBytes(6).toString('hex') },
  })
}
