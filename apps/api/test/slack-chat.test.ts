import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createServer, type Server } from 'node:http'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import { eventCallback, startSlackSim, type SlackSim } from '@roster/slack-sim'
import { simulatorCatalogue } from '@roster/gateway'
import {
  catalogueFile,
  lacking,
  redisProxy,
  redisUrl,
  startStack,
  STACK_MASTER_KEY,
  waitFor,
  type Stack,
  useTestTenant,
} from '@roster/testing'
import { slackAppsApi, storeSlackConfigToken } from '@roster/shared/slack'
import { installedSlackIntern, installThroughSlack, waitRunning } from './slack-helpers.js'

// Talking to an intern in Slack (issue 46), over the whole system as processes (API, worker,
// runtime host) and the Slack stand-in: an installed intern's event URL checks Slack's signature,
// answers Slack's URL check, turns a mention or a direct message into a turn (once, however often
// Slack delivers it), and its reply lands in the thread; a thread is one session.
const env = useTestTenant()
let sim: Simulator
let slack: SlackSim
let stack: Stack
let internId: string
let signingSecret: string
let eventsUrl: string
let botUserId: string
let mainAppId: string

const api = (path: string, init: RequestInit = {}) =>
  fetch(`${stack.apiUrl}${path}`, {
    ...init,
    redirect: 'manual',
    headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json', ...init.headers },
  })

// A service on the loopback that echoes the authorization it was sent (the worst a service can do
// with a secret), reached by the intern as api.bound.test.
let echo: Server
let echoPort = 0

beforeAll(async () => {
  echo = createServer((req, res) =>
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ echoed: req.headers.authorization ?? null })),
  )
  await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r))
  echoPort = (echo.address() as { port: number }).port
  sim = await startSimulator({ replyTokens: 3 })
  slack = await startSlackSim()
  stack = await startStack({
    databaseUrl: env.t.url,
    env: {
      MODEL_CATALOGUE: catalogueFile(simulatorCatalogue(sim.url)),
      INTERN_DEFAULT_MODEL: 'roster-sim/chat',
      SLACK_API_URL: slack.apiUrl,
      SLACK_AUTHORIZE_URL: slack.authorizeUrl,
      // A question nobody answers ends its run quickly (the expired card).
      INTERACTION_DEADLINE_MS: '3000',
      EGRESS_PRIVATE_NETWORKS: 'allow',
      EGRESS_HOSTS: 'api.bound.test=127.0.0.1',
    },
    // A killed worker's jobs come back quickly; a reply waiting for Slack is tried again quickly.
    workerEnv: { JOB_LOCK_MS: '2000', SLACK_BACKOFF_MS: '200', SLACK_FILE_MAX_MB: '1' },
  })
  const main = await installedSlackIntern(api, slack, 'slackbot')
  ;({ id: internId, appId: mainAppId, signingSecret, bot: botUserId } = main)
  eventsUrl = `${stack.apiUrl}/slack/events/${internId}`
  // Slack checks the event URL when the team saves its app (before any install too).
  const check = await slack.sendEvent(eventsUrl, signingSecret, { type: 'url_verification', challenge: 'c-123' })
  expect(check.status).toBe(200)
  expect(await check.json()).toEqual({ challenge: 'c-123' })
}, 90_000)
afterAll(async () => {
  await stack?.stop()
  await slack?.close()
  await sim?.close()
  await new Promise((r) => echo?.close(r))
})

// The allowed command runs in the intern's sandbox.
const noSandbox = await lacking(['bubblewrap'], 'the Slack permission test that runs a shell command')

let clock = 1_800_000_000
const nextTs = () => `${++clock}.000100`
const mention = (text: string, extra: Record<string, unknown> = {}) => ({
  type: 'app_mention',
  user: 'U0PERSON',
  text: `<@${botUserId}> ${text}`,
  ts: nextTs(),
  channel: 'C0GENERAL',
  ...extra,
})
/** The bot's messages in a thread, once `n` of them read `done`. */
const replies = (thread: string) => slack.messages.filter((m) => m.thread_ts === thread)
/** Every turn of the thread done, and a reply in it reading `text`. */
const answered = (thread: string, text: RegExp) =>
  waitFor(
    async () =>
      replies(thread).some((m) => text.test(m.text)) &&
      (await env.t.db.slackEvent.count({ where: { internId, threadTs: thread, state: { not: 'done' } } })) === 0,
    { timeoutMs: 20_000, what: `a reply in ${thread}` },
  )
/** A person's direct message to the intern, outside any thread. */
const dm = (channel: string, text: string) => ({
  type: 'message',
  channel_type: 'im',
  user: 'U0PERSON',
  text,
  ts: nextTs(),
  channel,
})
/** Every turn of a DM done, and a reply in the DM itself reading `text`. */
const answeredIn = (channel: string, text: RegExp) =>
  waitFor(
    async () =>
      slack.messages.some((m) => m.channel === channel && !m.thread_ts && text.test(m.text)) &&
      (await env.t.db.slackEvent.count({ where: { internId, channel, state: { not: 'done' } } })) === 0,
    { timeoutMs: 20_000, what: `a reply in ${channel}` },
  )
const eventsOf = () => env.t.db.slackEvent.count({ where: { internId } })
/** A mention sent, once its turn runs (the model made slow by the caller). */
async function runningTurn(text: string) {
  const event = mention(text)
  await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, event))
  await waitFor(
    async () => (await env.t.db.slackEvent.count({ where: { internId, threadTs: event.ts, state: 'running' } })) === 1,
    { timeoutMs: 10_000, what: 'the turn to run' },
  )
  return event
}

describe('an intern in Slack', () => {
  it('answers a mention in its thread, once however often Slack delivers the event', async () => {
    const event = mention('[sim] say Hello from Slack.')
    const payload = eventCallback(slack.team.id, event)
    const first = await slack.sendEvent(eventsUrl, signingSecret, payload)
    expect(first.status).toBe(200)
    // Slack's retries of the same event (X-Slack-Retry-Num) change nothing.
    for (const n of ['1', '2'])
      expect(
        (
          await slack.sendEvent(eventsUrl, signingSecret, payload, {
            'x-slack-retry-num': n,
            'x-slack-retry-reason': 'http_timeout',
          })
        ).status,
      ).toBe(200)
    await answered(event.ts, /^Hello from Slack\.$/)
    await waitFor(
      async () =>
        (await env.t.db.slackEvent.findFirst({ where: { internId, eventId: payload.event_id } }))?.state === 'done',
      {
        timeoutMs: 10_000,
        what: 'the turn to finish',
      },
    )
    expect(replies(event.ts)).toHaveLength(1)
    expect(await env.t.db.slackEvent.count({ where: { internId, eventId: payload.event_id } })).toBe(1)
    // The app is no Slack assistant app (its manifest enables no assistant view), so the assistant
    // thread status Slack allows only there is never set: the "…" placeholder shows it works.
    expect(slack.calls.some((c) => c.method === 'assistant.threads.setStatus')).toBe(false)
    // The thread is a session of its own, named by the Slack workspace, channel and thread.
    const session = `slack:${slack.team.id}:C0GENERAL:${event.ts}`
    expect(await env.t.db.sessionEntry.count({ where: { internId, sessionId: session } })).toBeGreaterThan(0)
  })

  it('keeps a thread one session over its turns, and answers direct messages', async () => {
    const opening = mention('[sim] say First.')
    await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, opening))
    await answered(opening.ts, /^First\.$/)
    const followUp = mention('[sim] say Second.', { thread_ts: opening.ts })
    await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, followUp))
    await answered(opening.ts, /^Second\.$/)
    const session = `slack:${slack.team.id}:C0GENERAL:${opening.ts}`
    const items = await env.t.db.sessionEntry.findMany({
      where: { internId, sessionId: session },
      orderBy: { seq: 'asc' },
    })
    const said = JSON.stringify(items.map((i) => i.item))
    expect(said).toContain('First.')
    expect(said).toContain('Second.')
  })

  it('keeps a direct-message conversation one conversation: replies in the DM itself, one session', async () => {
    const first = dm('D0DIRECT', '[sim] say In private.')
    await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, first))
    await answeredIn('D0DIRECT', /^In private\.$/)
    const second = dm('D0DIRECT', '[sim] say Still the same conversation.')
    await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, second))
    await answeredIn('D0DIRECT', /^Still the same conversation\.$/)
    // Each reply is a message of the DM, not a thread under the person's message.
    const posted = slack.messages.filter((m) => m.channel === 'D0DIRECT')
    expect(posted.map((m) => [m.text, m.thread_ts])).toEqual([
      ['In private.', undefined],
      ['Still the same conversation.', undefined],
    ])
    // Both turns are one session: the second remembers the first.
    const items = await env.t.db.sessionEntry.findMany({
      where: { internId, sessionId: `slack:${slack.team.id}:D0DIRECT` },
    })
    const said = JSON.stringify(items.map((i) => i.item))
    expect(said).toContain('In private.')
    expect(said).toContain('Still the same conversation.')
  })

  it('hears every reply in a thread it takes part in, mention or not, and nothing else of the channel', async () => {
    const opening = mention('[sim] say Joined.')
    await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, opening))
    await answered(opening.ts, /^Joined\.$/)
    const reply = (text: string, extra: Record<string, unknown> = {}) => ({
      type: 'message',
      channel_type: 'channel',
      user: 'U0OTHER',
      text,
      ts: nextTs(),
      channel: 'C0GENERAL',
      thread_ts: opening.ts,
      ...extra,
    })
    await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, reply('[sim] say Heard unmentioned.')))
    await answered(opening.ts, /^Heard unmentioned\.$/)
    // A reply that mentions it comes twice (the channel's message, and app_mention): one turn.
    const before = await eventsOf()
    const both = reply(`<@${botUserId}> [sim] say Once for both.`)
    await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, both))
    const { channel_type: _type, ...asMention } = both
    await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, { ...asMention, type: 'app_mention' }))
    await answered(opening.ts, /^Once for both\.$/)
    expect(replies(opening.ts).filter((m) => m.text === 'Once for both.')).toHaveLength(1)
    expect(await eventsOf()).toBe(before + 1)
    // A thread it is not in, public or private, and a channel's own messages: not for it.
    for (const other of [
      reply('[sim] say not mine', { thread_ts: nextTs() }),
      reply('[sim] say not mine either', { thread_ts: nextTs(), channel: 'G0PRIVATE', channel_type: 'group' }),
      reply('[sim] say chatter', { thread_ts: undefined }),
    ])
      expect((await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, other))).status).toBe(200)
    expect(await eventsOf()).toBe(before + 1)
    // In a private channel's thread it is in, the same.
    const inPrivate = mention('[sim] say Private joined.', { channel: 'G0PRIVATE' })
    await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, inPrivate))
    await answered(inPrivate.ts, /^Private joined\.$/)
    const privateReply = reply('[sim] say Private reply heard.', {
      channel: 'G0PRIVATE',
      channel_type: 'group',
      thread_ts: inPrivate.ts,
    })
    await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, privateReply))
    await answered(inPrivate.ts, /^Private reply heard\.$/)
  })

  it('answers a bare mention by asking what they need, and hears the reply that follows', async () => {
    const bare = { ...mention(''), text: `<@${botUserId}>` }
    await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, bare))
    await answered(bare.ts, /^Yes, <@U0PERSON>\? Tell me what you need in this thread/)
    const follow = {
      type: 'message',
      channel_type: 'channel',
      user: 'U0PERSON',
      text: '[sim] say Now I know.',
      ts: nextTs(),
      channel: 'C0GENERAL',
      thread_ts: bare.ts,
    }
    await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, follow))
    await answered(bare.ts, /^Now I know\.$/)
    expect(replies(bare.ts)).toHaveLength(2)
  })

  it('names who asked in the prompt by their Slack name (users.info), by id where Slack knows none', async () => {
    slack.people.set('U0ALICE', { name: 'alice', realName: 'Alice Liddell', displayName: 'Alice\nof Wonderland' })
    const named = mention('[sim] say Named.', { user: 'U0ALICE' })
    await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, named))
    await answered(named.ts, /^Named\.$/)
    const said = async (ts: string) =>
      JSON.stringify(
        (
          await env.t.db.sessionEntry.findMany({
            where: { internId, sessionId: `slack:${slack.team.id}:C0GENERAL:${ts}` },
          })
        ).map((i) => i.item),
      )
    // One line, whatever the name holds.
    expect(await said(named.ts)).toContain('Alice of Wonderland (<@U0ALICE>) says:')
    expect(slack.calls.some((c) => c.method === 'users.info' && c.params.user === 'U0ALICE')).toBe(true)
    const unknown = mention('[sim] say Unnamed.', { user: 'U0NOBODY' })
    await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, unknown))
    await answered(unknown.ts, /^Unnamed\.$/)
    expect(await said(unknown.ts)).toContain('<@U0NOBODY> says:')
  })

  it('posts a reply once when Slack took it but the connection dropped, in a thread and in a DM', async () => {
    const drop = { method: 'chat.postMessage', drop: true, times: 1 }
    slack.faults.push(drop)
    const event = mention('[sim] say Posted once though dropped.')
    await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, event))
    await answered(event.ts, /^Posted once though dropped\.$/)
    expect(drop.times).toBe(0)
    expect(replies(event.ts)).toHaveLength(1)
    // In a DM (no thread), the post is looked for in the conversation's history.
    const dmDrop = { method: 'chat.postMessage', drop: true, times: 1 }
    slack.faults.push(dmDrop)
    await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, dm('D0DROPPED', '[sim] say Once.')))
    await answeredIn('D0DROPPED', /^Once\.$/)
    expect(dmDrop.times).toBe(0)
    expect(slack.messages.filter((m) => m.channel === 'D0DROPPED')).toHaveLength(1)
    expect(slack.calls.some((c) => c.method === 'conversations.history' && c.params.channel === 'D0DROPPED')).toBe(true)
  })

  it('says an intern never provisioned has not been (not that it is suspended)', async () => {
    const app = slack.addApp()
    const secret = 'secret-never-provisioned'.padEnd(32, 'x')
    const created = await api('/interns', {
      method: 'POST',
      body: JSON.stringify({
        name: 'never-provisioned',
        provision: false,
        slack: { app: { client_id: app.clientId, client_secret: app.clientSecret, signing_secret: secret } },
      }),
    })
    expect(created.status).toBe(201)
    const id = ((await created.json()) as { id: string }).id
    await installThroughSlack(api, id)
    const bot = ((await (await api(`/interns/${id}/slack`)).json()) as { bot_user_id: string }).bot_user_id
    const event = { ...mention(''), text: `<@${bot}> [sim] say hello?` }
    await slack.sendEvent(`${stack.apiUrl}/slack/events/${id}`, secret, eventCallback(slack.team.id, event))
    await waitFor(() => replies(event.ts).some((m) => /not been provisioned yet/.test(m.text)), {
      timeoutMs: 20_000,
      what: 'the never-provisioned intern to say so',
    })
    expect(
      replies(event.ts)
        .map((m) => m.text)
        .join(),
    ).not.toMatch(/suspended/)
  })

  it('ignores bots, edits, channel chatter and other workspaces, and refuses what Slack did not sign', async () => {
    const before = await eventsOf()
    const ignored = [
      { ...mention('[sim] say no'), bot_id: 'B0OTHER' },
      { ...mention('[sim] say no'), subtype: 'message_changed' },
      {
        type: 'message',
        channel_type: 'channel',
        user: 'U0PERSON',
        text: 'chatter',
        ts: nextTs(),
        channel: 'C0GENERAL',
      },
      { ...mention('[sim] say no'), user: botUserId },
    ]
    for (const event of ignored)
      expect((await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, event))).status).toBe(200)
    expect((await slack.sendEvent(eventsUrl, signingSecret, eventCallback('T0ELSEWHERE', mention('x')))).status).toBe(
      200,
    )
    // Not signed by the app: a wrong secret, no signature, a stale timestamp.
    const payload = eventCallback(slack.team.id, mention('[sim] say forged'))
    expect((await slack.sendEvent(eventsUrl, 'not-the-secret-at-all', payload)).status).toBe(401)
    const unsigned = await fetch(eventsUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(payload),
    })
    expect(unsigned.status).toBe(401)
    const stale = await slack.sendEvent(eventsUrl, signingSecret, payload, {
      'x-slack-request-timestamp': String(Math.floor(Date.now() / 1000) - 600),
    })
    expect(stale.status).toBe(401)
    // Another intern's URL, an id that is none.
    expect((await slack.sendEvent(`${stack.apiUrl}/slack/events/not-an-id`, signingSecret, payload)).status).toBe(401)
    expect(await eventsOf()).toBe(before)
  })

  it("takes odd bytes in what a person says, and refuses ids that are not Slack's", async () => {
    const event = mention('odd \u0000 \ud800 bytes\n[sim] say Odd bytes taken.')
    expect((await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, event))).status).toBe(200)
    await answered(event.ts, /^Odd bytes taken\.$/)
    const row = await env.t.db.slackEvent.findFirstOrThrow({ where: { internId, threadTs: event.ts } })
    expect(row.text).toContain('odd \uFFFD \uFFFD bytes')
    const before = await eventsOf()
    const bad = await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, mention('x'), 'Ev\u0000x'))
    expect(bad.status).toBe(400)
    expect(await eventsOf()).toBe(before)
  })

  it('steers the running turn with a message in its thread', async () => {
    sim.settings.latencyMs = 2_000
    try {
      const opening = await runningTurn('[sim] say Slowly answered.')
      const steer = mention('and keep it short\n[sim] say Short.', { thread_ts: opening.ts })
      await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, steer))
      // The steer's own message says where it went; the answer (the model read the steer too) is the other.
      await answered(opening.ts, /added to the answer I am working on/)
      const texts = replies(opening.ts).map((m) => m.text)
      expect(texts).toHaveLength(2)
      expect(texts[0]).not.toMatch(/^…$|added to the answer/)
      const rows = await env.t.db.slackEvent.findMany({
        where: { internId, threadTs: opening.ts },
        orderBy: { createdAt: 'asc' },
      })
      expect(rows.map((r) => r.outcome)).toEqual(['answered', 'steered'])
    } finally {
      sim.settings.latencyMs = 0
    }
  })

  it.skipIf(noSandbox)(
    "lets the thread's starter decide a question someone else's message raised in it, and not that someone",
    async () => {
      // Alice starts the thread; Bob, no approver, asks in it for a command.
      const opening = mention('[sim] say Hello, Alice.')
      await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, opening))
      await answered(opening.ts, /Hello, Alice/)
      const bob = mention('run this\n[sim] call shell {"command":"echo bob-asked"}\n[sim] say Ran: {{result}}', {
        user: 'U0BOB',
        thread_ts: opening.ts,
      })
      await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, bob))
      await waitFor(() => replies(opening.ts).some((m) => m.blocks), { timeoutMs: 20_000, what: 'the question card' })
      const card = replies(opening.ts).find((m) => m.blocks)!
      const interactivity = `${stack.apiUrl}/slack/interactivity/${internId}`
      // Bob's own message raised it, but the thread is Alice's: Bob is told so, and nothing is decided.
      expect((await slack.click(interactivity, signingSecret, 'U0BOB', card, 0)).status).toBe(200)
      await waitFor(() => slack.ephemerals.some((e) => e.user === 'U0BOB'), { timeoutMs: 10_000, what: 'the refusal' })
      expect(slack.ephemerals.find((e) => e.user === 'U0BOB')!.text).toMatch(/Only <@U0PERSON>/)
      expect(await env.t.db.slackQuestion.findFirstOrThrow({ where: { internId, cardTs: card.ts } })).toMatchObject({
        state: 'pending',
        answeredBy: null,
      })
      // Alice decides it.
      expect((await slack.click(interactivity, signingSecret, 'U0PERSON', card, 0)).status).toBe(200)
      await answered(opening.ts, /^Ran: .*bob-asked/)
      expect(await env.t.db.slackQuestion.findFirstOrThrow({ where: { internId, cardTs: card.ts } })).toMatchObject({
        state: 'answered',
        answeredBy: 'U0PERSON',
      })
    },
  )

  it.skipIf(noSandbox)(
    'asks for permission with a card in the thread: a stranger is refused, the asker allows, the turn goes on',
    async () => {
      const event = mention('run it\n[sim] call shell {"command":"echo from-slack"}\n[sim] say It said: {{result}}')
      await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, event))
      await waitFor(() => replies(event.ts).some((m) => m.blocks), { timeoutMs: 20_000, what: 'the question card' })
      const card = replies(event.ts).find((m) => m.blocks)!
      expect(card.text).toMatch(/permission/)
      expect(JSON.stringify(card.blocks)).toContain('echo from-slack')
      const buttons = (card.blocks!.find((b) => b.type === 'actions') as { elements: { text: { text: string } }[] })
        .elements
      expect(buttons.map((b) => b.text.text)).toEqual(['Allow once', 'Allow always', 'Reject', 'Reject always'])
      const interactivity = `${stack.apiUrl}/slack/interactivity/${internId}`
      const asked = structuredClone(card)

      // Someone else: told so, only they see it; the card stays as it was.
      expect((await slack.click(interactivity, signingSecret, 'U0STRANGER', card, 0)).status).toBe(200)
      await waitFor(() => slack.ephemerals.some((e) => e.user === 'U0STRANGER'), {
        timeoutMs: 10_000,
        what: 'the refusal',
      })
      expect(slack.ephemerals.find((e) => e.user === 'U0STRANGER')!.text).toMatch(/Only <@U0PERSON>/)
      expect(card.blocks!.some((b) => b.type === 'actions')).toBe(true)
      // A click not signed by the app: refused.
      expect((await slack.click(interactivity, 'not-the-secret-at-all', 'U0PERSON', card, 0)).status).toBe(401)

      // The one who asked allows it: the card says who and when, and the turn goes on in the thread.
      expect((await slack.click(interactivity, signingSecret, 'U0PERSON', card, 0)).status).toBe(200)
      await answered(event.ts, /^It said: .*from-slack/)
      expect(card.blocks!.some((b) => b.type === 'actions')).toBe(false)
      expect(JSON.stringify(card.blocks)).toMatch(/Allow once\* by <@U0PERSON>/)
      const question = await env.t.db.slackQuestion.findFirstOrThrow({ where: { internId, cardTs: card.ts } })
      expect(question).toMatchObject({ state: 'answered', answer: 'allow_once', answeredBy: 'U0PERSON' })
      // A click on the card as it was (a stale view of it) changes nothing.
      const before = { replies: replies(event.ts).length, ephemerals: slack.ephemerals.length }
      expect((await slack.click(interactivity, signingSecret, 'U0PERSON', asked, 2)).status).toBe(200)
      await waitFor(async () => (await env.t.db.outboxMessage.count({ where: { kind: 'slack.click' } })) === 0, {
        timeoutMs: 10_000,
        what: 'the click to be handed to the worker',
      })
      expect(replies(event.ts).length).toBe(before.replies)
      expect(slack.ephemerals.length).toBe(before.ephemerals)
      expect(await env.t.db.slackQuestion.findFirstOrThrow({ where: { internId, cardTs: card.ts } })).toMatchObject({
        answer: 'allow_once',
      })
    },
  )

  it.skipIf(noSandbox)(
    'fetches the files shared with a message into the workspace with the bot token, and names the ones it could not',
    async () => {
      const notes = slack.addFile('notes.txt', 'quarterly numbers: 42\n')
      const big = slack.addFile('huge.bin', Buffer.alloc(2 * 1024 * 1024, 1), 'application/octet-stream')
      const foreign = { ...slack.addFile('elsewhere.txt', 'x'), url_private_download: 'https://files.example.com/x' }
      const ts = nextTs()
      const event = mention(`[sim] call read_file {"path":"slack-files/${ts}/notes.txt"}\n[sim] say Read: {{result}}`, {
        ts,
        files: [notes, big, foreign],
      })
      await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, event))
      await answered(event.ts, /quarterly numbers: 42/)
      // Fetched once with a good token; the large one (past SLACK_FILE_MAX_MB) not kept; the foreign link never sent the token.
      expect(slack.downloads.filter((d) => d.fileId === notes.id)).toEqual([{ fileId: notes.id, authorized: true }])
      expect(slack.downloads.some((d) => d.fileId === foreign.id)).toBe(false)
      const prompt = JSON.stringify(sim.stats.lastBody)
      expect(prompt).toContain(`/workspace/slack-files/${ts}/notes.txt (22 bytes)`)
      expect(prompt).toMatch(/huge\.bin: not fetched \(\d+ bytes, more than the 1 MiB allowed\)/)
      expect(prompt).toContain("elsewhere.txt: not fetched (its link is not Slack's (https://files.example.com))")
    },
  )

  it('takes a question’s answer through a form: opened for the asker only, checked, then sent to the run', async () => {
    const ask = {
      message: 'Which region, and how many?',
      fields: [
        { name: 'region', type: 'string', options: ['eu', 'us'] },
        { name: 'count', type: 'integer' },
        { name: 'note', type: 'string', required: false },
      ],
    }
    const event = mention(`[sim] call ask_user ${JSON.stringify(ask)}\n[sim] say Noted: {{result}}`)
    await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, event))
    await waitFor(() => replies(event.ts).some((m) => m.blocks), { timeoutMs: 20_000, what: 'the question card' })
    const card = replies(event.ts).find((m) => m.blocks)!
    const buttons = (card.blocks!.find((b) => b.type === 'actions') as { elements: { text: { text: string } }[] })
      .elements
    expect(buttons.map((b) => b.text.text)).toEqual(['Answer…', 'Decline', 'Cancel'])
    const interactivity = `${stack.apiUrl}/slack/interactivity/${internId}`
    const views = slack.views.length

    // A stranger's click opens nothing: they are told, only they see it.
    await slack.click(interactivity, signingSecret, 'U0STRANGER2', card, 0)
    await waitFor(() => slack.ephemerals.some((e) => e.user === 'U0STRANGER2'), {
      timeoutMs: 10_000,
      what: 'the refusal',
    })
    expect(slack.views).toHaveLength(views)

    // The asker's click opens the form (within Slack's 3 seconds of the click): a field per question field.
    expect((await slack.click(interactivity, signingSecret, 'U0PERSON', card, 0)).status).toBe(200)
    expect(slack.views).toHaveLength(views + 1)
    const form = slack.views.at(-1)!
    expect(form.user).toBe('U0PERSON')
    const inputs = (form.view.blocks as { type: string; element?: { type: string } }[]).filter(
      (b) => b.type === 'input',
    )
    expect(inputs.map((b) => b.element!.type)).toEqual(['static_select', 'number_input', 'plain_text_input'])

    // A value that does not fit is shown beside its field; nothing is sent.
    const bad = await slack.submitView(interactivity, signingSecret, 'U0PERSON', form.id, {
      field_0: 'eu',
      field_1: '2.5',
    })
    expect(await bad.json()).toEqual({ response_action: 'errors', errors: { field_1: 'A whole number, please.' } })
    expect(JSON.stringify(card.blocks)).toContain('Answer…')

    const good = await slack.submitView(interactivity, signingSecret, 'U0PERSON', form.id, {
      field_0: 'eu',
      field_1: '3',
    })
    expect(good.status).toBe(200)
    await answered(event.ts, /Noted: .*eu/)
    expect(JSON.stringify(card.blocks)).toContain('Answered (region: eu, count: 3)')
    expect(JSON.stringify(card.blocks)).toContain('<@U0PERSON>')
    const row = await env.t.db.slackQuestion.findFirstOrThrow({ where: { internId, cardTs: card.ts } })
    expect(row).toMatchObject({ state: 'answered', answeredBy: 'U0PERSON' })
    expect(JSON.parse(row.answer!)).toEqual({ action: 'accept', content: { region: 'eu', count: 3 } })
  })

  it('never posts a secret’s value in Slack: what the intern got back carries the placeholder', async () => {
    const value = `slack-secret-${Date.now()}`
    const put = await api('/vault/secrets/svc_token', {
      method: 'PUT',
      body: JSON.stringify({ value, hosts: ['api.bound.test'] }),
    })
    expect(put.status).toBe(200)
    const call = JSON.stringify({
      url: `http://api.bound.test:${echoPort}/v1/me`,
      headers: { authorization: 'Bearer {{secret:svc_token}}' },
    })
    const event = mention(`[sim] call http_request ${call}\n[sim] say It answered: {{result}}`)
    await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, event))
    // Manual mode may ask first: allow it, as the asker.
    await waitFor(() => replies(event.ts).some((m) => m.blocks || /It answered/.test(m.text)), {
      timeoutMs: 20_000,
      what: 'the card or the answer',
    })
    const card = replies(event.ts).find((m) => m.blocks)
    if (card) await slack.click(`${stack.apiUrl}/slack/interactivity/${internId}`, signingSecret, 'U0PERSON', card, 0)
    await answered(event.ts, /It answered/)
    const posted = JSON.stringify([...replies(event.ts), ...slack.calls.map((c) => c.params)])
    expect(posted).toContain('{{secret:svc_token}}')
    expect(posted).not.toContain(value)
  })

  it('marks a card nobody answered in time expired', async () => {
    const event = mention('run it\n[sim] call shell {"command":"echo late"}\n[sim] say never')
    await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, event))
    await waitFor(() => replies(event.ts).some((m) => m.blocks), { timeoutMs: 20_000, what: 'the question card' })
    const card = replies(event.ts).find((m) => m.blocks)!
    // A click whose user is no Slack id (odd bytes): refused, nothing queued.
    const odd = await slack.click(`${stack.apiUrl}/slack/interactivity/${internId}`, signingSecret, 'U\u0000X', card, 0)
    expect(odd.status).toBe(400)
    // Past the run's question deadline (INTERACTION_DEADLINE_MS: 3 s), when the host has ended the run
    // and recorded the question closed, the answer finds no run.
    await waitFor(
      async () =>
        // The thread's session (slack:team:channel:thread).
        (await env.t.db.sessionEntry.count({
          where: {
            internId,
            sessionId: { endsWith: `:${event.ts}` },
            item: { path: ['type'], equals: 'roster.interaction_closed' },
          },
        })) > 0,
      { timeoutMs: 15_000, what: 'the question to pass its deadline' },
    )
    await slack.click(`${stack.apiUrl}/slack/interactivity/${internId}`, signingSecret, 'U0PERSON', card, 0)
    await waitFor(() => JSON.stringify(card.blocks).includes('Expired'), {
      timeoutMs: 10_000,
      what: 'the card to expire',
    })
    expect(replies(event.ts).some((m) => /never/.test(m.text))).toBe(false)
  })

  it('waits out Slack’s 429 and posts once', async () => {
    slack.faults.push({ method: 'chat.postMessage', status: 429, retryAfter: 1, times: 1 })
    const event = mention('[sim] say Patiently.')
    await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, event))
    await answered(event.ts, /^Patiently\.$/)
    expect(replies(event.ts)).toHaveLength(1)
    expect(slack.faults[0]!.times).toBe(0)
  })

  it('a streamed update Slack fails does not cut the turn: the whole reply lands at the end', async () => {
    sim.settings.latencyMs = 1_500
    try {
      slack.faults.push({ method: 'chat.update', error: 'fatal_error', times: 1 })
      const event = mention('[sim] say Streamed through a hiccup.')
      await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, event))
      await answered(event.ts, /^Streamed through a hiccup\.$/)
      expect(replies(event.ts)).toHaveLength(1)
      const row = await env.t.db.slackEvent.findFirstOrThrow({ where: { internId, threadTs: event.ts } })
      expect(row).toMatchObject({ state: 'done', outcome: 'answered', replyText: null })
    } finally {
      sim.settings.latencyMs = 0
    }
  })

  it('runs turns while Slack is away, and posts their replies in the thread’s order once it is back', async () => {
    // Every post and update fails, as when Slack is down (5xx), until the fault is lifted.
    const away = [
      { method: 'chat.postMessage', status: 503, times: 10_000 },
      { method: 'chat.update', status: 503, times: 10_000 },
    ]
    slack.faults.push(...away)
    const first = mention('[sim] say First, while Slack was away.')
    try {
      await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, first))
      const kept = (text: RegExp) =>
        waitFor(
          async () =>
            (await env.t.db.slackEvent.findMany({ where: { internId, threadTs: first.ts, state: 'answered' } })).some(
              (r) => text.test(r.replyText ?? ''),
            ),
          { timeoutMs: 20_000, what: 'a turn run and its reply kept' },
        )
      await kept(/^First, while Slack was away\.$/)
      const second = mention('[sim] say Second, also while away.', { thread_ts: first.ts })
      await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, second))
      await kept(/^Second, also while away\.$/)
      expect(replies(first.ts)).toHaveLength(0)
    } finally {
      // Back, but slow to take the first reply: the second waits for it rather than going first.
      slack.faults.push({ method: 'chat.postMessage', match: 'First, while', holdMs: 3_000, times: 1 })
      for (const f of away) f.times = 0
    }
    await answered(first.ts, /Second, also while away/)
    const texts = replies(first.ts).map((m) => m.text)
    expect(texts).toEqual(['First, while Slack was away.', 'Second, also while away.'])
    // Both turns are over, their kept replies handed to Slack.
    const rows = await env.t.db.slackEvent.findMany({ where: { internId, threadTs: first.ts } })
    expect(rows.map((r) => r.state)).toEqual(['done', 'done'])
  })

  it('a worker killed while Slack takes its post: the post is found in the thread, not posted again', async () => {
    // Slack takes the post at once and answers it late: the worker dies before it learns the ts.
    slack.faults.push({ method: 'chat.postMessage', delayMs: 5_000, times: 1 })
    const event = mention('[sim] say Posted once.')
    await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, event))
    await waitFor(() => replies(event.ts).length === 1, { timeoutMs: 10_000, what: 'Slack to take the post' })
    const worker = stack.workers.find((w) => w.running)!
    await worker.kill('SIGKILL')
    await stack.addWorker()
    await answered(event.ts, /^Posted once\.$/)
    expect(replies(event.ts)).toHaveLength(1)
    expect(slack.calls.some((c) => c.method === 'conversations.replies' && c.params.ts === event.ts)).toBe(true)
    const row = await env.t.db.slackEvent.findFirstOrThrow({ where: { internId, threadTs: event.ts } })
    expect(row).toMatchObject({ state: 'done', outcome: 'answered', replyTs: replies(event.ts)[0]!.ts })
  })

  it('a worker killed mid-turn: the turn is not run again, and the same message says so', async () => {
    sim.settings.latencyMs = 4_000
    try {
      const event = await runningTurn('[sim] say Never finished here.')
      const worker = stack.workers.find((w) => w.running)!
      await worker.kill('SIGKILL')
      await stack.addWorker()
      await answered(event.ts, /cut off/)
      expect(replies(event.ts)).toHaveLength(1)
      const row = await env.t.db.slackEvent.findFirstOrThrow({ where: { internId, threadTs: event.ts } })
      expect(row).toMatchObject({ state: 'done', outcome: 'interrupted' })
    } finally {
      sim.settings.latencyMs = 0
    }
  })

  it('a worker stalled past its job’s lock (Redis away from it a while): the turn is answered once, not cut off', async () => {
    // BullMQ takes the job back from the stalled worker and another runs it again; that run finds
    // the first alive (its lease, renewed through Postgres) and waits for it.
    const proxy = await redisProxy(redisUrl())
    const stalled = await stack.addWorker({ REDIS_URL: proxy.url })
    for (const w of stack.workers) if (w !== stalled) await w.kill()
    sim.settings.latencyMs = 15_000
    try {
      const event = await runningTurn('[sim] say Stalled, not cut off.')
      proxy.freeze()
      const other = await stack.addWorker()
      // Every text the thread's reply was given (posted, or its message updated).
      const said = () =>
        slack.calls
          .filter((c) => ['chat.postMessage', 'chat.update'].includes(c.method) && c.params.channel === event.channel)
          .filter((c) => c.params.thread_ts === event.ts || c.params.ts === replies(event.ts)[0]?.ts)
          .map((c) => String(c.params.text))
      // The job run again by the other worker: it waits (before leases, it said the turn was cut off).
      await waitFor(
        () => /job still running elsewhere/.test(other.output) || said().some((text) => /cut off/.test(text)),
        { timeoutMs: 20_000, what: 'the job to run again on the other worker' },
      )
      proxy.thaw()
      await answered(event.ts, /^Stalled, not cut off\.$/)
      expect(replies(event.ts).map((m) => m.text)).toEqual(['Stalled, not cut off.'])
      expect(said().filter((text) => /cut off/.test(text) && text !== 'Stalled, not cut off.')).toEqual([])
      const row = await env.t.db.slackEvent.findFirstOrThrow({ where: { internId, threadTs: event.ts } })
      expect(row).toMatchObject({ state: 'done', outcome: 'answered' })
    } finally {
      sim.settings.latencyMs = 0
      proxy.thaw()
      await stalled.kill()
      await proxy.close()
    }
  }, 90_000)

  it('revokes the link when Slack refuses the bot token, posting nothing more', async () => {
    slack.faults.push({ method: 'chat.postMessage', error: 'invalid_auth', times: 1 })
    const event = mention('[sim] say Never posted.')
    await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, event))
    await waitFor(
      async () => ((await (await api(`/interns/${internId}/slack`)).json()) as { state: string }).state === 'revoked',
      {
        timeoutMs: 10_000,
        what: 'the link to be revoked',
      },
    )
    expect(replies(event.ts)).toHaveLength(0)
    await reinstall()
  })

  it('stops posting once uninstalled: the link is revoked, HTTP chat goes on', async () => {
    const uninstall = await slack.sendEvent(
      eventsUrl,
      signingSecret,
      eventCallback(slack.team.id, { type: 'app_uninstalled' }),
    )
    expect(uninstall.status).toBe(200)
    const link = (await (await api(`/interns/${internId}/slack`)).json()) as { state: string; reason: string }
    expect(link).toMatchObject({ state: 'revoked', reason: expect.stringMatching(/app_uninstalled/) })
    const before = await eventsOf()
    await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, mention('[sim] say unheard')))
    expect(await eventsOf()).toBe(before)
    const chat = await api(`/interns/${internId}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ stream: true, messages: [{ role: 'user', content: '[sim] say Still here.' }] }),
    })
    expect(chat.status).toBe(200)
    const said = (await chat.text())
      .split('\n')
      .filter((l) => l.startsWith('data: {'))
      .map(
        (l) =>
          (JSON.parse(l.slice(6)) as { choices: { delta?: { content?: string } }[] }).choices[0]?.delta?.content ?? '',
      )
      .join('')
    expect(said).toBe('Still here.')
  })

  it('installs again after an uninstall, and a suspended intern says so in the thread', async () => {
    await reinstall()
    expect(((await (await api(`/interns/${internId}`)).json()) as { status: string }).status).toBe('running')
    expect((await api(`/interns/${internId}/suspend`, { method: 'POST', body: '{}' })).status).toBe(200)
    const event = mention('[sim] say asleep')
    await slack.sendEvent(eventsUrl, signingSecret, eventCallback(slack.team.id, event))
    await answered(event.ts, /I am suspended/)
    expect(replies(event.ts)).toHaveLength(1)
  })

  it('answers 100 threads at once across ten interns: each once, in its own thread', async () => {
    const interns = await Promise.all(
      Array.from({ length: 10 }, (_, i) => installedSlackIntern(api, slack, `crowd-${i}`)),
    )
    const threads = Array.from({ length: 100 }, (_, k) => {
      const to = interns[k % interns.length]!
      const event = { ...mention(''), text: `<@${to.bot}> [sim] say Thread ${k} answered.` }
      return { k, to, event }
    })
    const sent = await Promise.all(
      threads.map(({ to, event }) =>
        slack.sendEvent(`${stack.apiUrl}/slack/events/${to.id}`, to.signingSecret, eventCallback(slack.team.id, event)),
      ),
    )
    expect(sent.map((r) => r.status)).toEqual(threads.map(() => 200))
    const unanswered = () =>
      threads.filter(({ k, event }) => !replies(event.ts).some((m) => m.text === `Thread ${k} answered.`))
    await waitFor(() => unanswered().length === 0, { timeoutMs: 120_000, what: 'every thread answered' }).catch(
      async (err: Error) => {
        // What the threads left unanswered hold, and where their events stand (seen once, on a
        // machine loaded far past its cores: say which way it went).
        const left = unanswered()
        const rows = await env.t.db.slackEvent.findMany({
          where: { threadTs: { in: left.map((t) => t.event.ts) } },
          select: { threadTs: true, state: true, outcome: true, updatedAt: true },
        })
        const seen = left.slice(0, 5).map(({ k, event }) => ({
          k,
          replies: replies(event.ts).map((m) => m.text),
          row: rows.find((r) => r.threadTs === event.ts),
        }))
        throw new Error(`${err.message}: ${left.length} threads unanswered, e.g. ${JSON.stringify(seen)}`)
      },
    )
    for (const { k, event } of threads) expect(replies(event.ts).map((m) => m.text)).toEqual([`Thread ${k} answered.`])
    const rows = await env.t.db.slackEvent.findMany({ where: { threadTs: { in: threads.map((t) => t.event.ts) } } })
    expect(rows).toHaveLength(100)
    await waitFor(
      async () =>
        (await env.t.db.slackEvent.count({
          where: { threadTs: { in: threads.map((t) => t.event.ts) }, state: { not: 'done' } },
        })) === 0,
      {
        timeoutMs: 10_000,
        what: 'every turn done',
      },
    )
    expect(new Set(rows.map((r) => r.outcome))).toEqual(new Set(['answered']))
  }, 180_000)

  it('revokes the bot token when the intern is deleted', async () => {
    const token = slack.tokens.get(mainAppId)!
    expect(slack.isRevoked(token)).toBe(false)
    expect((await api(`/interns/${internId}`, { method: 'DELETE', body: '{}' })).status).toBe(202)
    await waitFor(async () => (await env.t.db.intern.count({ where: { id: internId } })) === 0, {
      timeoutMs: 30_000,
      what: 'the intern to be deleted',
    })
    expect(slack.calls.some((c) => c.method === 'auth.revoke')).toBe(true)
    expect(slack.isRevoked(token)).toBe(true)
  })

  it('mints an app for an intern that names none: installed, running, answering, and deleted with the intern', async () => {
    const { refreshToken } = slack.issueConfigToken()
    await storeSlackConfigToken(
      { db: env.t.db, masterKey: Buffer.from(STACK_MASTER_KEY, 'hex'), api: slackAppsApi(slack.apiUrl) },
      env.tenant.workspaceId,
      refreshToken,
    )
    const created = await api('/interns', {
      method: 'POST',
      body: JSON.stringify({ name: 'minted-bot', provision: true, slack: {} }),
    })
    expect(created.status, await created.clone().text()).toBe(201)
    const id = ((await created.json()) as { id: string }).id
    const app = [...slack.minted.values()].at(-1)!
    expect(app.manifest).toMatchObject({
      settings: { event_subscriptions: { request_url: `${stack.apiUrl}/slack/events/${id}` } },
    })
    const link = (await (await api(`/interns/${id}/slack`)).json()) as { install_url: string; origin: string }
    expect(link.origin).toBe('minted')
    await installThroughSlack(api, id)
    await waitRunning(api, id, 'the minted intern to run')
    // Slack signs the minted app's events with the secret apps.manifest.create gave Roster.
    const bot = ((await (await api(`/interns/${id}/slack`)).json()) as { bot_user_id: string }).bot_user_id
    const event = { ...mention('[sim] say Minted and talking.'), text: `<@${bot}> [sim] say Minted and talking.` }
    await slack.sendEvent(`${stack.apiUrl}/slack/events/${id}`, app.signingSecret, eventCallback(slack.team.id, event))
    await waitFor(() => replies(event.ts).some((m) => m.text === 'Minted and talking.'), {
      timeoutMs: 20_000,
      what: 'the minted intern to answer',
    })
    expect((await api(`/interns/${id}`, { method: 'DELETE', body: '{}' })).status).toBe(202)
    await waitFor(async () => (await env.t.db.intern.count({ where: { id } })) === 0, {
      timeoutMs: 30_000,
      what: 'the minted intern to be deleted',
    })
    expect(app.deleted).toBe(true)
    expect(
      slack.calls.filter((c) => c.method === 'apps.manifest.delete' && c.params.app_id === app.appId),
    ).toHaveLength(1)
  })
})

/** The install again, through Slack, as after an uninstall. */
async function reinstall() {
  await installThroughSlack(api, internId)
  expect(((await (await api(`/interns/${internId}/slack`)).json()) as { state: string }).state).toBe('installed')
}

// Standing work that reports in Slack (issue 61): a schedule's or trigger's Slack conversation gets
// each turn's reply as a message of its own, its questions as cards in that message's thread.
describe('an intern’s standing work in Slack', () => {
  const REPORTS = 'C0REPORTS'
  type Turn = { state: string; session_id: string; slack_report: string | null; output: string | null }
  const turnOf = async (intern: string, id: string) =>
    (await (await api(`/interns/${intern}/turns/${id}`)).json()) as Turn
  /** A schedule of `intern`'s reporting in REPORTS, run now: its turn's id. */
  async function runNow(intern: string, name: string, prompt: string) {
    const made = await api(`/interns/${intern}/schedules`, {
      method: 'POST',
      body: JSON.stringify({ name, cron: '0 9 * * *', prompt, slack_channel: REPORTS }),
    })
    expect(made.status, await made.clone().text()).toBe(201)
    const schedule = (await made.json()) as { id: string; slack_channel: string }
    expect(schedule.slack_channel).toBe(REPORTS)
    const run = await api(`/interns/${intern}/schedules/${schedule.id}/run`, { method: 'POST', body: '{}' })
    expect(run.status, await run.clone().text()).toBe(202)
    return ((await run.json()) as { turn_id: string }).turn_id
  }
  /** The report messages in REPORTS (not in a thread) reading `text`. */
  const reports = (text: RegExp) =>
    slack.messages.filter((m) => m.channel === REPORTS && !m.thread_ts && text.test(m.text))
  let reporter: Awaited<ReturnType<typeof installedSlackIntern>>

  beforeAll(async () => {
    reporter = await installedSlackIntern(api, slack, 'reporter', ['U0APPROVER'])
  }, 90_000)

  it('refuses a Slack conversation for an intern with no Slack app, and what is no conversation id', async () => {
    const plain = await api('/interns', { method: 'POST', body: JSON.stringify({ name: 'no-slack-here' }) })
    expect(plain.status).toBe(201)
    const plainId = ((await plain.json()) as { id: string }).id
    const body = { name: 'nightly', cron: '0 2 * * *', prompt: 'tidy up', slack_channel: REPORTS }
    const unlinked = await api(`/interns/${plainId}/schedules`, { method: 'POST', body: JSON.stringify(body) })
    expect(unlinked.status).toBe(409)
    expect(((await unlinked.json()) as { error: { metadata: { reason: string } } }).error.metadata.reason).toBe(
      'slack_not_linked',
    )
    const hook = await api(`/interns/${plainId}/triggers`, {
      method: 'POST',
      body: JSON.stringify({ name: 'hook', prompt: 'look', slack_channel: REPORTS }),
    })
    expect(hook.status).toBe(409)
    for (const channel of ['#general', 'U0PERSON', 'c0lower', 'C0\nX', '']) {
      const bad = await api(`/interns/${reporter.id}/schedules`, {
        method: 'POST',
        body: JSON.stringify({ ...body, slack_channel: channel }),
      })
      expect(bad.status, channel).toBe(400)
    }
    expect(await env.t.db.internSchedule.count({ where: { internId: { in: [plainId, reporter.id] } } })).toBe(0)
  })

  it('posts a scheduled turn’s reply in its conversation, once; a reply in its thread goes on in its session', async () => {
    const turnId = await runNow(reporter.id, 'triage', '[sim] say Triage: 3 new issues.')
    await waitFor(async () => (await turnOf(reporter.id, turnId)).slack_report === 'posted', {
      timeoutMs: 30_000,
      what: 'the report to be posted',
    })
    const [report, ...more] = reports(/Triage: 3 new issues/)
    expect(more).toEqual([])
    expect(report!.text).toMatch(/^\*triage\* \(scheduled, run by hand\)/)
    const turn = await turnOf(reporter.id, turnId)
    expect(turn.state).toBe('done')

    // A person answers in the report's thread: the intern's turn, in the scheduled turn's session.
    const followUp = {
      type: 'message',
      channel_type: 'channel',
      channel: REPORTS,
      user: 'U0PERSON',
      text: 'which ones?\n[sim] say Issues 1, 2 and 3.',
      ts: nextTs(),
      thread_ts: report!.ts,
    }
    await slack.sendEvent(
      `${stack.apiUrl}/slack/events/${reporter.id}`,
      reporter.signingSecret,
      eventCallback(slack.team.id, followUp),
    )
    await waitFor(() => replies(report!.ts).some((m) => /Issues 1, 2 and 3/.test(m.text)), {
      timeoutMs: 20_000,
      what: 'the reply in the report’s thread',
    })
    const event = await env.t.db.slackEvent.findFirstOrThrow({
      where: { internId: reporter.id, eventId: { not: { startsWith: 'turn:' } }, threadTs: report!.ts },
    })
    expect(event.sessionId).toBe(turn.session_id)
    expect(JSON.stringify(sim.stats.lastBody)).toContain('Triage: 3 new issues.')
  })

  it('keeps a report Slack does not take pending, and posts it once Slack is back', async () => {
    const away = { method: 'chat.postMessage', status: 503, times: 10_000 }
    slack.faults.push(away)
    let turnId: string
    try {
      turnId = await runNow(reporter.id, 'while-away', '[sim] say Done while Slack was away.')
      await waitFor(async () => (await turnOf(reporter.id, turnId)).state === 'done', {
        timeoutMs: 30_000,
        what: 'the turn to end',
      })
      expect((await turnOf(reporter.id, turnId)).slack_report).toBe('pending')
      expect(reports(/while Slack was away/)).toEqual([])
    } finally {
      away.times = 0
    }
    await waitFor(async () => (await turnOf(reporter.id, turnId)).slack_report === 'posted', {
      timeoutMs: 30_000,
      what: 'the report once Slack is back',
    })
    expect(reports(/Done while Slack was away/)).toHaveLength(1)
  })

  it.skipIf(noSandbox)(
    'asks a scheduled turn’s question as a card in its report’s thread: an approver answers, the report ends with the reply',
    async () => {
      const turnId = await runNow(
        reporter.id,
        'cleanup',
        'clean up\n[sim] call shell {"command":"echo scheduled-ran"}\n[sim] say Ran: {{result}}',
      )
      await waitFor(
        () => reports(/\*cleanup\*/).length === 1 && replies(reports(/\*cleanup\*/)[0]!.ts).some((m) => m.blocks),
        {
          timeoutMs: 30_000,
          what: 'the question’s card in the report’s thread',
        },
      )
      const root = reports(/\*cleanup\*/)[0]!
      expect(root.text).toMatch(/Waiting for an answer to the question in this thread/)
      expect((await turnOf(reporter.id, turnId)).state).toBe('waiting')
      const card = replies(root.ts).find((m) => m.blocks)!
      expect(JSON.stringify(card.blocks)).toContain('echo scheduled-ran')
      const interactivity = `${stack.apiUrl}/slack/interactivity/${reporter.id}`
      // Nobody started the thread: anyone but an approver is told who may answer.
      expect((await slack.click(interactivity, reporter.signingSecret, 'U0PERSON', card, 0)).status).toBe(200)
      await waitFor(() => slack.ephemerals.some((e) => e.user === 'U0PERSON' && /approvers/.test(e.text)), {
        timeoutMs: 10_000,
        what: 'the refusal',
      })
      expect((await turnOf(reporter.id, turnId)).state).toBe('waiting')
      // The approver allows it: the turn goes on, and its report becomes its reply.
      expect((await slack.click(interactivity, reporter.signingSecret, 'U0APPROVER', card, 0)).status).toBe(200)
      await waitFor(async () => (await turnOf(reporter.id, turnId)).slack_report === 'posted', {
        timeoutMs: 30_000,
        what: 'the report of the turn’s end',
      })
      expect(reports(/\*cleanup\*/)).toHaveLength(1)
      expect(root.text).toMatch(/Ran: .*scheduled-ran/)
      expect(root.text).not.toMatch(/Waiting for an answer/)
      expect(JSON.stringify(card.blocks)).toMatch(/Allow once\* by <@U0APPROVER>/)
      expect(await turnOf(reporter.id, turnId)).toMatchObject({ state: 'done' })
      // The continuation is the report's: nothing more was posted in the thread.
      expect(replies(root.ts).filter((m) => !m.blocks)).toEqual([])
    },
  )
})
