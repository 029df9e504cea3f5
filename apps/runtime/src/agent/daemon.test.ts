import { describe, expect, it } from 'vitest'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { RunEvent } from '@roster/protocol'
import { InternDaemon, type ExecuteRun, type RunStream } from './daemon.js'
import { SessionStore } from './session-store.js'
import { PERMISSION_OPTIONS } from './interactions.js'
import { waitFor } from '@roster/testing'

// The daemon's bookkeeping of runs, pauses and answers, with runs whose work the test writes: each
// asks what its prompt says, then says what it was told.

class Listener implements RunStream {
  events: RunEvent[] = []
  ended = false
  private readonly waiting: (() => void)[] = []
  send(e: RunEvent) {
    this.events.push(e)
    for (const wake of this.waiting.splice(0)) wake()
  }
  end() {
    this.ended = true
  }
  get types() {
    return this.events.map((e) => e.type)
  }
  /** The first event of this type: woken by each event sent, never polled. */
  async until(type: RunEvent['type']) {
    while (!this.events.some((e) => e.type === type)) await new Promise<void>((wake) => this.waiting.push(wake))
    return this.events.find((e) => e.type === type)!
  }
}

const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2, cost: 0 }
/** A run that asks permission for each `?` in its prompt, waits on `wait` when it says so, then echoes the answers. */
const execute: ExecuteRun = async (run) => {
  const answers: string[] = []
  for (const _ of run.prompt.matchAll(/\?/g)) {
    const answer = await run.ask({ kind: 'permission', operation: 'shell', options: [...PERMISSION_OPTIONS] })
    answers.push(answer.kind === 'permission' ? answer.choice : answer.action)
  }
  if (run.prompt.includes('wait')) {
    await new Promise((resolve, reject) => {
      const tick = setInterval(() => {
        const steered = run.steered()
        if (steered.length) run.emit({ type: 'text', delta: `steered: ${steered.join()}`, model: 'm' })
      }, 5)
      run.signal.addEventListener('abort', () => (clearInterval(tick), reject(run.signal.reason)))
      setTimeout(() => (clearInterval(tick), resolve(undefined)), 150)
    })
  }
  run.emit({ type: 'text', delta: `answers: ${answers.join()}`, model: 'm' })
  return usage
}

function daemon(opts: { deadlineMs?: number; maxPaused?: number; dir?: string; onStop?: () => Promise<void> } = {}) {
  return new InternDaemon({
    sessions: new SessionStore(opts.dir ?? mkdtempSync(join(tmpdir(), 'roster-daemon-'))),
    execute,
    deadlineMs: opts.deadlineMs ?? 60_000,
    maxPaused: opts.maxPaused ?? 4,
    model: () => 'm',
    onError: () => {},
    onStop: opts.onStop,
  })
}

describe("an intern's daemon", () => {
  it('pauses a run on a question, frees the intern meanwhile, and goes on with the answer on the reply stream', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'roster-daemon-'))
    const d = daemon({ dir })
    const first = new Listener()
    expect(d.prompt('s1', 'do it?', 'manual', first)).toEqual({ started: true })
    const pause = (await first.until('pause')) as Extract<RunEvent, { type: 'pause' }>
    expect(first.types).toEqual(['session', 'pause'])
    expect(first.ended).toBe(true)
    expect(JSON.parse(pause.arguments)).toEqual({
      kind: 'permission',
      operation: 'shell',
      options: ['allow_once', 'allow_always', 'reject_once', 'reject_always'],
    })
    // The intern is free for another session while the run waits.
    const other = new Listener()
    expect(d.prompt('s2', 'hello', 'self-drive', other)).toEqual({ started: true })
    await other.until('done')
    // A wrong answer changes nothing; the right one continues the run, on the reply's stream.
    const wrong = new Listener()
    expect(await d.reply('s1', pause.interaction_id, 'allow_sometimes', wrong)).toEqual({
      badAnswer: expect.stringMatching(/allow_once, allow_always, reject_once, reject_always, cancel/),
    })
    expect(wrong.events).toEqual([])
    const second = new Listener()
    expect(await d.reply('s1', pause.interaction_id, 'allow_once', second)).toEqual({ resumed: true })
    await second.until('done')
    expect(second.events).toEqual([
      // The stream opens naming the model the intern calls, before it has answered.
      { type: 'session', session_id: 's1', model: 'm' },
      { type: 'text', delta: 'answers: allow_once', model: 'm' },
      { type: 'done', usage },
    ])
    // Answered once: a second answer is not pending; an id never asked is unknown.
    expect(await d.reply('s1', pause.interaction_id, 'allow_once', new Listener())).toEqual({
      notPending: expect.any(String),
    })
    expect(await d.reply('s1', 'ia_never', 'allow_once', new Listener())).toEqual({ unknown: expect.any(String) })
    expect(d.idle).toBe(true)
    // The question and how it closed are kept with the session (what is still waiting can be listed).
    expect((await new SessionStore(dir).records('s1')).map((r) => [r.type, r.id, r.outcome])).toEqual([
      ['roster.interaction', pause.interaction_id, undefined],
      ['roster.interaction_closed', pause.interaction_id, 'answered'],
    ])
  })

  it('cancels a run whose question outlives its deadline; a late answer is not pending, here or on a restarted host', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'roster-daemon-'))
    const d = daemon({ deadlineMs: 50, dir })
    const first = new Listener()
    d.prompt('s1', 'late?', 'manual', first)
    const pause = (await first.until('pause')) as Extract<RunEvent, { type: 'pause' }>
    await waitFor(() => d.idle, { timeoutMs: 5_000, intervalMs: 5, what: 'the deadline to end the run' })
    expect(await d.reply('s1', pause.interaction_id, 'allow_once', new Listener())).toEqual({
      notPending: expect.stringMatching(/has ended/),
    })
    expect(await daemon({ dir }).reply('s1', pause.interaction_id, 'allow_once', new Listener())).toEqual({
      notPending: expect.stringMatching(/has ended/),
    })
    expect((await new SessionStore(dir).records('s1')).map((r) => [r.type, r.outcome])).toEqual([
      ['roster.interaction', undefined],
      ['roster.interaction_closed', 'ended'],
    ])
  })

  it('steers a prompt for the going turn into it, and refuses the rest: busy for a running turn (409) or too many paused runs (503)', async () => {
    const d = daemon()
    const going = new Listener()
    d.prompt('s1', 'wait', 'self-drive', going)
    expect(d.prompt('s1', 'also this', 'self-drive', new Listener())).toEqual({ steered: true })
    expect(d.prompt('s2', 'me too', 'self-drive', new Listener())).toMatchObject({ status: 409 })
    await going.until('done')
    expect(going.events.filter((e) => e.type === 'text').map((e) => (e as { delta: string }).delta)).toContain(
      'steered: also this',
    )

    const paused = new Listener()
    d.prompt('s3', 'ask?', 'manual', paused)
    const pause = (await paused.until('pause')) as Extract<RunEvent, { type: 'pause' }>
    // The paused session takes no new prompt until answered.
    expect(d.prompt('s3', 'something else', 'self-drive', new Listener())).toMatchObject({
      status: 409,
      busy: expect.stringMatching(/waits for the answer/),
    })
    // A reply while another turn goes is busy too.
    const blocking = new Listener()
    d.prompt('s5', 'wait', 'self-drive', blocking)
    expect(await d.reply('s3', pause.interaction_id, 'cancel', new Listener())).toMatchObject({ status: 409 })
    await blocking.until('done')
    const resumed = new Listener()
    expect(await d.reply('s3', pause.interaction_id, 'cancel', resumed)).toEqual({ resumed: true })
    expect(((await resumed.until('text')) as { delta: string }).delta).toBe('answers: cancel')

    // Past the paused-run limit, no new run starts.
    const full = daemon({ maxPaused: 1 })
    const one = new Listener()
    full.prompt('s1', 'ask?', 'manual', one)
    await one.until('pause')
    expect(full.prompt('s2', 'hello', 'self-drive', new Listener())).toMatchObject({ status: 503 })
  })

  it('when stopped, tells a listening client the run ended, and cancels paused runs; a client leaving cancels its run', async () => {
    // What the intern holds on the host (its MCP sessions) is let go of once its runs have ended.
    const order: string[] = []
    const d = daemon({ onStop: async () => void order.push('let go') })
    const paused = new Listener()
    d.prompt('s1', 'ask?', 'manual', paused)
    const pause = (await paused.until('pause')) as Extract<RunEvent, { type: 'pause' }>
    const going = new Listener()
    d.prompt('s2', 'wait', 'self-drive', going)
    const stopped = d.stop('the intern was suspended')
    expect(await going.until('ended')).toEqual({ type: 'ended', message: 'the intern was suspended' })
    order.push('run ended')
    expect(going.ended).toBe(true)
    // Every run it had has ended.
    await stopped
    expect(order).toEqual(['run ended', 'let go'])
    expect(await d.reply('s1', pause.interaction_id, 'allow_once', new Listener())).toEqual({
      notPending: expect.any(String),
    })

    const leaving = new Listener()
    d.prompt('s3', 'wait', 'self-drive', leaving)
    d.detach(leaving)
    await waitFor(() => d.idle, { timeoutMs: 5_000, intervalMs: 5, what: 'the detached run to end' })
    expect(leaving.types).toEqual(['session'])
  })

  it("runs subagents' turns alongside the intern's, at most maxSubagents at once; their questions are answered meanwhile", async () => {
    const d = new InternDaemon({
      sessions: new SessionStore(mkdtempSync(join(tmpdir(), 'roster-daemon-'))),
      execute,
      deadlineMs: 60_000,
      maxPaused: 4,
      maxSubagents: 2,
      onError: () => {},
    })
    const own = new Listener()
    expect(d.prompt('s1', 'wait', 'self-drive', own)).toEqual({ started: true })
    const sub = { budget_usd: 1 }
    const a = new Listener()
    expect(d.prompt('sub-a', 'ask?', 'manual', a, '0b0a3c1e-0000-4000-8000-00000000000a', sub)).toEqual({
      started: true,
    })
    const b = new Listener()
    expect(d.prompt('sub-b', 'wait', 'self-drive', b, '0b0a3c1e-0000-4000-8000-00000000000b', sub)).toEqual({
      started: true,
    })
    // A third waits for one of them; the intern's own prompts still wait for its own turn.
    expect(
      d.prompt('sub-c', 'wait', 'self-drive', new Listener(), '0b0a3c1e-0000-4000-8000-00000000000c', sub),
    ).toMatchObject({ status: 409 })
    expect(d.prompt('s2', 'hello', 'self-drive', new Listener())).toMatchObject({ status: 409 })
    // A subagent's question is answered while the intern's own turn goes.
    const pause = (await a.until('pause')) as Extract<RunEvent, { type: 'pause' }>
    const resumed = new Listener()
    expect(await d.reply('sub-a', pause.interaction_id, 'allow_once', resumed)).toEqual({ resumed: true })
    expect(await resumed.until('done')).toMatchObject({ type: 'done' })
    expect(resumed.events.find((e) => e.type === 'text')).toMatchObject({ delta: 'answers: allow_once' })
    await d.turnsEnded()
    expect(own.types).toContain('done')
    expect(b.types).toContain('done')
  })

  it('runs a detached turn on when its caller goes; its id again attaches to it (never a second run), or to how it ended', async () => {
    const d = daemon()
    const turnId = '6f0c1c8e-6a3d-4d0e-9a53-2a1f3f0b7c11'
    const first = new Listener()
    expect(d.prompt('s1', 'wait', 'self-drive', first, turnId)).toEqual({ started: true })
    d.detach(first) // the worker holding it died
    // The same turn again is the same run: attached, not started twice.
    const again = new Listener()
    expect(d.prompt('s1', 'wait', 'self-drive', again, turnId)).toEqual({ attached: true })
    // Only one caller follows it at a time.
    expect(d.attach(turnId, new Listener())).toEqual({ taken: expect.any(String) })
    expect(await again.until('done')).toMatchObject({ type: 'done' })
    expect(again.events.filter((e) => e.type === 'text')).toEqual([{ type: 'text', delta: 'answers: ', model: 'm' }])
    // Ended: attaching tells what it said and how it ended; the prompt with its id does not run it again.
    const late = new Listener()
    expect(d.attach(turnId, late)).toEqual({ attached: true })
    expect(late.types).toEqual(['session', 'text', 'done'])
    expect(late.ended).toBe(true)
    const replayed = new Listener()
    expect(d.prompt('s1', 'wait', 'self-drive', replayed, turnId)).toEqual({ attached: true })
    expect(replayed.types).toEqual(['session', 'text', 'done'])
    expect(d.attach('00000000-0000-4000-8000-000000000000', new Listener())).toEqual({ unknown: expect.any(String) })

    // A detached turn paused on a question: attaching tells the question; the answer resumes it.
    const asking = new Listener()
    const pausedTurn = '0b4c1d8e-1a3d-4d0e-9a53-2a1f3f0b7c12'
    d.prompt('s2', 'ask?', 'manual', asking, pausedTurn)
    const pause = (await asking.until('pause')) as Extract<RunEvent, { type: 'pause' }>
    const looking = new Listener()
    expect(d.attach(pausedTurn, looking)).toEqual({ attached: true })
    expect(looking.events.at(-1)).toEqual(pause)
    expect(looking.ended).toBe(true)
    const answering = new Listener()
    expect(await d.reply('s2', pause.interaction_id, 'allow_once', answering)).toEqual({ resumed: true })
    d.detach(answering) // the person who answered leaves: the turn still ends
    await waitFor(() => d.idle, { timeoutMs: 5_000, intervalMs: 5, what: 'the answered turn to end' })
    const after = new Listener()
    d.attach(pausedTurn, after)
    expect(after.events.at(-1)).toMatchObject({ type: 'done' })
    expect(after.events.find((e) => e.type === 'text')).toMatchObject({ delta: 'answers: allow_once' })
  })

  it('keeps sessions under any id a client may send: long, any script, path-like', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'roster-daemon-'))
    const store = new SessionStore(dir)
    const ids = ['ж'.repeat(256), '../../etc/passwd', 'a/b', '.', 'ses_1', 'ses_1 ']
    for (const id of ids) await store.append(id, [{ type: 'message', role: 'user', content: id }])
    for (const id of ids) expect(await store.load(id)).toEqual([{ type: 'message', role: 'user', content: id }])
  })
})
