import {
  RuntimeUnavailableError,
  revokeSlackLink,
  slackEventOf,
  slackSessionId,
  unsealSlackSecrets,
  updateSlackEvent,
  type JobPayload,
  type NewSlackEvent,
} from '@roster/shared'
import type { JobContext, WorkerDeps } from '../context.js'
import { SlackPoster, isRevocation, setThreadStatus } from '../slack/poster.js'
import { relayRun } from '../slack/relay.js'

// A Slack message's turn: a reply in its thread, posted first as a placeholder (its ts recorded, so
// a retried job updates it rather than posting another), then updated as the intern's text streams
// (about once a second, within Slack's rate limits), and a last time with the whole answer. A job
// that finds its turn already running was cut off midway (a worker died): the turn is not run twice
// (what the intern did stands); the thread is told to ask again.

/** How long the host may take to start the turn (the chat route's RUNTIME_ANSWER_TIMEOUT_MS default). */
const HOST_ANSWER_TIMEOUT_MS = 30_000

export async function handle(deps: WorkerDeps, payload: JobPayload<'slack.turn'>, ctx: JobContext) {
  const { internId, eventId } = payload
  const event = await slackEventOf(deps.db, internId, eventId)
  if (!event || event.state === 'done') return 'done'
  const link = event.link
  if (link.state !== 'installed') return finish(deps, event, 'revoked')
  if (!deps.config.VAULT_MASTER_KEY) throw new Error('Slack turns need VAULT_MASTER_KEY to open the bot token')
  const token = unsealSlackSecrets(deps.config.VAULT_MASTER_KEY, internId, link.sealed).bot_token
  if (!token) return finish(deps, event, 'revoked')
  const slack = new SlackPoster(token, deps.config.SLACK_API_URL, event.channel, event.threadTs)
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
    await setThreadStatus(token, deps.config.SLACK_API_URL, event.channel, event.threadTs, 'is working on it…')
    const outcome = await runTurn(deps, event, slack, replyTs)
    return finish(deps, event, outcome)
  } catch (err) {
    if (isRevocation(err)) {
      await revokeSlackLink(deps.db, internId, `Slack refused the bot token (${(err as Error).message}); install again`)
      return finish(deps, event, 'revoked')
    }
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
