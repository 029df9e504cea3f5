import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import {
  BackgroundTurn,
  CreateMcpServerRequest,
  CreateScheduleRequest,
  CreateTriggerRequest,
  DeliveryAccepted,
  InternIdParams,
  InstallSkillRequest,
  InternLifecycleError,
  McpServer,
  Skill,
  SkillList,
  Schedule,
  Trigger,
  UpdateMcpServerRequest,
  UpdateScheduleRequest,
  UpdateTriggerRequest,
  type Caller,
} from '@roster/shared'
import {
  addMcpServer,
  changeMcpServer,
  findMcpServer,
  listMcpServers,
  mcpServerView,
  removeMcpServer,
  changeSchedule,
  changeTrigger,
  createSchedule,
  createTrigger,
  findSchedule,
  findTrigger,
  getIntern,
  getTurn,
  listSchedules,
  listTriggers,
  listTurns,
  refuseWhileDeleting,
  removeSchedule,
  removeTrigger,
  runScheduleNow,
  scheduleView,
  triggerView,
} from '@roster/shared/interns'
import { AppError } from '@roster/shared'
import { HostRefusal, RuntimeUnavailableError } from '@roster/shared/fleet'
import type { AppDeps } from '../../deps.js'

// An intern's standing work (issue 61, docs/interns.md) through the API: its schedules (cron in a
// time zone, each fire a turn), its webhook triggers (a signed URL, each delivery a turn), and the
// turns both fired, with how each went (packages/shared/src/interns/intern-work.ts does the work),
// and the MCP servers its tools come from (packages/shared/src/interns/mcp-servers.ts).
// Roster's extension of the API; reads for any key that sees the intern, changes for keys that may
// change it (as the intern's own lifecycle).

const TURNS_LISTED = 100

const ScheduleParams = InternIdParams.extend({ scheduleId: z.string() })
const TriggerParams = InternIdParams.extend({ triggerId: z.string() })
const TurnParams = InternIdParams.extend({ turnId: z.string() })
const McpParams = InternIdParams.extend({ serverId: z.string() })
const SkillParams = InternIdParams.extend({ name: z.string().max(64) })
/** A skill's files, base64 and all, at most (the host takes 8 MiB of them). */
const SKILL_BODY_LIMIT = 12 * 1024 * 1024
const TurnsQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(TURNS_LISTED).default(50),
  cursor: z.string().max(200).optional().describe('The `next_cursor` of the page before'),
  schedule_id: z.uuid().optional(),
  trigger_id: z.uuid().optional(),
})

const errors = Object.fromEntries([400, 401, 404, 409, 413, 429, 500].map((code) => [code, InternLifecycleError]))

/** Where the API is reached from outside (a trigger's URL starts with it). */
export const publicBase = (deps: AppDeps) => deps.config.PUBLIC_URL ?? `http://${deps.config.HOST}:${deps.config.PORT}`

export function registerInternWork(
  app: FastifyInstance,
  deps: AppDeps,
  read: (req: FastifyRequest) => Promise<void>,
  write: (req: FastifyRequest) => Promise<void>,
) {
  const api = app.withTypeProvider<ZodTypeProvider>()
  const cron = { seconds: deps.config.SCHEDULE_SECONDS === 'allow' }
  const masterKey = deps.config.VAULT_MASTER_KEY
  /** The intern, as the caller may see it; refused while it is being deleted when `changing`. */
  const internOf = async (req: FastifyRequest, internId: string, changing = false) => {
    const intern = await getIntern(deps.internReader, req.caller as Caller, internId)
    if (changing) refuseWhileDeleting(intern.status, internId)
    return intern
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
      return { data: await listSchedules(deps.db, intern.id) }
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
      const made = await createSchedule(deps.db, intern.id, req.body, cron)
      deps.afterCommit.outboxWritten()
      return reply.code(201).send(made)
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
      return scheduleView(await findSchedule(deps.db, intern.id, req.params.scheduleId))
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
      const changed = await changeSchedule(deps.db, intern.id, req.params.scheduleId, req.body, cron)
      deps.afterCommit.outboxWritten()
      return changed
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
      const removed = await removeSchedule(deps.db, intern.id, req.params.scheduleId)
      deps.afterCommit.outboxWritten()
      return removed
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
      const run = await runScheduleNow(deps.db, intern, req.params.scheduleId, deps.config.INTERN_TURN_QUEUE)
      deps.afterCommit.outboxWritten()
      return reply.code(202).send(run)
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
      return { data: (await listTriggers(deps.db, intern.id)).map((t) => triggerView(publicBase(deps), t)) }
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
      const intern = await internOf(req, req.params.internId, true)
      const { row, secret } = await createTrigger(deps.db, masterKey, intern.id, req.body)
      return reply.code(201).send(triggerView(publicBase(deps), row, secret))
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
      return triggerView(publicBase(deps), await findTrigger(deps.db, intern.id, req.params.triggerId))
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
      const { row, secret } = await changeTrigger(deps.db, masterKey, intern.id, req.params.triggerId, req.body)
      return triggerView(publicBase(deps), row, secret)
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
      return removeTrigger(deps.db, intern.id, req.params.triggerId)
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
      return listTurns(deps.db, intern.id, req.query)
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
      return getTurn(deps.db, intern.id, req.params.turnId)
    },
  )

  // MCP servers.
  api.get(
    '/interns/:internId/mcp-servers',
    {
      onRequest: read,
      schema: {
        operationId: 'listInternMcpServers',
        summary: "The MCP servers an intern's tools come from, with the tools its host last found on each",
        params: InternIdParams,
        response: { 200: z.object({ data: z.array(McpServer) }), ...errors },
      },
    },
    async (req) => {
      const intern = await internOf(req, req.params.internId)
      return { data: await listMcpServers(deps.db, intern.id) }
    },
  )
  api.post(
    '/interns/:internId/mcp-servers',
    {
      onRequest: write,
      schema: {
        operationId: 'createInternMcpServer',
        summary: 'Give an intern the tools of a remote MCP server (Streamable HTTP); its next turn finds them',
        params: InternIdParams,
        body: CreateMcpServerRequest,
        response: { 201: McpServer, ...errors },
      },
    },
    async (req, reply) => {
      const intern = await internOf(req, req.params.internId, true)
      return reply.code(201).send(await addMcpServer(deps.db, intern.id, req.body))
    },
  )
  api.get(
    '/interns/:internId/mcp-servers/:serverId',
    {
      onRequest: read,
      schema: {
        operationId: 'getInternMcpServer',
        summary: 'An MCP server of the intern',
        params: McpParams,
        response: { 200: McpServer, ...errors },
      },
    },
    async (req) => {
      const intern = await internOf(req, req.params.internId)
      return mcpServerView(await findMcpServer(deps.db, intern.id, req.params.serverId))
    },
  )
  api.patch(
    '/interns/:internId/mcp-servers/:serverId',
    {
      onRequest: write,
      schema: {
        operationId: 'updateInternMcpServer',
        summary: 'Change an MCP server (its next turn connects anew)',
        params: McpParams,
        body: UpdateMcpServerRequest,
        response: { 200: McpServer, ...errors },
      },
    },
    async (req) => {
      const intern = await internOf(req, req.params.internId, true)
      return changeMcpServer(deps.db, intern.id, req.params.serverId, req.body)
    },
  )
  api.delete(
    '/interns/:internId/mcp-servers/:serverId',
    {
      onRequest: write,
      schema: {
        operationId: 'deleteInternMcpServer',
        summary: 'Remove an MCP server: its tools are gone from the next turn',
        params: McpParams,
        response: { 200: z.object({ id: z.string(), deleted: z.literal(true) }), ...errors },
      },
    },
    async (req) => {
      const intern = await internOf(req, req.params.internId, true)
      return removeMcpServer(deps.db, intern.id, req.params.serverId)
    },
  )

  // Skills: folders of the intern's workspace, so they are read and written on its host.
  /** The intern's host, for a call there; refused while it is not running there. */
  const onHost = async <T>(
    internId: string,
    work: (at: NonNullable<Awaited<ReturnType<typeof deps.runtime.placement>>>) => Promise<T>,
  ) => {
    const at = await deps.runtime.placement(internId)
    if (!at || at.status !== 'running')
      throw new AppError(
        'intern_not_ready',
        `intern ${internId} is not running: its skills are in its workspace, on its host`,
      )
    try {
      return await work(at)
    } catch (err) {
      if (err instanceof HostRefusal) {
        if (err.body.error === 'bad_request') throw new AppError('invalid_body', `invalid request: ${err.body.message}`)
        if (err.body.error === 'not_found') throw new AppError('not_found', err.body.message)
        throw new AppError('intern_not_ready', err.body.message)
      }
      if (err instanceof RuntimeUnavailableError) throw new AppError('intern_unreachable', err.message)
      throw err
    }
  }
  api.get(
    '/interns/:internId/skills',
    {
      onRequest: read,
      schema: {
        operationId: 'listInternSkills',
        summary: "An intern's skills (folders under skills/ in its workspace), by name and description",
        params: InternIdParams,
        response: { 200: SkillList, ...errors },
      },
    },
    async (req) => {
      const intern = await internOf(req, req.params.internId)
      const found = await onHost(intern.id, (at) => deps.runtime.skills(at, intern.id))
      return { data: found.skills, problems: found.problems }
    },
  )
  api.put(
    '/interns/:internId/skills/:name',
    {
      onRequest: write,
      bodyLimit: SKILL_BODY_LIMIT,
      schema: {
        operationId: 'installInternSkill',
        summary: "Install a skill (its folder at once, in place of any of its name) into the intern's workspace",
        params: SkillParams,
        body: InstallSkillRequest,
        response: { 200: Skill, ...errors },
      },
    },
    async (req) => {
      const intern = await internOf(req, req.params.internId, true)
      const files = req.body.files.map((f) => ({
        path: f.path,
        content_base64: 'content' in f ? Buffer.from(f.content, 'utf8').toString('base64') : f.content_base64,
      }))
      return onHost(intern.id, (at) => deps.runtime.installSkill(at, intern.id, req.params.name, { files }))
    },
  )
  api.delete(
    '/interns/:internId/skills/:name',
    {
      onRequest: write,
      schema: {
        operationId: 'deleteInternSkill',
        summary: "Remove a skill's folder from the intern's workspace",
        params: SkillParams,
        response: { 200: z.object({ name: z.string(), deleted: z.literal(true) }), ...errors },
      },
    },
    async (req) => {
      const intern = await internOf(req, req.params.internId, true)
      await onHost(intern.id, (at) => deps.runtime.removeSkill(at, intern.id, req.params.name))
      return { name: req.params.name, deleted: true as const }
    },
  )
}
