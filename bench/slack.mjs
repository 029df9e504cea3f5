// bench slack: a Slack message to the first streamed text in its thread, against the same turn
// through POST /interns/{id}/chat/completions, on one stack, alternating (issue 46: at most +50 ms at
// p50). The Slack stand-in (packages/slack-sim) plays Slack on this machine; it tells the bench the
// moment the reply's text first appears in the thread.
import { startSlackSim, eventCallback } from '../packages/slack-sim/dist/index.js'
import { readFileSync } from 'node:fs'
import { firstText } from './first-text.mjs'

export const SLACK_SIM_PORT = 3420
export const slackEnv = {
  SLACK_API_URL: `http://127.0.0.1:${SLACK_SIM_PORT}/api/`,
  SLACK_AUTHORIZE_URL: `http://127.0.0.1:${SLACK_SIM_PORT}/oauth/v2/authorize`,
}

const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))]

/** A Slack-linked intern with a team-made app of the stand-in's, installed and running. */
async function installedIntern(sim, base, h, name) {
  const app = sim.addApp()
  const intern = await (
    await fetch(`${base}/interns`, {
      method: 'POST',
      headers: h,
      body: JSON.stringify({
        name,
        provision: true,
        slack: { app: { client_id: app.clientId, client_secret: app.clientSecret, signing_secret: app.signingSecret } },
      }),
    })
  ).json()
  const link = await (await fetch(`${base}/interns/${intern.id}/slack`, { headers: h })).json()
  const toSlack = await fetch(link.install_url, { redirect: 'manual' })
  const back = await fetch(toSlack.headers.get('location'), { redirect: 'manual' })
  if ((await fetch(back.headers.get('location'))).status !== 200) throw new Error('the install failed')
  for (let i = 0; ; i++) {
    if ((await (await fetch(`${base}/interns/${intern.id}`, { headers: h })).json()).status === 'running') break
    if (i > 3000) throw new Error('the intern did not run')
    await new Promise((r) => setTimeout(r, 20))
  }
  const bot = (await (await fetch(`${base}/interns/${intern.id}/slack`, { headers: h })).json()).bot_user_id
  return { id: intern.id, app, bot }
}

const rssMiB = (pid) => Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]) / 1024
/** The process's CPU seconds (user + system) so far. */
const cpuSeconds = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return (Number(f[11]) + Number(f[12])) / 100
}

/**
 * 1,000 active threads on one API process: a message opens each of THREADS threads across INTERNS
 * interns, sent 100 at a time as Slack delivers them, then a second message in every thread. What
 * the API pays: Slack's acknowledgement (it wants one within 3 s), its memory and CPU; and how long
 * until every thread had both answers (the worker and the interns' share: one turn at a time each).
 */
async function benchThreads(sim, base, h, apiPid) {
  const threads = Number(process.env.BENCH_SLACK_THREADS ?? 1000)
  const internCount = Number(process.env.BENCH_SLACK_INTERNS ?? 20)
  const interns = []
  for (let i = 0; i < internCount; i++) interns.push(await installedIntern(sim, base, h, `bench-crowd-${i}`))
  const rssBefore = rssMiB(apiPid)
  const cpuBefore = cpuSeconds(apiPid)
  const answered = new Map()
  const watch = (m) => {
    if (m.thread_ts && /^(first|second) answer /.test(m.text))
      answered.set(`${m.thread_ts} ${m.text.split(' ')[0]}`, true)
  }
  sim.watchers.add(watch)
  let clock = 2_000_000_000
  const roots = Array.from({ length: threads }, () => `${++clock}.000100`)
  const round = async (which) => {
    const acks = []
    const t0 = performance.now()
    let next = 0
    const sender = async () => {
      for (let k = next++; k < threads; k = next++) {
        const to = interns[k % interns.length]
        const ts = which === 'first' ? roots[k] : `${++clock}.000200`
        const event = {
          type: 'app_mention',
          user: 'U0CROWD',
          text: `<@${to.bot}> [sim] say ${which} answer ${k}`,
          ts,
          channel: 'C0CROWD',
          ...(which === 'first' ? {} : { thread_ts: roots[k] }),
        }
        const s = performance.now()
        const res = await sim.sendEvent(
          `${base}/slack/events/${to.id}`,
          to.app.signingSecret,
          eventCallback(sim.team.id, event),
        )
        if (res.status !== 200) throw new Error(`an event was refused: ${res.status}`)
        acks.push(performance.now() - s)
      }
    }
    await Promise.all(Array.from({ length: 100 }, sender))
    const want = (k) => `${roots[k]} ${which}`
    for (let i = 0; ; i++) {
      if (roots.every((_, k) => answered.has(want(k)))) break
      if (i > 6000)
        throw new Error(`${which}: only ${roots.filter((_, k) => answered.has(want(k))).length} of ${threads} answered`)
      await new Promise((r) => setTimeout(r, 50))
    }
    return { acks, allMs: performance.now() - t0 }
  }
  const first = await round('first')
  // The last turns end just after their text shows: a second message then is a new turn, not a steer.
  await new Promise((r) => setTimeout(r, 2_000))
  const second = await round('second')
  sim.watchers.delete(watch)
  const posts = sim.messages.filter((m) => m.channel === 'C0CROWD').length
  return [
    {
      scenario: `${threads} Slack threads on one API process (${internCount} interns): event acknowledged, first message of each`,
      metric: 'p50 / p99 ms',
      value: `${pct(first.acks, 0.5).toFixed(1)} / ${pct(first.acks, 0.99).toFixed(1)}`,
      target: '< 3,000 (Slack)',
    },
    {
      scenario: '  the second message of each thread (1,000 threads active)',
      metric: 'p50 / p99 ms',
      value: `${pct(second.acks, 0.5).toFixed(1)} / ${pct(second.acks, 0.99).toFixed(1)}`,
      target: '< 3,000 (Slack)',
    },
    {
      scenario: '  every thread answered (first round / second round)',
      metric: 's',
      value: `${(first.allMs / 1000).toFixed(1)} / ${(second.allMs / 1000).toFixed(1)}`,
      target: '',
    },
    {
      scenario: '  the API process over both rounds: RSS before → after, CPU',
      metric: 'MiB, s',
      value: `${rssBefore.toFixed(0)} → ${rssMiB(apiPid).toFixed(0)}, ${(cpuSeconds(apiPid) - cpuBefore).toFixed(1)} s CPU`,
      target: '',
    },
    {
      scenario: '  replies in the threads (one per message, no duplicates)',
      metric: 'messages',
      value: `${posts} of ${threads * 2}`,
      target: `${threads * 2}`,
    },
  ]
}

export async function benchSlack({ key, base, apiPid }) {
  const runs = Number(process.env.BENCH_SLACK_RUNS ?? 60)
  const sim = await startSlackSim({ port: SLACK_SIM_PORT })
  try {
    const h = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
    const { id: internId, app } = await installedIntern(sim, base, h, 'bench-slack')
    const intern = { id: internId }
    const prompt = '[sim] say hello there from the bench'
    const eventsUrl = `${base}/slack/events/${intern.id}`
    let clock = 1_900_000_000
    /** From the event sent to the first reply text in its thread (the placeholder does not count). */
    const slackOnce = async () => {
      const ts = `${++clock}.000100`
      const seen = new Promise((resolve) => {
        const watch = (m) => {
          if (m.thread_ts !== ts || !m.text.startsWith('hello')) return
          sim.watchers.delete(watch)
          resolve(performance.now())
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
    const crowd = process.env.BENCH_SLACK_THREADS === '0' ? [] : await benchThreads(sim, base, h, apiPid)
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
      ...crowd,
    ]
  } finally {
    await sim.close()
  }
}
