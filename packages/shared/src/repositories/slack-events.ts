import type { Db, Prisma } from '../db.js'
import { enqueueInTx } from './outbox.js'

// slack_events: the Slack messages that became turns, by (intern, Slack's event_id), with the
// reply's message ts once posted, and the reply's text while it waits to be posted.

type Tx = Db | Prisma.TransactionClient

/** A file shared with a message, as a turn keeps it: fetched with the bot token before the turn runs. */
export interface SlackFile {
  id: string
  name: string
  size: number | null
  url: string | null
}

export interface NewSlackEvent {
  internId: string
  eventId: string
  teamId: string
  channel: string
  threadTs: string
  sessionId: string
  userId: string
  text: string
  files: SlackFile[]
}

/** Records the event and queues its turn, once: false when Slack delivered it before (a retry). */
export function recordSlackEvent(db: Db, e: NewSlackEvent): Promise<boolean> {
  return db.$transaction(async (tx) => {
    const made = await tx.slackEvent.createMany({
      data: [{ ...e, files: e.files as unknown as Prisma.InputJsonValue }],
      skipDuplicates: true,
    })
    if (made.count === 0) return false
    await enqueueInTx(tx, 'slack.turn', { internId: e.internId, eventId: e.eventId })
    return true
  })
}

export function slackEventOf(db: Tx, internId: string, eventId: string) {
  return db.slackEvent.findUnique({
    where: { internId_eventId: { internId, eventId } },
    include: { link: { include: { intern: { select: { status: true, provisionGeneration: true } } } } },
  })
}

/**
 * The session of a thread the intern takes part in (one of its messages was a turn of the intern's,
 * or the intern started it with a report of its own): its first event's; undefined when the intern
 * is not in it, null when its first event is older than sessions kept (the thread's own, then).
 */
export async function slackThreadSession(
  db: Tx,
  internId: string,
  channel: string,
  threadTs: string,
): Promise<string | null | undefined> {
  const first = await db.slackEvent.findFirst({
    where: { internId, channel, threadTs },
    orderBy: [{ createdAt: 'asc' }, { eventId: 'asc' }],
    select: { sessionId: true },
  })
  return first ? first.sessionId : undefined
}

/**
 * A thread the intern started itself (a background turn's report, `eventId` `turn:{id}`): kept as
 * an event already done, so its questions have a thread, and a person's reply in it continues the
 * turn's session. Nobody started it: only the link's approvers answer its questions.
 */
export async function recordReportThread(
  db: Tx,
  e: { internId: string; eventId: string; teamId: string; channel: string; threadTs: string; sessionId: string },
) {
  await db.slackEvent.createMany({
    data: [{ ...e, userId: '', text: '', state: 'done', outcome: 'report' }],
    skipDuplicates: true,
  })
}

export async function updateSlackEvent(
  db: Tx,
  internId: string,
  eventId: string,
  set: {
    state?: 'received' | 'running' | 'answered' | 'done'
    replyTs?: string
    replyText?: string | null
    postBegunAt?: Date
    outcome?: string
  },
) {
  await db.slackEvent.update({
    where: { internId_eventId: { internId, eventId } },
    data: { ...set, updatedAt: new Date() },
  })
}

/**
 * Whether a message that came earlier in the same thread still has its reply to post: a thread's
 * replies are posted in the order its messages came, even after Slack was away.
 */
export async function earlierReplyPending(
  db: Tx,
  e: { internId: string; eventId: string; channel: string; threadTs: string; createdAt: Date },
): Promise<boolean> {
  const n = await db.slackEvent.count({
    where: {
      internId: e.internId,
      channel: e.channel,
      threadTs: e.threadTs,
      state: { not: 'done' },
      OR: [{ createdAt: { lt: e.createdAt } }, { createdAt: e.createdAt, eventId: { lt: e.eventId } }],
    },
  })
  return n > 0
}
