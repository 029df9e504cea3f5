// bench slack: a Slack message to the first streamed text in its thread, against the same turn
// through POST /interns/{id}/chat/completions, on one stack, alternating (issue 46: at most +50 ms at
// p50). The Slack stand-in (packages/slack-sim) plays Slack on this machine; it tells the bench the
// moment the reply's text first appears in the thread.
import { startSlackSim, eventCallback } from '../packages/slack-sim/dist/index.js'
import { firstText } from './first-text.mjs'

export const SLACK_SIM_PORT = 3420
export const slackEnv = {
  SLACK_API_URL: `http://127.0.0.1:${SLACK_SIM_PORT}/api/`,
  SLACK_AUTHORIZE_URL: `http://127.0.0.1:${SLACK_SIM_PORT}/oauth/v2/authorize`,
}

const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))]

export async function benchSlack({ key, base }) {
  const runs = Number(process.env.BENCH_SLACK_RUNS ?? 60)
  const sim = await startSlackSim({ port: SLACK_SIM_PORT })
  try {
    const h = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
    const app = sim.addApp()
    const intern = await (
      await fetch(`${base}/interns`, {
        method: 'POST',
        headers: h,
        body: JSON.stringify({
          name: 'bench-slack',
          provision: true,
          slack: {
            app: { client_id: app.clientId, client_secret: app.clientSecret, signing_secret: app.signingSecret },
          },
        }),
      })
    ).json()
    const link = await (await fetch(`${base}/interns/${intern.id}/slack`, { headers: h })).json()
    const toSlack = await fetch(link.install_url, { redirect: 'manual' })
    const back = await fetch(toSlack.headers.get('location'), { redirect: 'manual' })
    if ((await fetch(back.headers.get('location'))).status !== 200) throw new Error('the install failed')
    for (let i = 0; ; i++) {
      if ((await (await fetch(`${base}/interns/${intern.id}`, { headers: h })).json()).status === 'running') break
      if (i > 1000) throw new Error('the intern did not run')
      await new Promise((r) => setTimeout(r, 20))
    }
    const prompt = '[sim] say hello there from the bench'
    const eventsUrl = `${base}/slack/events/${intern.id}`
    let clock = 1_900_000_000
    /**
     * From the event sent to the first reply text in its thread (the placeholder does not count);
     * undefined when the intern was still ending the turn before (busy: sent again).
     */
    const slackOnce = async () => {
      const ts = `${++clock}.000100`
      const seen = new Promise((resolve) => {
        const watch = (m) => {
          if (m.thread_ts !== ts || !/^(hello|I am busy)/.test(m.text)) return
          sim.watchers.delete(watch)
          resolve(m.text.startsWith('hello') ? performance.now() : undefined)
        }
        sim.watchers.add(watch)
      })
      const t0 = performance.now()
      const event = { type: 'app_mention', user: 'U0BENCH', text: prompt, ts, channel: 'C0BENCH' }
      const sent = await sim.sendEvent(eventsUrl, app.signingSecret, eventCallback(sim.team.id, event))
      if (sent.status !== 200) throw new Error(`the event was refused: ${sent.status}`)
      const at = await seen
      // The turn's job ends with a last update after its text: let it finish before the next turn.
      await new Promise((r) => setTimeout(r, 100))
      return at === undefined ? undefined : at - t0
    }
    const httpOnce = (i) =>
      firstText(
        `${base}/interns/${intern.id}/chat/completions`,
        {
          headers: h,
          body: JSON.stringify({
            stream: true,
            session_id: `bench-http-${i}`,
            messages: [{ role: 'user', content: prompt }],
          }),
        },
        (t) => t.includes('"content":"hello'),
      ).catch((err) => {
        if (/"busy"/.test(err.message)) return undefined
        throw err
      })
    // One turn runs at a time per intern: a turn that finds the one before still ending is sent again.
    const again = async (once) => {
      for (let tries = 0; tries < 50; tries++) {
        const at = await once()
        if (at !== undefined) return at
        await new Promise((r) => setTimeout(r, 50))
      }
      throw new Error('the intern stayed busy')
    }
    const slackFirst = () => again(slackOnce)
    const httpFirst = (i) => again(() => httpOnce(i))
    const slack = []
    const http = []
    for (let i = 0; i < runs + 10; i++) {
      const s = await slackFirst()
      const c = await httpFirst(i)
      if (i >= 10) {
        slack.push(s)
        http.push(c)
      }
    }
    const added = pct(slack, 0.5) - pct(http, 0.5)
    return [
      {
        scenario: `intern turn, first text: through Slack (event → first text in its thread) (${runs} turns)`,
        metric: 'p50 / p99 ms',
        value: `${pct(slack, 0.5).toFixed(1)} / ${pct(slack, 0.99).toFixed(1)}`,
        target: '',
      },
      {
        scenario: '  the same turn through POST /interns/{id}/chat/completions (alternating)',
        metric: 'p50 / p99 ms',
        value: `${pct(http, 0.5).toFixed(1)} / ${pct(http, 0.99).toFixed(1)}`,
        target: '',
      },
      { scenario: '  added by Slack at p50', metric: 'ms', value: added.toFixed(1), target: '≤ 50' },
    ]
  } finally {
    await sim.close()
  }
}
