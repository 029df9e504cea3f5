import type { Db, Prisma } from '../db.js'
import { enqueueInTx } from './outbox.js'

// slack_questions: a turn's questions posted in Slack as cards, and how each was answered.

type Tx = Db | Prisma.TransactionClient

export async function insertSlackQuestion(
  db: Tx,
  q: { internId: string; interactionId: string; eventId: string; sessionId: string; question: object },
) {
  await db.slackQuestion.createMany({ data: [q], skipDuplicates: true })
}

export async function setQuestionCard(db: Tx, internId: string, interactionId: string, cardTs: string) {
  await db.slackQuestion.update({ where: { internId_interactionId: { internId, interactionId } }, data: { cardTs } })
}

/** A question with its thread's event and link. */
export async function slackQuestionOf(db: Tx, internId: string, interactionId: string) {
  const q = await db.slackQuestion.findUnique({
    where: { internId_interactionId: { internId, interactionId } },
    include: { event: { include: { link: true } } },
  })
  if (!q) return null
  // The thread's starter: whose message first brought the intern into the thread (its oldest event),
  // not whoever's message in it raised this question.
  const first = await db.slackEvent.findFirst({
    where: { internId, channel: q.event.channel, threadTs: q.event.threadTs },
    orderBy: [{ createdAt: 'asc' }, { eventId: 'asc' }],
    select: { userId: true },
  })
  return { ...q, threadStarter: first?.userId ?? q.event.userId }
}

/**
 * Who may answer a question the intern asked in Slack (docs/slack.md): the person who started the
 * thread and the intern's approvers. Anyone else may post in the thread, and even raise a question
 * with their message, but not decide it.
 */
export const mayAnswerSlackQuestion = (
  q: { threadStarter: string; event: { link: { approvers: string[] } } },
  user: string,
) => user === q.threadStarter || q.event.link.approvers.includes(user)

/** Takes the question for an answer, once: false when it was answered or expired already. */
export async function claimSlackQuestion(db: Tx, internId: string, interactionId: string, answer: string, by: string) {
  const n = await db.slackQuestion.updateMany({
    where: { internId, interactionId, state: 'pending' },
    data: { state: 'answered', answer, answeredBy: by, answeredAt: new Date() },
  })
  return n.count === 1
}

/** The questions of an event's thread still waiting for an answer there. */
export const pendingSlackQuestions = (db: Tx, internId: string, eventId: string) =>
  db.slackQuestion.findMany({ where: { internId, eventId, state: 'pending' } })

export async function expireSlackQuestion(db: Tx, internId: string, interactionId: string) {
  await db.slackQuestion.updateMany({ where: { internId, interactionId }, data: { state: 'expired' } })
}

/** A click on a card: its job queued (the outbox), once per Slack action. */
export async function recordSlackClick(
  db: Db,
  click: { internId: string; interactionId: string; user: string; answer: string; actionTs: string },
) {
  await db.$transaction((tx) => enqueueInTx(tx, 'slack.click', click))
}
