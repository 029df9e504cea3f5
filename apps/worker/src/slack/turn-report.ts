import {
  expireSlackQuestion,
  insertSlackQuestion,
  pendingSlackQuestions,
  recordReportThread,
  setQuestionCard,
  setTurnSlack,
  slackLinkOf,
  slackQuestionOf,
  type TurnRow,
} from '@roster/shared/repositories'
import type { WorkerDeps } from '../context.js'
import { closedCard, parsedQuestion, questionCard, questionText, type Question } from './cards.js'
import { posterFor, revokedBy, type SlackPoster } from './poster.js'

// A turn no one typed, reported in the Slack conversation its schedule or trigger names
// (slack_channel): one message of its own, posted when it first has something to say (a question,
// or its end) and made its whole reply when it ends; its questions as cards in that message's
// thread. Nobody started that thread: the intern's approvers answer them (or anyone in chat or the
// console's inbox). The message carries the turn's id in its metadata, so a post whose answer was
// lost is found, not posted twice; its end is kept `pending` with the turn's end and posted after,
// so Slack being away (or this worker dying) loses no report. The thread is recorded as the
// intern's (a slack_events row, done): a person's reply in it continues the turn's session.

/** The event id a turn's report and its questions are kept under. */
export const reportEventId = (turnId: string) => `turn:${turnId}`
export const isReportEvent = (eventId: string) => eventId.startsWith('turn:')

/** What a turn's report is headed with: where it came from. */
function header(turn: TurnRow): string {
  if (turn.schedule) return `*${turn.schedule.name}* (scheduled${turn.source === 'manual' ? ', run by hand' : ''})`
  if (turn.trigger) return `*${turn.trigger.name}* (webhook)`
  return `*${turn.source}* turn`
}

/** The report as it reads: the header, then the reply, or where the turn stands. */
function reportText(turn: TurnRow, body: string): string {
  return `${header(turn)}\n\n${body}`
}

/** The poster for the turn's conversation (`threadTs` '': the conversation itself), or why there is none. */
async function reporter(deps: WorkerDeps, turn: TurnRow, threadTs = '') {
  const link = await slackLinkOf(deps.db, turn.internId)
  if (!link) return { why: 'the intern has no Slack app any more' }
  const slack = posterFor(deps.config, link, turn.slackChannel!, threadTs)
  if (!slack) return { why: `its Slack app is not installed (${link.state})` }
  return { slack, link }
}

/**
 * Makes the turn's report message read `text`: updated when it is posted (or found), else posted;
 * its thread then recorded as the intern's. Its ts.
 */
async function placeReport(
  deps: WorkerDeps,
  turn: TurnRow,
  link: { teamId: string | null },
  slack: SlackPoster,
  text: string,
): Promise<string> {
  const eventId = reportEventId(turn.id)
  let ts =
    turn.slackTs ??
    (turn.slackPostBegunAt ? await slack.findReply(eventId, turn.slackPostBegunAt.getTime()) : undefined)
  if (ts) await slack.update(ts, text)
  else {
    turn.slackPostBegunAt = new Date()
    await setTurnSlack(deps.db, turn.id, { slackPostBegunAt: turn.slackPostBegunAt })
    ts = await slack.post(text, eventId)
  }
  if (ts !== turn.slackTs) {
    await setTurnSlack(deps.db, turn.id, { slackTs: ts })
    turn.slackTs = ts
  }
  await recordReportThread(deps.db, {
    internId: turn.internId,
    eventId,
    teamId: link.teamId ?? '',
    channel: turn.slackChannel!,
    threadTs: ts,
    sessionId: turn.sessionId,
  })
  return ts
}

/**
 * A question the turn waits on, into Slack: its report (saying so), its thread recorded as the
 * intern's, and the question's card in it, once. Slack away: thrown (the job looks in again, and
 * tries again then). A link gone or not installed: nothing (the question is in Roster's inbox).
 */
export async function reportQuestion(
  deps: WorkerDeps,
  turn: TurnRow,
  question: { interaction_id: string; arguments: string },
  soFar: string,
) {
  const found = await reporter(deps, turn)
  if ('why' in found) return
  const { slack, link } = found
  try {
    const known = await slackQuestionOf(deps.db, turn.internId, question.interaction_id)
    if (known?.cardTs) return
    const waiting = `${soFar ? `${soFar}\n\n` : ''}_Waiting for an answer to the question in this thread._`
    const root = await placeReport(deps, turn, link, slack, reportText(turn, waiting))
    const eventId = reportEventId(turn.id)
    const asked = parsedQuestion(question.arguments)
    await insertSlackQuestion(deps.db, {
      internId: turn.internId,
      interactionId: question.interaction_id,
      eventId,
      sessionId: turn.sessionId,
      question: asked,
    })
    const inThread = posterFor(deps.config, link, turn.slackChannel!, root)!
    const cardTs = await inThread.postCard(questionCard(question.interaction_id, asked), questionText(asked))
    await setQuestionCard(deps.db, turn.internId, question.interaction_id, cardTs)
  } catch (err) {
    if (await revokedBy(deps.db, turn.internId, err)) return
    throw err
  }
}

/**
 * An ended turn's report, posted (kept `pending` with its end until then): its reply, or how it
 * ended; a card still asking is closed. Slack away: thrown (the job is tried again and posts it then).
 */
export async function reportEnd(deps: WorkerDeps, turn: TurnRow) {
  const found = await reporter(deps, turn)
  if ('why' in found) {
    await setTurnSlack(deps.db, turn.id, { slackReport: `not posted: ${found.why}` })
    return
  }
  const { slack, link } = found
  const how =
    turn.state === 'done'
      ? turn.output || '_(it said nothing)_'
      : `${turn.output ? `${turn.output}\n\n` : ''}_The turn ${turn.state}${turn.reason ? `: ${turn.reason}` : ''}._`
  try {
    const root = await placeReport(deps, turn, link, slack, reportText(turn, how))
    const inThread = posterFor(deps.config, link, turn.slackChannel!, root)!
    for (const q of await pendingSlackQuestions(deps.db, turn.internId, reportEventId(turn.id))) {
      const asked = q.question as Question
      if (q.cardTs) await inThread.updateCard(q.cardTs, closedCard(asked, turn.state), questionText(asked))
      await expireSlackQuestion(deps.db, turn.internId, q.interactionId)
    }
  } catch (err) {
    if (await revokedBy(deps.db, turn.internId, err)) {
      await setTurnSlack(deps.db, turn.id, { slackReport: 'not posted: Slack refused the bot token' })
      return
    }
    throw err
  }
  await setTurnSlack(deps.db, turn.id, { slackReport: 'posted' })
}
