import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createHmac } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { startSlackSim, type SlackSim } from './server.js'

// The stand-in's controls for trying the flow by hand (npm run slack-sim): what it sends is signed
// as Slack signs it, and what was posted can be read back.
let sim: SlackSim
let receiver: Server
let receiverUrl: string
const received: { headers: Record<string, unknown>; body: string }[] = []

beforeAll(async () => {
  sim = await startSlackSim()
  receiver = createServer((req, res) => {
    let body = ''
    req.on('data', (c) => (body += c))
    req.on('end', () => {
      received.push({ headers: req.headers, body })
      res.end()
    })
  })
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r))
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/events`
})
afterAll(async () => {
  await sim?.close()
  receiver?.close()
})

const control = async (path: string, body: object) =>
  (await (await fetch(`${sim.url}${path}`, { method: 'POST', body: JSON.stringify(body) })).json()) as Record<
    string,
    unknown
  >

describe('the Slack stand-in, by hand', () => {
  it('says something as a person would, signed with the app’s signing secret', async () => {
    const app = sim.addApp()
    const said = await control('/sim/say', { events_url: receiverUrl, text: 'hello', client_id: app.clientId })
    expect(said).toMatchObject({ ok: true, status: 200, channel: 'C0LOCAL' })
    const { headers, body } = received.at(-1)!
    const ts = String(headers['x-slack-request-timestamp'])
    expect(headers['x-slack-signature']).toBe(
      `v0=${createHmac('sha256', app.signingSecret).update(`v0:${ts}:${body}`).digest('hex')}`,
    )
    const event = JSON.parse(body) as { type: string; event: Record<string, unknown> }
    expect(event.type).toBe('event_callback')
    expect(event.event).toMatchObject({ type: 'app_mention', text: 'hello', user: 'U0LOCAL', ts: said.ts })
    // A direct message is a message event in an im channel.
    await control('/sim/say', { events_url: receiverUrl, text: 'psst', channel: 'D0ME' })
    expect(JSON.parse(received.at(-1)!.body).event).toMatchObject({
      type: 'message',
      channel_type: 'im',
      channel: 'D0ME',
    })
  })

  it('refuses a say without where or what, and lists what was posted', async () => {
    expect(await control('/sim/say', { text: 'x' })).toMatchObject({ ok: false })
    expect(await control('/sim/messages', {})).toEqual({ messages: [], ephemerals: [] })
  })

  it('answers a body that is not a JSON object as Slack does (invalid_json, HTTP 200), to its controls and its Web API', async () => {
    for (const body of ['{bad', '[1]', 'null'])
      for (const [path, headers] of [
        ['/sim/say', {}],
        ['/api/chat.postMessage', { 'content-type': 'application/json' }],
      ] as const) {
        const res = await fetch(`${sim.url}${path}`, { method: 'POST', headers, body })
        expect([res.status, await res.json()], `${path} ${body}`).toEqual([200, { ok: false, error: 'invalid_json' }])
      }
  })
})
