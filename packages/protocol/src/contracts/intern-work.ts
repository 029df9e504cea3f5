import { z } from 'zod'
import { Approval } from '../runtime-protocol.js'

// Work an intern does without a person typing (issue 61): schedules (cron in a time zone), webhook
// triggers (a signed URL), and the turns they fire, each kept with its outcome. Roster's extension
// of the API, under /interns/{id}/….

/** A schedule's or trigger's name: what people and the CLI call it by, unique per intern. */
export const WorkName = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[a-z0-9][a-z0-9._-]*$/i, 'letters, digits, dots, underscores and hyphens, starting with a letter or digit')

/** The session a schedule's or trigger's turns continue (null: each turn in a session of its own). */
const NamedSession = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\w.:-]+$/, 'letters, digits, and . _ : -')
  .nullable()

const Prompt = z.string().trim().min(1, 'the prompt is empty').max(32_000)

/**
 * A Slack conversation of the intern's Slack app its turns report in (null: none): a channel's id
 * (C…, G…) or a direct message's (D…).
 */
const SlackChannel = z
  .string()
  .regex(/^[CDG][A-Z0-9]{2,31}$/, "a Slack conversation's id (C…, G…, D…)")
  .nullable()
  .describe(
    "A Slack conversation of the intern's Slack app: each turn's reply is posted there, and its questions as cards in the reply's thread",
  )

export const MissedFire = z.enum(['run_once', 'skip'])
export type MissedFire = z.infer<typeof MissedFire>

export const CreateScheduleRequest = z
  .strictObject({
    name: WorkName,
    cron: z
      .string()
      .min(1)
      .max(200)
      .describe('Five fields (minute hour day-of-month month day-of-week), or @hourly, @daily, @weekly, @monthly'),
    timezone: z.string().min(1).max(64).default('UTC').describe('An IANA time zone the cron expression is read in'),
    prompt: Prompt,
    session_id: NamedSession.default(null),
    approval_mode: Approval.default('manual'),
    slack_channel: SlackChannel.default(null),
    missed: MissedFire.default('run_once').describe(
      'A fire missed while Roster was down or the intern suspended: run once when it can, or skip it',
    ),
    enabled: z.boolean().default(true),
  })
  .meta({ id: 'CreateScheduleRequest' })
export type CreateScheduleRequest = z.infer<typeof CreateScheduleRequest>

export const UpdateScheduleRequest = z
  .strictObject({
    name: WorkName.optional(),
    cron: z.string().min(1).max(200).optional(),
    timezone: z.string().min(1).max(64).optional(),
    prompt: Prompt.optional(),
    session_id: NamedSession.optional(),
    approval_mode: Approval.optional(),
    slack_channel: SlackChannel.optional(),
    missed: MissedFire.optional(),
    enabled: z.boolean().optional(),
  })
  .meta({ id: 'UpdateScheduleRequest' })
export type UpdateScheduleRequest = z.infer<typeof UpdateScheduleRequest>

export const Schedule = z
  .object({
    id: z.uuid(),
    intern_id: z.uuid(),
    name: z.string(),
    cron: z.string(),
    timezone: z.string(),
    prompt: z.string(),
    session_id: z.string().nullable(),
    approval_mode: Approval,
    slack_channel: z.string().nullable(),
    missed: MissedFire,
    enabled: z.boolean(),
    next_fire_at: z.iso.datetime().nullable().describe('When it fires next (null: disabled)'),
    last_fire_at: z.iso.datetime().nullable().describe('The latest fire time dealt with'),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'Schedule' })
export type Schedule = z.infer<typeof Schedule>

export const CreateTriggerRequest = z
  .strictObject({
    name: WorkName,
    prompt: Prompt.describe("What the intern is asked to do with a delivery; the delivery's body follows it, as data"),
    session_id: NamedSession.default(null),
    approval_mode: Approval.default('manual'),
    slack_channel: SlackChannel.default(null),
    enabled: z.boolean().default(true),
  })
  .meta({ id: 'CreateTriggerRequest' })
export type CreateTriggerRequest = z.infer<typeof CreateTriggerRequest>

export const UpdateTriggerRequest = z
  .strictObject({
    name: WorkName.optional(),
    prompt: Prompt.optional(),
    session_id: NamedSession.optional(),
    approval_mode: Approval.optional(),
    slack_channel: SlackChannel.optional(),
    enabled: z.boolean().optional(),
    rotate_secret: z.literal(true).optional().describe('Make a new secret (answered once); the old one stops at once'),
  })
  .meta({ id: 'UpdateTriggerRequest' })
export type UpdateTriggerRequest = z.infer<typeof UpdateTriggerRequest>

export const Trigger = z
  .object({
    id: z.uuid(),
    intern_id: z.uuid(),
    name: z.string(),
    prompt: z.string(),
    session_id: z.string().nullable(),
    approval_mode: Approval,
    slack_channel: z.string().nullable(),
    enabled: z.boolean(),
    url: z.string().describe('Where deliveries are POSTed, signed with the secret'),
    secret: z.string().optional().describe('Answered once, when made (create, rotate_secret); never again'),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'Trigger' })
export type Trigger = z.infer<typeof Trigger>

export const TurnState = z.enum([
  'queued',
  'running',
  'waiting',
  'done',
  'failed',
  'interrupted',
  'refused',
  'skipped',
  'expired',
])
export type TurnState = z.infer<typeof TurnState>

/** States a turn is over in: nothing more happens to it. */
export const ENDED_TURN_STATES: ReadonlySet<string> = new Set<TurnState>([
  'done',
  'failed',
  'interrupted',
  'refused',
  'skipped',
  'expired',
])

export const BackgroundTurn = z
  .object({
    id: z.uuid(),
    intern_id: z.uuid(),
    source: z.enum(['schedule', 'webhook', 'manual', 'subagent', 'report']),
    schedule_id: z.uuid().nullable(),
    trigger_id: z.uuid().nullable(),
    scheduled_for: z.iso.datetime().nullable().describe("The schedule's fire time it is"),
    session_id: z.string(),
    parent_session_id: z
      .string()
      .nullable()
      .describe("A subagent's: the session that started it (told there when it ends)"),
    model: z.string().nullable().describe("A subagent's model (null: the intern's)"),
    budget_usd: z.number().nullable().describe("A subagent's budget: it stops once it has spent this"),
    state: TurnState,
    reason: z.string().nullable().describe('Why it was refused, skipped, failed, interrupted or expired'),
    interaction_id: z.string().nullable().describe('The question a waiting turn asked (answer it in chat)'),
    output: z.string().nullable().describe("The turn's reply"),
    slack_channel: z.string().nullable().describe('The Slack conversation it reports in'),
    slack_report: z
      .string()
      .nullable()
      .describe('Its report in Slack: pending (it ended; the post waits for Slack), posted, or why it was not posted'),
    usage: z
      .object({ prompt_tokens: z.number(), completion_tokens: z.number(), total_tokens: z.number(), cost: z.number() })
      .nullable(),
    created_at: z.iso.datetime(),
    started_at: z.iso.datetime().nullable(),
    ended_at: z.iso.datetime().nullable(),
  })
  .meta({ id: 'BackgroundTurn' })
export type BackgroundTurn = z.infer<typeof BackgroundTurn>

/** What a webhook delivery is answered with, at once: its turn, queued. */
export const DeliveryAccepted = z.object({ turn_id: z.uuid(), state: TurnState }).meta({ id: 'DeliveryAccepted' })

/** An MCP server's name: its tools reach the model as `mcp__<name>__<tool>`. */
export const McpServerName = z
  .string()
  .min(1)
  .max(32)
  .regex(/^[a-z0-9][a-z0-9_-]*$/, 'lowercase letters, digits, _ and -, starting with a letter or digit')

/** A header an MCP server is sent: any value, which may name the intern's secrets as `{{secret:NAME}}`. */
const McpHeaders = z
  .record(
    z
      .string()
      .min(1)
      .max(128)
      .regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'a header name'),
    // A field value: no line breaks or other control characters (no header can be smuggled in).
    z
      .string()
      .max(4_096)
      .regex(/^[^\u0000-\u0008\u000a-\u001f\u007f]*$/, 'a header value: no line breaks or control characters'),
  )
  .refine((h) => Object.keys(h).length <= 20, 'at most 20 headers')

export const CreateMcpServerRequest = z
  .strictObject({
    name: McpServerName,
    url: z.url().max(2_048).describe('Its Streamable HTTP endpoint (http or https)'),
    headers: McpHeaders.default({}).describe(
      'Sent with every request; credentials as `{{secret:NAME}}`, a secret of the intern bound to its host',
    ),
    enabled: z.boolean().default(true),
  })
  .meta({ id: 'CreateMcpServerRequest' })
export type CreateMcpServerRequest = z.infer<typeof CreateMcpServerRequest>

export const UpdateMcpServerRequest = z
  .strictObject({
    name: McpServerName.optional(),
    url: z.url().max(2_048).optional(),
    headers: McpHeaders.optional(),
    enabled: z.boolean().optional(),
  })
  .meta({ id: 'UpdateMcpServerRequest' })
export type UpdateMcpServerRequest = z.infer<typeof UpdateMcpServerRequest>

/** A tool an MCP server offers, as its host last found it. */
export const McpTool = z.object({
  name: z.string().describe('As the server names it'),
  model_name: z.string().describe('As the model is offered it: mcp__<server>__<tool>'),
  description: z.string(),
})
export type McpTool = z.infer<typeof McpTool>

export const McpServer = z
  .object({
    id: z.uuid(),
    intern_id: z.uuid(),
    name: z.string(),
    url: z.string(),
    headers: z.record(z.string(), z.string()),
    enabled: z.boolean(),
    tools: z.array(McpTool).nullable().describe("Its tools when the intern's host last looked (null: not yet)"),
    tools_error: z.string().nullable().describe('What went wrong then (a tool left out, the server unreachable)'),
    tools_seen_at: z.iso.datetime().nullable(),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'McpServer' })
export type McpServer = z.infer<typeof McpServer>

/** PUT /interns/{id}/skills/{name}: a skill's folder, its files at once (SKILL.md among them). */
export const InstallSkillRequest = z
  .strictObject({
    files: z
      .array(
        z.union([
          z.strictObject({ path: z.string().min(1).max(512), content: z.string().max(8 * 1024 * 1024) }),
          z.strictObject({ path: z.string().min(1).max(512), content_base64: z.base64().max(12 * 1024 * 1024) }),
        ]),
      )
      .min(1)
      .max(100)
      .describe("Paths inside the skill's folder; SKILL.md begins with a front matter giving its name and description"),
  })
  .meta({ id: 'InstallSkillRequest' })
export type InstallSkillRequest = z.infer<typeof InstallSkillRequest>

export const Skill = z.object({ name: z.string(), description: z.string() }).meta({ id: 'Skill' })
export const SkillList = z
  .object({
    data: z.array(Skill),
    problems: z
      .array(z.object({ folder: z.string(), problem: z.string() }))
      .describe('Folders under skills/ that are not skills, and why (they are not offered)'),
  })
  .meta({ id: 'SkillList' })
