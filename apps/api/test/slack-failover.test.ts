import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import { eventCallback, startSlackSim, type SlackSim } from '@roster/slack-sim'
import { simulatorCatalogue } from '@roster/gateway'
import { catalogueFile, startStack, waitFor, type Stack, useTestTenant } from '@roster/testing'
import { installedSlackIntern } from './slack-helpers.js'

// A Slack thread is a session that outlives the runtime host its intern ran on (issue 46): the host
// is killed after the thread's first turn, the fleet declares it dead and places the intern on the
// other host, and the thread's next turn there reads the first one's history (sessions live in the
// record, not on a host).
const env = useTestTenant()
let sim: Simulator
let slack: SlackSim
let stack: Stack

beforeAll(async () => {
  sim = await startSimulator({ replyTokens: 3 })
  slack = await startSlackSim()
  stack = await startStack({
    databaseUrl: env.t.url,
    runtimes: 2,
    env: {
      MODEL_CATALOGUE: catalogueFile(simulatorCatalogue(sim.url)),
      INTERN_DEFAULT_MODEL: 'roster-sim/chat',
      SLACK_API_URL: slack.apiUrl,
      SLACK_AUTHORIZE_URL: slack.authorizeUrl,
      // A host silent for 3 s is dead (heartbeats every 300 ms).
      FLEET_DEAD_AFTER_MS: '3000',
      FLEET_HEARTBEAT_MS: '300',
    },
    workerEnv: { RECONCILE_INTERVAL_MS: '500', PROVISION_BACKOFF_MS: '200', SLACK_BACKOFF_MS: '200' },
  })
}, 90_000)
afterAll(async () => {
  await stack?.stop()
  await slack?.close()
  await sim?.close()
})

const api = (path: string, init: RequestInit = {}) =>
  fetch(`${stack.apiUrl}${path}`, {
    ...init,
    redirect: 'manual',
    headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json', ...init.headers },
  })
const hostOf = async (id: string) => (await env.t.db.intern.findUniqueOrThrow({ where: { id } })).runtimeHostId
const statusOf = async (id: string) => (await env.t.db.intern.findUniqueOrThrow({ where: { id } })).status

describe('a Slack thread whose intern’s host is killed', () => {
  it('goes on on the intern’s new host with its history', async () => {
    const { id, signingSecret, bot } = await installedSlackIntern(api, slack, 'survivor')
    const eventsUrl = `${stack.apiUrl}/slack/events/${id}`
    const thread = '1800000000.000100'
    const say = (text: string, ts: string) =>
      slack.sendEvent(
        eventsUrl,
        signingSecret,
        eventCallback(slack.team.id, {
          type: 'app_mention',
          user: 'U0PERSON',
          text: `<@${bot}> ${text}`,
          ts,
          channel: 'C0GENERAL',
          ...(ts === thread ? {} : { thread_ts: thread }),
        }),
      )
    const replies = () => slack.messages.filter((m) => m.thread_ts === thread).map((m) => m.text)

    await say('remember the word pelican\n[sim] say I will remember pelican.', thread)
    await waitFor(() => replies().includes('I will remember pelican.'), { timeoutMs: 20_000, what: 'the first answer' })

    const first = await hostOf(id)
    const host = stack.runtimes.find((r) => r.id === first)!
    await host.process.kill('SIGKILL')
    await waitFor(async () => (await hostOf(id)) !== first && (await statusOf(id)) === 'running', {
      timeoutMs: 40_000,
      what: 'the intern running on the other host',
    })

    await say('what was the word?\n[sim] say The word was pelican.', '1800000000.000200')
    await waitFor(() => replies().includes('The word was pelican.'), { timeoutMs: 30_000, what: 'the second answer' })
    // The second turn's model call carried the first turn's exchange: the thread's session came along.
    const sent = JSON.stringify(sim.stats.lastBody)
    expect(sent).toContain('remember the word pelican')
    expect(sent).toContain('I will remember pelican.')
    expect(replies()).toEqual(['I will remember pelican.', 'The word was pelican.'])
  }, 120_000)
})
