import type { Db, Prisma } from '../db.js'
import { enqueueInTx } from './outbox.js'

// intern_schedules: an intern's standing jobs (cron, zone, prompt, session, approval, missed-fire
// policy), and the latest fire time each has dealt with. BullMQ's job schedulers are armed from these
// rows (apps/worker/src/schedules.ts); a schedule's turns are in intern_turns.

type Tx = Db | Prisma.TransactionClient

export interface ScheduleFields {
  name: string
  cron: string
  timezone: string
  prompt: string
  sessionId: string | null
  approvalMode: string
  slackChannel: string | null
  missed: string
  enabled: boolean
}

export type ScheduleRow = Awaited<ReturnType<typeof scheduleOf>> & {}

export const countSchedules = (db: Tx, internId: string) => db.internSchedule.count({ where: { internId } })

/** A schedule's change and the job that makes its scheduler match it, in one transaction. */
const withSync = <T extends { id: string; updatedAt: Date }>(
  db: Db,
  change: (tx: Prisma.TransactionClient) => Promise<T>,
): Promise<T> =>
  db.$transaction(async (tx) => {
    const row = await change(tx)
    await enqueueInTx(tx, 'schedule.sync', { scheduleId: row.id, version: row.updatedAt.getTime() })
    return row
  })

export const insertSchedule = (db: Db, internId: string, fields: ScheduleFields) =>
  withSync(db, (tx) => tx.internSchedule.create({ data: { internId, ...fields } }))

export const schedulesOf = (db: Tx, internId: string) =>
  db.internSchedule.findMany({ where: { internId }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] })

export const scheduleOf = (db: Tx, internId: string, id: string) =>
  db.internSchedule.findFirst({ where: { id, internId } })

/** A schedule with its intern's status and workspace (what a fire needs to know). */
export const scheduleToFire = (db: Tx, id: string) =>
  db.internSchedule.findUnique({
    where: { id },
    include: { intern: { select: { status: true, workspaceId: true } } },
  })

export const updateSchedule = (db: Db, internId: string, id: string, fields: Partial<ScheduleFields>) =>
  withSync(db, (tx) =>
    tx.internSchedule.update({ where: { id, internId }, data: { ...fields, updatedAt: new Date() } }),
  )

/** Removes a schedule (its turns stay, their schedule_id cleared); false when there was none. */
export const deleteSchedule = (db: Db, internId: string, id: string) =>
  db.$transaction(async (tx) => {
    const gone = await tx.internSchedule.deleteMany({ where: { id, internId } })
    if (gone.count) await enqueueInTx(tx, 'schedule.sync', { scheduleId: id, version: Date.now() })
    return gone.count > 0
  })

/**
 * Claims the fire `at` of a schedule, marking every fire up to `through` dealt with: false when one
 * at or after `at` was dealt with already. The row's lock makes two claims of one fire (two workers,
 * a fire and a catch-up) take turns, and the second finds the first's mark.
 */
export async function claimScheduleFire(db: Tx, id: string, at: Date, through: Date): Promise<boolean> {
  const claimed = await db.$executeRaw`
    UPDATE intern_schedules SET last_fire_at = GREATEST(${at}::timestamptz, ${through}::timestamptz)
    WHERE id = ${id}::uuid AND (last_fire_at IS NULL OR last_fire_at < ${at})`
  return claimed === 1
}

/** Every enabled schedule, with what arming and catching up need (the worker's sweep), a page at a time. */
export const enabledSchedules = (db: Tx, after: string | undefined, limit: number) =>
  db.internSchedule.findMany({
    where: { enabled: true, ...(after ? { id: { gt: after } } : {}) },
    orderBy: { id: 'asc' },
    take: limit,
    select: {
      id: true,
      internId: true,
      cron: true,
      timezone: true,
      missed: true,
      lastFireAt: true,
      createdAt: true,
      updatedAt: true,
      intern: { select: { status: true } },
    },
  })

/** Which of `ids` are schedules still (enabled or not). */
export async function existingSchedules(db: Tx, ids: string[]): Promise<Set<string>> {
  if (!ids.length) return new Set()
  const rows = await db.internSchedule.findMany({ where: { id: { in: ids } }, select: { id: true } })
  return new Set(rows.map((r) => r.id))
}
