import { expect } from 'vitest'
import type { SlackSim } from '@roster/slack-sim'
import { waitFor } from '@roster/testing'

// Slack-linked interns for the tests that talk to them through the Slack stand-in: an API call as
// a member, the install as a browser does it, and an intern installed and running.

export type MemberCall = (path: string, init?: RequestInit) => Promise<Response>

/** A browser installing the intern's app: its install link, Slack's authorize page, the callback. */
export async function installThroughSlack(api: MemberCall, internId: string) {
  const link = (await (await api(`/interns/${internId}/slack`)).json()) as { install_url: string }
  const toSlack = await fetch(link.install_url, { redirect: 'manual' })
  expect(toSlack.status).toBe(302)
  const back = await fetch(toSlack.headers.get('location')!, { redirect: 'manual' })
  const done = await fetch(back.headers.get('location')!)
  expect(done.status, await done.clone().text()).toBe(200)
}

export async function waitRunning(api: MemberCall, internId: string, what = 'the intern to run') {
  await waitFor(
    async () => ((await (await api(`/interns/${internId}`)).json()) as { status: string }).status === 'running',
    {
      timeoutMs: 60_000,
      what,
    },
  )
}

/** An intern with a team-made app of the stand-in's, installed and running: its id, app, signing secret and bot user. */
export async function installedSlackIntern(api: MemberCall, slack: SlackSim, name: string, approvers: string[] = []) {
  const app = slack.addApp()
  const signingSecret = `secret-${name}-`.padEnd(32, 'x')
  const created = await api('/interns', {
    method: 'POST',
    body: JSON.stringify({
      name,
      provision: true,
      slack: {
        app: { client_id: app.clientId, client_secret: app.clientSecret, signing_secret: signingSecret },
        ...(approvers.length ? { approvers } : {}),
      },
    }),
  })
  expect(created.status, await created.clone().text()).toBe(201)
  const id = ((await created.json()) as { id: string }).id
  await installThroughSlack(api, id)
  await waitRunning(api, id, `${name} to run`)
  const bot = ((await (await api(`/interns/${id}/slack`)).json()) as { bot_user_id: string }).bot_user_id
  return { id, appId: app.appId, signingSecret, bot }
}
