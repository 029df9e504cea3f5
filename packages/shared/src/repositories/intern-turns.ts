import type { Db, Prisma } from '../db.js'
import { enqueueInTx } from './outbox.js'

// intern_turns: the turns no person typed (a schedule's fire, a webhook's delivery), each once (per
// schedule and fire time, per trigger and delivery), queued behind the intern's running turn and
// kept with how it went: its state, its reply, its usage.

type Tx = Db | Prisma.TransactionClient

export interface NewTurn {
  internId: string
  source: 'schedule' | 'webhook' | 'manual' | 'subagent' | 'report'
  parentSessionId?: string
  model?: string
  budgetUsd?: number
  scheduleId?: string
  triggerId?: string
  scheduledFor?: Date
  deliveryId?: string
  sessionId: string
  prompt: string
  approvalMode: string
  /** The Slack conversation it reports in. */
  slackChannel?: string | null
}

export type TurnRow = NonNullable<Awaited<ReturnType<typeof turnOf>>>

export type Admitted =
  /** Queued: its job will run it. */
  | { kind: 'queued'; id: string }
  /** Kept as refused: the intern's queue was full. */
  | { kind: 'refused'; id: string; reason: string }
  /** Kept as skipped (a missed fire its schedule skips). */
  | { kind: 'skipped'; id: string }
  /** That fire or delivery has its turn already. */
  | { kind: 'duplicate'; id: string; state: string }
  /** The claim said no: that fire was dealt with already (a later one covered it). */
  | { kind: 'superseded' }

/**
 * Records a turn, once, and queues its job in the same transaction: refused (kept, with why) when
 * `queueLimit` turns of the intern already wait; `skip` keeps it as skipped, with `skip` as why.
 * Admissions for one intern take turns (an advisory lock), so the limit holds under concurrency.
 */
export function admitTurn(
  db: Db,
  turn: NewTurn,
  queueLimit: number,
  skip?: string,
  /**
   * Done first, in the same transaction: false, and nothing is recorded (a schedule's fire claimed:
   * of two workers firing it, or firing it and catching it up, one goes on).
   */
  claim?: (tx: Prisma.TransactionClient) => Promise<boolean>,
): Promise<Admitted> {
  return db.$transaction(async (tx) => {
    if (claim && !(await claim(tx))) return { kind: 'superseded' }
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${`intern-turns:${turn.internId}`}, 0))`
    const existing = await tx.internTurn.findFirst({
      where:
        turn.scheduleId && turn.scheduledFor
          ? { scheduleId: turn.scheduleId, scheduledFor: turn.scheduledFor }
          : turn.triggerId && turn.deliveryId
            ? { triggerId: turn.triggerId, deliveryId: turn.deliveryId }
            : { id: '00000000-0000-0000-0000-000000000000' },
      select: { id: true, state: true },
    })
    if (existing) return { kind: 'duplicate', ...existing }
    const waiting = skip ? 0 : await tx.internTurn.count({ where: { internId: turn.internId, state: 'queued' } })
    const refused =
      waiting >= queueLimit
        ? `the intern has ${waiting} turns queued already, as many as it may (INTERN_TURN_QUEUE); this one was not run`
        : undefined
    const row = await tx.internTurn.create({
      data: {
        ...turn,
        state: skip ? 'skipped' : refused ? 'refused' : 'queued',
        reason: skip ?? refused ?? null,
        ...(skip || refused ? { endedAt: new Date() } : {}),
      },
      select: { id: true },
    })
    if (skip) return { kind: 'skipped', id: row.id }
    if (refused) return { kind: 'refused', id: row.id, reason: refused }
    await enqueueInTx(tx, 'intern.turn', { turnId: row.id })
    return { kind: 'queued', id: row.id }
  })
}

export const turnOf = (db: Tx, id: string) =>
  db.internTurn.findUnique({
    where: { id },
    include: {
      intern: { select: { status: true } },
      schedule: { select: { name: true } },
      trigger: { select: { name: true } },
    },
  })

export const internTurnOf = (db: Tx, internId: string, id: string) =>
  db.internTurn.findFirst({ where: { id, internId } })

/** An intern's turns, newest first, a page at a time (before: the last page's last turn). */
export const turnsOf = (
  db: Tx,
  internId: string,
  opts: { limit: number; before?: { createdAt: Date; id: string }; scheduleId?: string; triggerId?: string },
) =>
  db.internTurn.findMany({
    where: {
      internId,
      ...(opts.scheduleId ? { scheduleId: opts.scheduleId } : {}),
      ...(opts.triggerId ? { triggerId: opts.triggerId } : {}),
      ...(opts.before
        ? {
            OR: [
              { createdAt: { lt: opts.before.createdAt } },
              { createdAt: opts.before.createdAt, id: { lt: opts.before.id } },
            ],
          }
        : {}),
    },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    take: opts.limit,
  })

/**
 * The intern's queued turn that runs next: the oldest, of its own turns or (`subagents`) of its
 * subagents' (which run alongside its own, in an order of their own).
 */
export const nextQueuedTurn = (db: Tx, internId: string, subagents = false) =>
  db.internTurn.findFirst({
    where: { internId, state: 'queued', source: subagents ? 'subagent' : { not: 'subagent' } },
    orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
    select: { id: true },
  })

/** Moves a turn from one of `from` to `to` (with what changes alongside); false when it was not in one of them. */
export async function moveTurn(
  db: Tx,
  id: string,
  from: string[],
  to: string,
  set: {
    reason?: string | null
    interactionId?: string | null
    output?: string | null
    usage?: Prisma.InputJsonValue
    startedAt?: Date | null
    endedAt?: Date
    slackReport?: string
  } = {},
): Promise<boolean> {
  const moved = await db.internTurn.updateMany({
    where: { id, state: { in: from } },
    data: { state: to, ...set, updatedAt: new Date() },
  })
  return moved.count === 1
}

/**
 * Ends a turn (from one of `from`), and, when it ends now, queues the turn that tells of it (a
 * subagent's report, in the session that started it) in the same transaction: told once, whatever
 * dies after. False when it had ended already.
 */
export function endTurn(
  db: Db,
  id: string,
  from: string[],
  to: string,
  set: Parameters<typeof moveTurn>[4],
  tell?: NewTurn,
): Promise<boolean> {
  return db.$transaction(async (tx) => {
    if (!(await moveTurn(tx, id, from, to, set))) return false
    if (tell) {
      const row = await tx.internTurn.create({ data: { ...tell, state: 'queued' }, select: { id: true } })
      await enqueueInTx(tx, 'intern.turn', { turnId: row.id })
    }
    return true
  })
}

/** Where a turn's report in Slack stands: its message, when a post of it began, whether it is posted. */
export async function setTurnSlack(
  db: Tx,
  id: string,
  set: { slackTs?: string; slackPostBegunAt?: Date; slackReport?: string },
) {
  await db.internTurn.update({ where: { id }, data: { ...set, updatedAt: new Date() } })
}
