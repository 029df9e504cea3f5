import { randomUUID } from 'node:crypto'
import {
  AppError,
  type BackgroundTurn,
  type CreateScheduleRequest,
  type CreateTriggerRequest,
  type Schedule,
  type Trigger,
  type UpdateScheduleRequest,
  type UpdateTriggerRequest,
} from '@roster/protocol'
import { isUniqueViolation, type Db } from '../db.js'
import { isUuid, UUID_PATTERN } from './access.js'
import { cursorOf, readCursor } from '../page-cursor.js'
import {
  admitTurn,
  countSchedules,
  countTriggers,
  deleteSchedule,
  deleteTrigger,
  insertSchedule,
  insertTrigger,
  internTurnOf,
  scheduleOf,
  schedulesOf,
  slackLinkOf,
  triggerOf,
  triggersOf,
  turnsOf,
  updateSchedule,
  updateTrigger,
  type Admitted,
  type ScheduleFields,
  type TriggerFields,
} from '../repositories/index.js'
import { scheduleTimes } from './schedule-times.js'
import { newTriggerSecret, sealTriggerSecret } from './trigger-secrets.js'

// An intern's standing work (issue 61, docs/interns.md), one engine for its doors (the API's routes,
// the admin CLI): its schedules, its webhook triggers, and the turns they fired, checked, kept and
// shown here. Who may ask is the door's to decide; these take the intern as found.

/** An intern's schedules, and its triggers, at most. */
export const SCHEDULES_PER_INTERN = 50
export const TRIGGERS_PER_INTERN = 20

type ScheduleRow = NonNullable<Awaited<ReturnType<typeof scheduleOf>>>
type TriggerRow = NonNullable<Awaited<ReturnType<typeof triggerOf>>>
type TurnRow = NonNullable<Awaited<ReturnType<typeof internTurnOf>>>

/** What reading a schedule's cron may allow: seconds (SCHEDULE_SECONDS). */
export interface CronOptions {
  seconds?: boolean
}

const iso = (d: Date | null) => (d ? d.toISOString() : null)
const notFound = (what: string, id: string) => new AppError('not_found', `${what} ${id} not found`)
const nameTaken = (what: string, name: string | undefined) =>
  new AppError('name_taken', `this intern already has a ${what} named "${name}"`)
const taken = (what: string, name: string | undefined) => (err: unknown) => {
  throw isUniqueViolation(err) ? nameTaken(what, name) : err
}

export function scheduleView(s: ScheduleRow): Schedule {
  let next: Date | null = null
  if (s.enabled)
    try {
      next = scheduleTimes(s.cron, s.timezone, { seconds: true }).next(new Date())
    } catch {
      next = null // a zone this process's ICU lacks: the schedule is shown, its next fire not
    }
  return {
    id: s.id,
    intern_id: s.internId,
    name: s.name,
    cron: s.cron,
    timezone: s.timezone,
    prompt: s.prompt,
    session_id: s.sessionId,
    approval_mode: s.approvalMode as Schedule['approval_mode'],
    slack_channel: s.slackChannel,
    missed: s.missed as Schedule['missed'],
    enabled: s.enabled,
    next_fire_at: iso(next),
    last_fire_at: iso(s.lastFireAt),
    created_at: s.createdAt.toISOString(),
    updated_at: s.updatedAt.toISOString(),
  }
}

/** A trigger as shown, with its URL (`baseUrl`: where the API is reached) and, when just made, its secret. */
export function triggerView(baseUrl: string, t: TriggerRow, secret?: string): Trigger {
  return {
    id: t.id,
    intern_id: t.internId,
    name: t.name,
    prompt: t.prompt,
    session_id: t.sessionId,
    approval_mode: t.approvalMode as Trigger['approval_mode'],
    slack_channel: t.slackChannel,
    enabled: t.enabled,
    url: `${baseUrl}/api/v1/hooks/${t.id}`,
    ...(secret ? { secret } : {}),
    created_at: t.createdAt.toISOString(),
    updated_at: t.updatedAt.toISOString(),
  }
}

export function turnView(t: TurnRow): BackgroundTurn {
  return {
    id: t.id,
    intern_id: t.internId,
    source: t.source as BackgroundTurn['source'],
    schedule_id: t.scheduleId,
    trigger_id: t.triggerId,
    scheduled_for: iso(t.scheduledFor),
    session_id: t.sessionId,
    parent_session_id: t.parentSessionId,
    model: t.model,
    budget_usd: t.budgetUsd,
    state: t.state as BackgroundTurn['state'],
    reason: t.reason,
    interaction_id: t.interactionId,
    output: t.output,
    slack_channel: t.slackChannel,
    slack_report: t.slackReport,
    usage: (t.usage as BackgroundTurn['usage']) ?? null,
    created_at: t.createdAt.toISOString(),
    started_at: iso(t.startedAt),
    ended_at: iso(t.endedAt),
  }
}

/** A Slack conversation to report in needs the intern's Slack app (installed now or later). */
async function slackLinkedFor(db: Db, internId: string, channel: string | null | undefined) {
  if (channel && !(await slackLinkOf(db, internId)))
    throw new AppError(
      'slack_not_linked',
      `intern ${internId} has no Slack app, so it cannot report in ${channel}: link one (docs/slack.md), or leave slack_channel out`,
    )
}

// Schedules.

export async function findSchedule(db: Db, internId: string, id: string) {
  const s = isUuid(id) ? await scheduleOf(db, internId, id) : null
  if (!s) throw notFound('schedule', id)
  return s
}

/** A schedule's columns from a request's fields (those it leaves out stay out). */
const scheduleFields = (b: UpdateScheduleRequest): Partial<ScheduleFields> => ({
  name: b.name,
  cron: b.cron?.trim(),
  timezone: b.timezone,
  prompt: b.prompt,
  sessionId: b.session_id,
  approvalMode: b.approval_mode,
  slackChannel: b.slack_channel,
  missed: b.missed,
  enabled: b.enabled,
})

export async function createSchedule(db: Db, internId: string, b: CreateScheduleRequest, cron: CronOptions) {
  scheduleTimes(b.cron, b.timezone, cron) // refuses what it cannot read
  await slackLinkedFor(db, internId, b.slack_channel)
  if ((await countSchedules(db, internId)) >= SCHEDULES_PER_INTERN)
    throw new AppError('work_limit_reached', `an intern has at most ${SCHEDULES_PER_INTERN} schedules`)
  const made = await insertSchedule(db, internId, scheduleFields(b) as Required<ScheduleFields>).catch(
    taken('schedule', b.name),
  )
  return scheduleView(made)
}

export async function changeSchedule(
  db: Db,
  internId: string,
  id: string,
  b: UpdateScheduleRequest,
  cron: CronOptions,
) {
  const was = await findSchedule(db, internId, id)
  if (b.cron !== undefined || b.timezone !== undefined)
    scheduleTimes(b.cron ?? was.cron, b.timezone ?? was.timezone, cron)
  await slackLinkedFor(db, internId, b.slack_channel)
  const changed = await updateSchedule(db, internId, was.id, scheduleFields(b)).catch(taken('schedule', b.name))
  return scheduleView(changed)
}

export async function removeSchedule(db: Db, internId: string, id: string) {
  const s = await findSchedule(db, internId, id)
  if (!(await deleteSchedule(db, internId, s.id))) throw notFound('schedule', s.id)
  return { id: s.id, deleted: true as const }
}

export const listSchedules = async (db: Db, internId: string) => (await schedulesOf(db, internId)).map(scheduleView)

/** Refuses a turn not admitted: the intern's queue full (kept as refused), or a delivery it has had. */
export function turnAdmissionRefusal(admitted: Admitted): asserts admitted is Extract<Admitted, { kind: 'queued' }> {
  if (admitted.kind === 'refused') throw new AppError('turn_queue_full', `turn ${admitted.id}: ${admitted.reason}`)
  if (admitted.kind === 'duplicate')
    throw new AppError('delivery_replayed', `this delivery was taken before: its turn is ${admitted.id}`)
  if (admitted.kind !== 'queued') throw new AppError('internal_error', `the turn was ${admitted.kind}`)
}

/** A schedule's job, now, once (its schedule unchanged): its turn queued like a fire's. */
export async function runScheduleNow(
  db: Db,
  intern: { id: string; status: string },
  id: string,
  queueLimit: number,
): Promise<{ turn_id: string; state: 'queued' }> {
  const s = await findSchedule(db, intern.id, id)
  if (intern.status !== 'running')
    throw new AppError('intern_not_ready', `intern ${intern.id} is not running (status ${intern.status})`)
  const admitted = await admitTurn(
    db,
    {
      internId: intern.id,
      source: 'manual',
      scheduleId: s.id,
      sessionId: s.sessionId ?? `schedule-${s.name}-run-${randomUUID().slice(0, 8)}`,
      prompt: `Scheduled job "${s.name}", run now by a person (not at its time).\n\n${s.prompt}`,
      approvalMode: s.approvalMode,
      slackChannel: s.slackChannel,
    },
    queueLimit,
  )
  turnAdmissionRefusal(admitted)
  return { turn_id: admitted.id, state: 'queued' }
}

// Webhook triggers.

export async function findTrigger(db: Db, internId: string, id: string) {
  const t = isUuid(id) ? await triggerOf(db, internId, id) : null
  if (!t) throw notFound('trigger', id)
  return t
}

/** The master key seals triggers' secrets: without it, no trigger can be made or checked. */
export function triggerMasterKey(masterKey: Buffer | undefined): Buffer {
  if (!masterKey)
    throw new AppError(
      'configuration_error',
      'webhook triggers need VAULT_MASTER_KEY (their secrets are sealed with a key derived from it); it is not set here',
    )
  return masterKey
}

/** A trigger's columns from a request's fields (those it leaves out stay out). */
const triggerFields = (b: UpdateTriggerRequest): Partial<TriggerFields> => ({
  name: b.name,
  prompt: b.prompt,
  sessionId: b.session_id,
  approvalMode: b.approval_mode,
  slackChannel: b.slack_channel,
  enabled: b.enabled,
})

/** A new trigger, and its secret (shown this once). */
export async function createTrigger(
  db: Db,
  masterKey: Buffer | undefined,
  internId: string,
  b: CreateTriggerRequest,
): Promise<{ row: TriggerRow; secret: string }> {
  const key = triggerMasterKey(masterKey)
  await slackLinkedFor(db, internId, b.slack_channel)
  if ((await countTriggers(db, internId)) >= TRIGGERS_PER_INTERN)
    throw new AppError('work_limit_reached', `an intern has at most ${TRIGGERS_PER_INTERN} webhook triggers`)
  const id = randomUUID()
  const secret = newTriggerSecret()
  const row = await insertTrigger(
    db,
    id,
    internId,
    triggerFields(b) as TriggerFields,
    sealTriggerSecret(key, id, secret),
  ).catch(taken('trigger', b.name))
  return { row, secret }
}

/** A trigger changed; with rotate_secret, its new secret (shown this once; the old one stops at once). */
export async function changeTrigger(
  db: Db,
  masterKey: Buffer | undefined,
  internId: string,
  id: string,
  b: UpdateTriggerRequest,
): Promise<{ row: TriggerRow; secret?: string }> {
  const was = await findTrigger(db, internId, id)
  await slackLinkedFor(db, internId, b.slack_channel)
  const secret = b.rotate_secret ? newTriggerSecret() : undefined
  const row = await updateTrigger(db, internId, was.id, {
    ...triggerFields(b),
    ...(secret ? { sealedSecret: sealTriggerSecret(triggerMasterKey(masterKey), was.id, secret) } : {}),
  }).catch(taken('trigger', b.name))
  return { row, secret }
}

export async function removeTrigger(db: Db, internId: string, id: string) {
  const t = await findTrigger(db, internId, id)
  if ((await deleteTrigger(db, internId, t.id)).count === 0) throw notFound('trigger', t.id)
  return { id: t.id, deleted: true as const }
}

export const listTriggers = (db: Db, internId: string) => triggersOf(db, internId)

// Turns.

export async function listTurns(
  db: Db,
  internId: string,
  q: { limit: number; cursor?: string; schedule_id?: string; trigger_id?: string },
): Promise<{ data: BackgroundTurn[]; next_cursor: string | null }> {
  const rows = await turnsOf(db, internId, {
    limit: q.limit + 1,
    before: q.cursor ? readCursor(q.cursor, UUID_PATTERN) : undefined,
    scheduleId: q.schedule_id,
    triggerId: q.trigger_id,
  })
  const page = rows.slice(0, q.limit)
  const last = page.at(-1)
  return {
    data: page.map(turnView),
    next_cursor: rows.length > q.limit && last ? cursorOf(last.createdAt, last.id) : null,
  }
}

export async function getTurn(db: Db, internId: string, id: string): Promise<BackgroundTurn> {
  const t = isUuid(id) ? await internTurnOf(db, internId, id) : null
  if (!t) throw notFound('turn', id)
  return turnView(t)
}
