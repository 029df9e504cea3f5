import { ENDED_TURN_STATES, type JobPayload, type RunEvent } from '@roster/shared'
import { RuntimeUnavailableError, type ChatOutcome } from '@roster/shared/fleet'
import { endTurn, moveTurn, nextQueuedTurn, setTurnSlack, turnOf, type TurnRow } from '@roster/shared/repositories'
import type { JobContext, WorkerDeps } from '../context.js'
import { HOST_ANSWER_TIMEOUT_MS } from '../slack/relay.js'
import { reportEnd, reportQuestion } from '../slack/turn-report.js'

// A turn no person typed (a schedule's fire, a webhook's delivery), run on the intern's host. It
// waits its place: the intern runs one turn at a time (its subagents' alongside it, in an order of
// their own), so a queued turn starts only when it is the intern's oldest queued one and the host
// takes it (busy: the job gives its slot back and comes again shortly; it never holds a worker
// while it waits), and expires past INTERN_TURN_WAIT_MS.
// On the host it runs detached, by its id: a worker that dies while it runs does not end it, and
// the job, tried again, attaches to it (or to how it ended) instead of starting it twice. A turn
// whose host lost it (the host died, the intern moved) is kept as interrupted, never run again: what
// it did stands. A question it asks waits, like any run's, for a person to answer it in chat (it is
// listed with the others: GET /interns/questions, the console's inbox); the job looks in on it
// until it ends. A turn whose schedule or trigger names a Slack conversation reports there: its
// question as a card (apps/worker/src/slack/turn-report.ts), its end once it has one.

/** A busy intern is asked again after this long (jittered, so the turns queued behind it do not ask at once). */
const busyAgain = () => 300 + Math.random() * 700
/** An intern not running (suspended, moving) or its host away: asked again after this long. */
const AWAY_AGAIN_MS = 5_000
/** A turn waiting on a question (or followed by the person who answered it) is looked in on this often. */
const WAITING_AGAIN_MS = 10_000
/** The most of a turn's reply kept on its row. */
const OUTPUT_KEPT = 65_536
/**
 * A report Slack did not take is tried again for at most this long after the turn ended, each wait
 * half the time since (from SLACK_BACKOFF_MS, at most REPORT_WAIT_MAX_MS): the waits double.
 */
const REPORT_TRIED_MS = 24 * 3_600_000
const REPORT_WAIT_MAX_MS = 5 * 60_000

export async function handle(deps: WorkerDeps, { turnId }: JobPayload<'intern.turn'>, ctx: JobContext) {
  const turn = await turnOf(deps.db, turnId)
  if (!turn) return 'gone'
  if (ENDED_TURN_STATES.has(turn.state)) return turn.slackReport === 'pending' ? report(deps, turn, ctx) : turn.state
  return turn.state === 'queued' ? start(deps, turn, ctx) : follow(deps, turn, ctx)
}

/** An ended turn's report in Slack, posted; Slack away, tried again a while (the job gives its slot back meanwhile). */
async function report(deps: WorkerDeps, turn: TurnRow, ctx: JobContext): Promise<string> {
  try {
    await reportEnd(deps, turn)
  } catch (err) {
    const since = Date.now() - (turn.endedAt ?? turn.updatedAt).getTime()
    if (since < REPORT_TRIED_MS) {
      ctx.log.warn({ err, turnId: turn.id }, 'Slack did not take a turn’s report; trying again later')
      return ctx.retryLater(Math.min(Math.max(since / 2, deps.config.SLACK_BACKOFF_MS), REPORT_WAIT_MAX_MS))
    }
    await setTurnSlack(deps.db, turn.id, {
      slackReport: `not posted: Slack did not take it (${(err as Error).message})`,
    })
  }
  return turn.state
}

async function ended(
  deps: WorkerDeps,
  ctx: JobContext,
  turn: TurnRow,
  state: string,
  set: Parameters<typeof moveTurn>[4] = {},
) {
  const moved = await endTurn(
    deps.db,
    turn.id,
    ['queued', 'running', 'waiting'],
    state,
    { ...set, endedAt: new Date(), ...(turn.slackChannel ? { slackReport: 'pending' } : {}) },
    turn.source === 'subagent' && turn.parentSessionId ? reportOf(turn, state, set) : undefined,
  )
  if (moved) {
    deps.metrics?.backgroundTurns.inc({ source: turn.source, outcome: state })
    deps.wakeRelay?.()
    if (turn.slackChannel) {
      const now = await turnOf(deps.db, turn.id)
      if (now?.slackReport === 'pending') await report(deps, now, ctx)
    }
  }
  return state
}

/** What the intern is told, in the session that started a subagent, when the subagent ends. */
function reportOf(turn: TurnRow, state: string, set: { output?: string | null; reason?: string | null }) {
  const said = set.output ?? turn.output
  return {
    internId: turn.internId,
    source: 'report' as const,
    sessionId: turn.parentSessionId!,
    prompt: [
      `Your subagent ${turn.id} (its session: ${turn.sessionId}) has ended: ${state}${set.reason ? `, ${set.reason}` : ''}.`,
      said ? `What it said:\n${said}` : 'It said nothing.',
      'Carry on with what you started it for.',
    ].join('\n\n'),
    approvalMode: turn.approvalMode,
  }
}

async function start(deps: WorkerDeps, turn: TurnRow, ctx: JobContext): Promise<string> {
  const waited = Date.now() - turn.createdAt.getTime()
  if (waited > deps.config.INTERN_TURN_WAIT_MS)
    return ended(deps, ctx, turn, 'expired', {
      reason: `waited ${Math.round(waited / 1000)} s for the intern (${turn.intern.status}), longer than INTERN_TURN_WAIT_MS`,
    })
  if (turn.intern.status !== 'running') return ctx.retryLater(AWAY_AGAIN_MS)
  // The intern's turns run in the order they were queued; its subagents' alongside, in theirs.
  const head = await nextQueuedTurn(deps.db, turn.internId, turn.source === 'subagent')
  if (head && head.id !== turn.id) return ctx.retryLater(busyAgain())
  const placed = await deps.runtime.placement(turn.internId)
  if (!placed || placed.status !== 'running') return ctx.retryLater(AWAY_AGAIN_MS)
  if (!(await moveTurn(deps.db, turn.id, ['queued'], 'running', { startedAt: new Date() }))) return 'taken'
  const requeue = async (ms: number): Promise<never> => {
    await moveTurn(deps.db, turn.id, ['running'], 'queued', { startedAt: null })
    return ctx.retryLater(ms)
  }
  let outcome: ChatOutcome
  try {
    outcome = await deps.runtime.chat(
      placed,
      turn.internId,
      {
        session_id: turn.sessionId,
        message: turn.prompt,
        approval_mode: turn.approvalMode === 'self-drive' ? 'self-drive' : 'manual',
        turn_id: turn.id,
        ...(turn.source === 'subagent'
          ? { subagent: { model: turn.model ?? undefined, budget_usd: turn.budgetUsd ?? undefined } }
          : {}),
      },
      new AbortController().signal,
      HOST_ANSWER_TIMEOUT_MS,
    )
  } catch (err) {
    // Not taken (the host away, or slow to answer): queued again; if it did take it, the next start attaches.
    if (err instanceof RuntimeUnavailableError) return requeue(AWAY_AGAIN_MS)
    throw err
  }
  if (outcome.kind === 'refused') {
    const code = outcome.error.error
    if (code === 'busy' || code === 'busy_paused') return requeue(busyAgain())
    if (code === 'intern_not_ready' || code === 'draining' || code === 'placement_stale') return requeue(AWAY_AGAIN_MS)
    return ended(deps, ctx, turn, 'failed', { reason: `the intern's host refused the turn: ${outcome.error.message}` })
  }
  if (outcome.kind === 'steered')
    return ended(deps, ctx, turn, 'failed', { reason: 'the host steered it into another turn' })
  return relayTurn(deps, turn, outcome.events, ctx)
}

/** A turn begun before (its worker died meanwhile) or waiting on a question: attached to on its host. */
async function follow(deps: WorkerDeps, turn: TurnRow, ctx: JobContext): Promise<string> {
  const placed = await deps.runtime.placement(turn.internId)
  if (!placed)
    return ended(deps, ctx, turn, 'interrupted', {
      reason: 'the intern left its host while the turn ran; it was not run again',
    })
  let outcome: ChatOutcome
  try {
    outcome = await deps.runtime.chat(
      placed,
      turn.internId,
      { attach: turn.id },
      new AbortController().signal,
      HOST_ANSWER_TIMEOUT_MS,
    )
  } catch (err) {
    if (err instanceof RuntimeUnavailableError) return ctx.retryLater(AWAY_AGAIN_MS)
    throw err
  }
  if (outcome.kind === 'refused') {
    const code = outcome.error.error
    if (code === 'turn_attached') return ctx.retryLater(WAITING_AGAIN_MS)
    if (code === 'draining' || code === 'placement_stale') return ctx.retryLater(AWAY_AGAIN_MS)
    return ended(deps, ctx, turn, 'interrupted', {
      reason: `the turn was cut off (its host restarted, or the intern moved); it was not run again: ${outcome.error.message}`,
    })
  }
  if (outcome.kind === 'steered') return ctx.retryLater(WAITING_AGAIN_MS)
  return relayTurn(deps, turn, outcome.events, ctx)
}

/** Reads a turn's events to its end (kept), or to the question it waits on (looked in on later). */
async function relayTurn(
  deps: WorkerDeps,
  turn: TurnRow,
  events: AsyncIterable<RunEvent>,
  ctx: JobContext,
): Promise<string> {
  let text = ''
  const output = () => (text ? text.slice(0, OUTPUT_KEPT) : null)
  for await (const e of events) {
    if (e.type === 'text') text += e.delta
    else if (e.type === 'done')
      return ended(deps, ctx, turn, 'done', { output: output(), usage: e.usage, interactionId: null, reason: null })
    else if (e.type === 'error') return ended(deps, ctx, turn, 'failed', { output: output(), reason: e.message })
    else if (e.type === 'ended') return ended(deps, ctx, turn, 'interrupted', { output: output(), reason: e.message })
    else if (e.type === 'pause') {
      if (turn.state !== 'waiting' || turn.interactionId !== e.interaction_id) {
        await moveTurn(deps.db, turn.id, ['running', 'waiting'], 'waiting', {
          interactionId: e.interaction_id,
          output: output(),
        })
        deps.metrics?.backgroundTurns.inc({ source: turn.source, outcome: 'waiting' })
      }
      // Slack away: the card is posted at a later look-in (the question waits in Roster's inbox meanwhile).
      if (turn.slackChannel)
        await reportQuestion(deps, turn, e, text).catch((err: unknown) =>
          ctx.log.warn(
            { err, turnId: turn.id },
            'Slack did not take a turn’s question; trying again at the next look-in',
          ),
        )
      return ctx.retryLater(WAITING_AGAIN_MS)
    }
  }
  // The stream broke off with no end (the host went, or the connection): tried again, the job attaches.
  throw new Error(`turn ${turn.id}: its events ended before the turn did`)
}
