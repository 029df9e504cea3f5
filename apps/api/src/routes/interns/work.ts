import { randomUUID } from 'node:crypto'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import {
  AppError,
  BackgroundTurn,
  CreateScheduleRequest,
  CreateTriggerRequest,
  DeliveryAccepted,
  InternIdParams,
  InternLifecycleError,
  isUniqueViolation,
  Schedule,
  Trigger,
  UpdateScheduleRequest,
  UpdateTriggerRequest,
  cursorOf,
  readCursor,
  type Caller,
} from '@roster/shared'
import {
  getIntern,
  newTriggerSecret,
  refuseWhileDeleting,
  scheduleTimes,
  sealTriggerSecret,
} from '@roster/shared/interns'
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
  triggerOf,
  triggersOf,
  turnsOf,
  updateSchedule,
  updateTrigger,
  type ScheduleFields,
} from '@roster/shared/repositories'
import type { AppDeps } from '../../deps.js'
import { triggerMasterKey, turnAdmissionRefusal } from './turn-admission.js'

// An intern's standing work (issue 61, docs/interns.md): its schedules (cron in a time zone, each fire
// a turn), its webhook triggers (a signed URL, each delivery a turn), and the turns both fired, with
// how each went. Roster's extension of the API; reads for any key that sees the intern, changes for
// keys that may change it (as the intern's own lifecycle).

/** An intern's schedules, and its triggers, at most. */
export const SCHEDULES_PER_INTERN = 50
export const TRIGGERS_PER_INTERN = 20
const TURNS_LISTED = 100

const ScheduleParams = InternIdParams.extend({ scheduleId: z.string() })
const TriggerParams = InternIdParams.extend({ triggerId: z.string() })
const TurnParams = InternIdParams.extend({ turnId: z.string() })
const TurnsQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(TURNS_LISTED).default(50),
  cursor: z.string().max(200).optional().describe('The `next_cursor` of the page before'),
  schedule_id: z.uuid().optional(),
  trigger_id: z.uuid().optional(),
})
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

const errors = Object.fromEntries([400, 401, 404, 409, 413, 429, 500].map((code) => [code, InternLifecycleError]))

type ScheduleRow = NonNullable<Awaited<ReturnType<typeof scheduleOf>>>
type TriggerRow = NonNullable<Awaited<ReturnType<typeof triggerOf>>>
type TurnRow = NonNullable<Awaited<ReturnType<typeof internTurnOf>>>

const iso = (d: Date | null) => (d ? d.toISOString() : null)

function scheduleView(s: ScheduleRow): Schedule {
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
    missed: s.missed as Schedule['missed'],
    enabled: s.enabled,
    next_fire_at: iso(next),
    last_fire_at: iso(s.lastFireAt),
    created_at: s.createdAt.toISOString(),
    updated_at: s.updatedAt.toISOString(),
  }
}

/** Where a trigger's deliveries go. */
export const triggerUrl = (deps: AppDeps, id: string) =>
  `${deps.config.PUBLIC_URL ?? `http://${deps.config.HOST}:${deps.config.PORT}`}/api/v1/hooks/${id}`

function triggerView(deps: AppDeps, t: TriggerRow, secret?: string): Trigger {
  return {
    id: t.id,
    intern_id: t.internId,
    name: t.name,
    prompt: t.prompt,
    session_id: t.sessionId,
    approval_mode: t.approvalMode as Trigger['approval_mode'],
    enabled: t.enabled,
    url: triggerUrl(deps, t.id),
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
    state: t.state as BackgroundTurn['state'],
    reason: t.reason,
    interaction_id: t.interactionId,
    output: t.output,
    usage: (t.usage as BackgroundTurn['usage']) ?? null,
    created_at: t.createdAt.toISOString(),
    started_at: iso(t.startedAt),
    ended_at: iso(t.endedAt),
  }
}

const notFound = (what: string, id: string) => new AppError('not_found', `${what} ${id} not found`)
const nameTaken = (what: string, name: string | undefined) =>
  new AppError('name_taken', `this intern already has a ${what} named "${name}"`)

export function registerInternWork(
  app: FastifyInstance,
  deps: AppDeps,
  read: (req: FastifyRequest) => Promise<void>,
  write: (req: FastifyRequest) => Promise<void>,
) {
  const api = app.withTypeProvider<ZodTypeProvider>()
  const cronOptions = { seconds: deps.config.SCHEDULE_SECONDS === 'allow' }
  /** The intern, as the caller may see it; refused while it is being deleted when `changing`. */
  const internOf = async (req: FastifyRequest, internId: string, changing = false) => {
    const intern = await getIntern(deps.internReader, req.caller as Caller, internId)
    if (changing) refuseWhileDeleting(intern.status, internId)
    return intern
  }
  const scheduleFor = async (internId: string, id: string) => {
    const s = UUID.test(id) ? await scheduleOf(deps.db, internId, id) : null
    if (!s) throw notFound('schedule', id)
    return s
  }
  const triggerFor = async (internId: string, id: string) => {
    const t = UUID.test(id) ? await triggerOf(deps.db, internId, id) : null
    if (!t) throw notFound('trigger', id)
    return t
  }

  // Schedules.
  api.get(
    '/interns/:internId/schedules',
    {
      onRequest: read,
      schema: {
        operationId: 'listInternSchedules',
        summary: "An intern's schedules, oldest first",
        params: InternIdParams,
        response: { 200: z.object({ data: z.array(Schedule) }), ...errors },
      },
    },
    async (req) => {
      const intern = await internOf(req, req.params.internId)
      return { data: (await schedulesOf(deps.db, intern.id)).map(scheduleView) }
    },
  )
  api.post(
    '/interns/:internId/schedules',
    {
      onRequest: write,
      schema: {
        operationId: 'createInternSchedule',
        summary: 'Give an intern a schedule: a cron expression in a time zone, each fire a turn with its prompt',
        params: InternIdParams,
        body: CreateScheduleRequest,
        response: { 201: Schedule, ...errors },
      },
    },
    async (req, reply) => {
      const intern = await internOf(req, req.params.internId, true)
      const b = req.body
      scheduleTimes(b.cron, b.timezone, cronOptions) // refuses what it cannot read
      if ((await countSchedules(deps.db, intern.id)) >= SCHEDULES_PER_INTERN)
        throw new AppError('work_limit_reached', `an intern has at most ${SCHEDULES_PER_INTERN} schedules`)
      const fields: ScheduleFields = {
        name: b.name,
        cron: b.cron.trim(),
        timezone: b.timezone,
        prompt: b.prompt,
        sessionId: b.session_id,
        approvalMode: b.approval_mode,
        missed: b.missed,
        enabled: b.enabled,
      }
      const made = await insertSchedule(deps.db, intern.id, fields).catch((err: unknown) => {
        throw isUniqueViolation(err) ? nameTaken('schedule', b.name) : err
      })
      deps.afterCommit.outboxWritten()
      return reply.code(201).send(scheduleView(made))
    },
  )
  api.get(
    '/interns/:internId/schedules/:scheduleId',
    {
      onRequest: read,
      schema: {
        operationId: 'getInternSchedule',
        summary: 'A schedule',
        params: ScheduleParams,
        response: { 200: Schedule, ...errors },
      },
    },
    async (req) => {
      const intern = await internOf(req, req.params.internId)
      return scheduleView(await scheduleFor(intern.id, req.params.scheduleId))
    },
  )
  api.patch(
    '/interns/:internId/schedules/:scheduleId',
    {
      onRequest: write,
      schema: {
        operationId: 'updateInternSchedule',
        summary: 'Change a schedule (its next fire follows the change)',
        params: ScheduleParams,
        body: UpdateScheduleRequest,
        response: { 200: Schedule, ...errors },
      },
    },
    async (req) => {
      const intern = await internOf(req, req.params.internId, true)
      const was = await scheduleFor(intern.id, req.params.scheduleId)
      const b = req.body
      if (b.cron !== undefined || b.timezone !== undefined)
        scheduleTimes(b.cron ?? was.cron, b.timezone ?? was.timezone, cronOptions)
      const changed = await updateSchedule(deps.db, intern.id, was.id, {
        name: b.name,
        cron: b.cron?.trim(),
        timezone: b.timezone,
        prompt: b.prompt,
        sessionId: b.session_id,
        approvalMode: b.approval_mode,
        missed: b.missed,
        enabled: b.enabled,
      }).catch((err: unknown) => {
        throw isUniqueViolation(err) ? nameTaken('schedule', b.name) : err
      })
      deps.afterCommit.outboxWritten()
      return scheduleView(changed)
    },
  )
  api.delete(
    '/interns/:internId/schedules/:scheduleId',
    {
      onRequest: write,
      schema: {
        operationId: 'deleteInternSchedule',
        summary: 'Remove a schedule (its turns stay listed)',
        params: ScheduleParams,
        response: { 200: z.object({ id: z.string(), deleted: z.literal(true) }), ...errors },
      },
    },
    async (req) => {
      const intern = await internOf(req, req.params.internId, true)
      const s = await scheduleFor(intern.id, req.params.scheduleId)
      if (!(await deleteSchedule(deps.db, intern.id, s.id))) throw notFound('schedule', s.id)
      deps.afterCommit.outboxWritten()
      return { id: s.id, deleted: true as const }
    },
  )
  api.post(
    '/interns/:internId/schedules/:scheduleId/run',
    {
      onRequest: write,
      schema: {
        operationId: 'runInternSchedule',
        summary: "Run a schedule's job now, once (its schedule unchanged)",
        params: ScheduleParams,
        response: { 202: DeliveryAccepted, ...errors },
      },
    },
    async (req, reply) => {
      const intern = await internOf(req, req.params.internId, true)
      const s = await scheduleFor(intern.id, req.params.scheduleId)
      if (intern.status !== 'running')
        throw new AppError('intern_not_ready', `intern ${intern.id} is not running (status ${intern.status})`)
      const id = randomUUID()
      const admitted = await admitTurn(
        deps.db,
        {
          internId: intern.id,
          source: 'manual',
          scheduleId: s.id,
          sessionId: s.sessionId ?? `schedule-${s.name}-run-${id.slice(0, 8)}`,
          prompt: `Scheduled job "${s.name}", run now by a person (not at its time).\n\n${s.prompt}`,
          approvalMode: s.approvalMode,
        },
        deps.config.INTERN_TURN_QUEUE,
      )
      deps.afterCommit.outboxWritten()
      turnAdmissionRefusal(admitted)
      return reply.code(202).send({ turn_id: admitted.id, state: 'queued' as const })
    },
  )

  // Webhook triggers.
  api.get(
    '/interns/:internId/triggers',
    {
      onRequest: read,
      schema: {
        operationId: 'listInternTriggers',
        summary: "An intern's webhook triggers, oldest first (their secrets are never shown again)",
        params: InternIdParams,
        response: { 200: z.object({ data: z.array(Trigger) }), ...errors },
      },
    },
    async (req) => {
      const intern = await internOf(req, req.params.internId)
      return { data: (await triggersOf(deps.db, intern.id)).map((t) => triggerView(deps, t)) }
    },
  )
  api.post(
    '/interns/:internId/triggers',
    {
      onRequest: write,
      schema: {
        operationId: 'createInternTrigger',
        summary: 'Give an intern a webhook trigger: a URL whose signed deliveries each start a turn',
        params: InternIdParams,
        body: CreateTriggerRequest,
        response: { 201: Trigger, ...errors },
      },
    },
    async (req, reply) => {
      const masterKey = triggerMasterKey(deps)
      const intern = await internOf(req, req.params.internId, true)
      if ((await countTriggers(deps.db, intern.id)) >= TRIGGERS_PER_INTERN)
        throw new AppError('work_limit_reached', `an intern has at most ${TRIGGERS_PER_INTERN} webhook triggers`)
      const b = req.body
      const id = randomUUID()
      const secret = newTriggerSecret()
      const made = await insertTrigger(
        deps.db,
        id,
        intern.id,
        { name: b.name, prompt: b.prompt, sessionId: b.session_id, approvalMode: b.approval_mode, enabled: b.enabled },
        sealTriggerSecret(masterKey, id, secret),
      ).catch((err: unknown) => {
        throw isUniqueViolation(err) ? nameTaken('trigger', b.name) : err
      })
      return reply.code(201).send(triggerView(deps, made, secret))
    },
  )
  api.get(
    '/interns/:internId/triggers/:triggerId',
    {
      onRequest: read,
      schema: {
        operationId: 'getInternTrigger',
        summary: 'A webhook trigger',
        params: TriggerParams,
        response: { 200: Trigger, ...errors },
      },
    },
    async (req) => {
      const intern = await internOf(req, req.params.internId)
      return triggerView(deps, await triggerFor(intern.id, req.params.triggerId))
    },
  )
  api.patch(
    '/interns/:internId/triggers/:triggerId',
    {
      onRequest: write,
      schema: {
        operationId: 'updateInternTrigger',
        summary: 'Change a webhook trigger, or make it a new secret (rotate_secret: answered once)',
        params: TriggerParams,
        body: UpdateTriggerRequest,
        response: { 200: Trigger, ...errors },
      },
    },
    async (req) => {
      const intern = await internOf(req, req.params.internId, true)
      const was = await triggerFor(intern.id, req.params.triggerId)
      const b = req.body
      const secret = b.rotate_secret ? newTriggerSecret() : undefined
      const changed = await updateTrigger(deps.db, intern.id, was.id, {
        name: b.name,
        prompt: b.prompt,
        sessionId: b.session_id,
        approvalMode: b.approval_mode,
        enabled: b.enabled,
        ...(secret ? { sealedSecret: sealTriggerSecret(triggerMasterKey(deps), was.id, secret) } : {}),
      }).catch((err: unknown) => {
        throw isUniqueViolation(err) ? nameTaken('trigger', b.name) : err
      })
      return triggerView(deps, changed, secret)
    },
  )
  api.delete(
    '/interns/:internId/triggers/:triggerId',
    {
      onRequest: write,
      schema: {
        operationId: 'deleteInternTrigger',
        summary: 'Remove a webhook trigger: its URL takes nothing more (its turns stay listed)',
        params: TriggerParams,
        response: { 200: z.object({ id: z.string(), deleted: z.literal(true) }), ...errors },
      },
    },
    async (req) => {
      const intern = await internOf(req, req.params.internId, true)
      const t = await triggerFor(intern.id, req.params.triggerId)
      if ((await deleteTrigger(deps.db, intern.id, t.id)).count === 0) throw notFound('trigger', t.id)
      return { id: t.id, deleted: true as const }
    },
  )

  // The turns schedules and triggers fired.
  api.get(
    '/interns/:internId/turns',
    {
      onRequest: read,
      schema: {
        operationId: 'listInternTurns',
        summary: "The turns an intern's schedules and webhooks fired, newest first",
        params: InternIdParams,
        querystring: TurnsQuery,
        response: {
          200: z.object({ data: z.array(BackgroundTurn), next_cursor: z.string().nullable() }),
          ...errors,
        },
      },
    },
    async (req) => {
      const intern = await internOf(req, req.params.internId)
      const q = req.query
      const rows = await turnsOf(deps.db, intern.id, {
        limit: q.limit + 1,
        before: q.cursor ? readCursor(q.cursor, UUID) : undefined,
        scheduleId: q.schedule_id,
        triggerId: q.trigger_id,
      })
      const page = rows.slice(0, q.limit)
      const last = page.at(-1)
      return {
        data: page.map(turnView),
        next_cursor: rows.length > q.limit && last ? cursorOf(last.createdAt, last.id) : null,
      }
    },
  )
  api.get(
    '/interns/:internId/turns/:turnId',
    {
      onRequest: read,
      schema: {
        operationId: 'getInternTurn',
        summary: 'A turn a schedule or webhook fired, with how it went',
        params: TurnParams,
        response: { 200: BackgroundTurn, ...errors },
      },
    },
    async (req) => {
      const intern = await internOf(req, req.params.internId)
      const t = UUID.test(req.params.turnId) ? await internTurnOf(deps.db, intern.id, req.params.turnId) : null
      if (!t) throw notFound('turn', req.params.turnId)
      return turnView(t)
    },
  )
}
