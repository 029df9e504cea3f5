import { SLACK_OPEN_FORM, type JobPayload } from '@roster/shared'
import { RuntimeUnavailableError } from '@roster/shared/fleet'
import {
  claimSlackQuestion,
  expireSlackQuestion,
  slackQuestionOf,
  mayAnswerSlackQuestion,
} from '@roster/shared/repositories'
import type { JobContext, WorkerDeps } from '../context.js'
import { decidedCard, expiredCard, questionText, type Question } from '../slack/cards.js'
import { posterFor, revokedBy } from '../slack/poster.js'
import { HOST_ANSWER_TIMEOUT_MS, relayRun } from '../slack/relay.js'
import { isReportEvent } from '../slack/turn-report.js'

// A click on a question's card: accepted from the thread's starter or one of the link's approvers
// (anyone else is told so, in a message only they see); the question is taken once (a second click
// finds it answered), the card says who decided and when, and the answer goes to the paused run,
// whose continuation streams into a new reply in the thread. A run that ended meanwhile (its
// deadline passed, the intern was suspended): the card says it expired. A question of a turn no one
// typed (its report's thread: apps/worker/src/slack/turn-report.ts) has no starter: the approvers
// answer it, and the turn's own job reports how it goes on.

/** Who may answer, as told to someone who may not: the thread's starter (a report's thread has none) or the approvers. */
function whoMayAnswer(starter: string, approvers: boolean): string {
  if (!starter)
    return approvers
      ? 'Only the intern’s approvers can answer this here (anyone may in Roster’s inbox).'
      : 'This is answered in Roster (the intern’s questions), not here: the intern has no approvers in Slack.'
  return `Only <@${starter}>${approvers ? ' or one of the intern’s approvers' : ''} can answer this.`
}

export async function handle(deps: WorkerDeps, payload: JobPayload<'slack.click'>, _ctx: JobContext) {
  try {
    return await answerClick(deps, payload)
  } catch (err) {
    if (await revokedBy(deps.db, payload.internId, err)) return 'revoked'
    throw err
  }
}

async function answerClick(deps: WorkerDeps, payload: JobPayload<'slack.click'>) {
  const { internId, interactionId, user, answer } = payload
  const q = await slackQuestionOf(deps.db, internId, interactionId)
  if (!q) return 'gone'
  const { event } = q
  const link = event.link
  const slack = posterFor(deps.config, link, event.channel, event.threadTs)
  if (!slack) return 'revoked'
  const question = q.question as Question
  if (!mayAnswerSlackQuestion(q, user)) {
    await slack.ephemeral(user, whoMayAnswer(q.threadStarter, link.approvers.length > 0))
    return 'refused'
  }
  // Opening the form is the API's (within Slack's 3 seconds); it is no answer.
  if (answer === SLACK_OPEN_FORM) return 'form'
  if (!(await claimSlackQuestion(deps.db, internId, interactionId, answer, user))) return 'answered already'
  if (q.cardTs)
    await slack.updateCard(q.cardTs, decidedCard(question, answer, user, new Date()), questionText(question))
  const expired = async () => {
    await expireSlackQuestion(deps.db, internId, interactionId)
    if (q.cardTs) await slack.updateCard(q.cardTs, expiredCard(question), questionText(question))
    return 'expired'
  }
  const placed = await deps.runtime.placement(internId)
  if (!placed || placed.status !== 'running') return expired()
  let outcome
  const abort = new AbortController()
  try {
    outcome = await deps.runtime.chat(
      placed,
      internId,
      { session_id: q.sessionId, reply: { interaction_id: interactionId, content: answer } },
      abort.signal,
      HOST_ANSWER_TIMEOUT_MS,
    )
  } catch (err) {
    if (err instanceof RuntimeUnavailableError) return expired()
    throw err
  }
  if (outcome.kind === 'refused')
    return ['interaction_not_pending', 'interaction_unknown'].includes(outcome.error.error)
      ? expired()
      : `refused: ${outcome.error.error}`
  if (outcome.kind !== 'stream') return outcome.kind
  // A turn no one typed goes on detached on its host: its own job follows it and reports its end.
  if (isReportEvent(event.eventId)) {
    abort.abort()
    return 'answered'
  }
  // The run's continuation, in a message of its own below the card.
  const replyTs = await slack.post('…', `${event.eventId}:${interactionId}`)
  const run = { internId, eventId: event.eventId, sessionId: q.sessionId }
  const { text, outcome: ended } = await relayRun(deps, run, slack, replyTs, outcome.events)
  await slack.update(replyTs, text)
  return ended
}
