import {
  RuntimeUnavailableError,
  slackEventOf,
  slackSessionId,
  updateSlackEvent,
  type JobPayload,
  type NewSlackEvent,
} from '@roster/shared'
import type { JobContext, WorkerDeps } from '../context.js'
import { posterFor, revokedBy, type SlackPoster } from '../slack/poster.js'
import { HOST_ANSWER_TIMEOUT_MS, relayRun } from '../slack/relay.js'

// A Slack message's turn: a reply in its thread, posted first as a placeholder (its ts recorded, so
// a retried job updates it rather than posting another), then updated as the intern's text streams
// (about once a second, within Slack's rate limits), and a last time with the whole answer. A job
// that finds its turn already running was cut off midway (a worker died): the turn is not run twice
// (what the intern did stands); the thread is told to ask again.

export async function handle(deps: WorkerDeps, payload: JobPayload<'slack.turn'>, ctx: JobContext) {
  const { internId, eventId } = payload
  const event = await slackEventOf(deps.db, internId, eventId)
  if (!event || event.state === 'done') return 'done'
  const link = event.link
  const slack = posterFor(deps.config, link, event.channel, event.threadTs)
  if (!slack) return finish(deps, event, 'revoked')
  try {
    let replyTs = event.replyTs
    if (!replyTs) {
      replyTs = await slack.post('…')
      await updateSlackEvent(deps.db, internId, eventId, { replyTs })
    }
    if (event.state === 'running') {
      await slack.update(replyTs, 'My answer was cut off (Roster restarted while I worked). Ask me again to continue.')
      return finish(deps, event, 'interrupted')
    }
    const status = link.intern.status
    if (status !== 'running') {
      await slack.update(
        replyTs,
        status === 'stopped'
          ? 'I am suspended: provision me to talk here again.'
          : `I am not running (status ${status}).`,
      )
      return finish(deps, event, `not running: ${status}`)
    }
    await updateSlackEvent(deps.db, internId, eventId, { state: 'running' })
    slack.showWorking()
    const outcome = await runTurn(deps, event, slack, replyTs)
    return finish(deps, event, outcome)
  } catch (err) {
    if (await revokedBy(deps.db, internId, err)) return finish(deps, event, 'revoked')
    if (ctx.finalAttempt) await finish(deps, event, `failed: ${(err as Error).message}`)
    throw err
  }
}

async function finish(deps: WorkerDeps, event: { internId: string; eventId: string }, outcome: string) {
  await updateSlackEvent(deps.db, event.internId, event.eventId, { state: 'done', outcome: outcome.slice(0, 500) })
  return outcome
}

/** Runs the turn on the intern's host and streams its text into the reply. */
async function runTurn(deps: WorkerDeps, event: NewSlackEvent, slack: SlackPoster, replyTs: string): Promise<string> {
  const placed = await deps.runtime.placement(event.internId)
  if (!placed || placed.status !== 'running') {
    await slack.update(replyTs, 'I am not running right now; try again shortly.')
    return 'not placed'
  }
  const abort = new AbortController()
  const sessionId = slackSessionId(event.teamId, event.channel, event.threadTs)
  let outcome
  try {
    outcome = await deps.runtime.chat(
      placed,
      event.internId,
      {
        session_id: sessionId,
        // The prompt names who asked: many people talk to one intern in a channel.
        message: `<@${event.userId}> says:\n${event.text}`,
        // What it would do on someone's behalf is asked in the thread, as a card (docs/slack.md).
        approval_mode: 'manual',
      },
      abort.signal,
      HOST_ANSWER_TIMEOUT_MS,
    )
  } catch (err) {
    if (err instanceof RuntimeUnavailableError) {
      await slack.update(replyTs, 'I could not be reached; try again shortly.')
      return 'unreachable'
    }
    throw err
  }
  if (outcome.kind === 'steered') {
    await slack.update(replyTs, '_(added to the answer I am working on)_')
    return 'steered'
  }
  if (outcome.kind === 'refused') {
    await slack.update(
      replyTs,
      outcome.error.error === 'busy'
        ? 'I am busy with another conversation; ask again shortly.'
        : outcome.error.message,
    )
    return `refused: ${outcome.error.error}`
  }
  return relayRun(deps, { internId: event.internId, eventId: event.eventId, sessionId }, slack, replyTs, outcome.events)
}
