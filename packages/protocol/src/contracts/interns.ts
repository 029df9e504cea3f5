import { z } from 'zod'
import { CreateSlackLink } from './slack.js'

export const InternStatus = z.enum([
  'awaiting_slack_install',
  'queued',
  'provisioning',
  'running',
  'failed',
  'stopped',
  'destroying',
  'destroy_failed',
])
export type InternStatus = z.infer<typeof InternStatus>

export const InternName = z
  .string()
  .min(2)
  .max(17)
  .regex(/^[a-z][a-z0-9]*(-[a-z0-9]+)*$/, 'lowercase letters, digits and single hyphens, starting with a letter')

export const CreateInternRequest = z
  .strictObject({
    name: InternName,
    description: z.string().max(2000).nullable().optional(),
    instructions: z.string().max(100_000).nullable().optional(),
    provision: z.boolean().default(false),
    vault_id: z.uuid().optional(),
    workspace_id: z.uuid().optional(),
    /** Ours: link the intern to a Slack app of its own; it waits in awaiting_slack_install until installed. */
    slack: CreateSlackLink.optional(),
  })
  .meta({ id: 'CreateInternRequest' })
export type CreateInternRequest = z.infer<typeof CreateInternRequest>

export const InternProgress = z
  .object({
    step_label: z.string(),
    step_number: z.int().min(1),
    total_steps: z.int().min(1),
  })
  .meta({ id: 'InternProgress' })
export type InternProgress = z.infer<typeof InternProgress>

const internFields = {
  id: z.uuid(),
  name: z.string(),
  description: z.string().nullable(),
  instructions: z.string().nullable(),
  model: z.string().nullable(),
  status: InternStatus,
  last_failure_message: z.string().nullable(),
  progress: InternProgress.nullable(),
  hostname: z.string().nullable(),
  workspace_id: z.uuid(),
  vault_id: z.uuid().nullable(),
  attached_vault_id: z.uuid().nullable(),
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
}

/** The Intern as returned by create: the fourteen keys, nullable ones always present. */
export const Intern = z.object(internFields).meta({ id: 'Intern' })
export type Intern = z.infer<typeof Intern>

/** The Intern as returned by retrieve and list: adds created_by_you (not for organization keys) and icon_sha256. */
export const InternView = z
  .object({
    ...internFields,
    created_by_you: z.boolean().optional(),
    icon_sha256: z.string().nullable(),
  })
  .meta({ id: 'InternView' })
export type InternView = z.infer<typeof InternView>

export const InternIdParams = z.object({ internId: z.string() })

export const InternLifecycleError = z
  .object({
    error: z.strictObject({
      code: z.union([z.int(), z.string()]),
      message: z.string(),
      metadata: z.strictObject({ reason: z.string(), retryable: z.boolean() }).optional(),
    }),
  })
  .strict()
  .meta({ id: 'InternLifecycleError' })
export type InternLifecycleError = z.infer<typeof InternLifecycleError>

/** `author/slug` with an optional `:variant`, as model slugs are written everywhere else. */
export const ModelSlug = z
  .string()
  .max(200)
  .regex(
    /^[a-z0-9][a-z0-9._-]*\/[a-z0-9][a-z0-9._-]*(:[a-z0-9][a-z0-9._-]*)?$/i,
    'must look like author/slug or author/slug:variant',
  )

export const UpdateInternRequest = z
  .strictObject({
    name: InternName.optional(),
    description: z.string().max(2000).nullable().optional(),
    instructions: z.string().max(100_000).nullable().optional(),
    model: ModelSlug.nullable().optional(),
  })
  .meta({ id: 'UpdateInternRequest' })
export type UpdateInternRequest = z.infer<typeof UpdateInternRequest>

export const DeleteInternRequest = z
  .strictObject({ acknowledge_workspace_loss: z.boolean().default(false) })
  .meta({ id: 'DeleteInternRequest' })
export type DeleteInternRequest = z.infer<typeof DeleteInternRequest>

/** provision and suspend take no body; one that carries any field is refused. */
export const EmptyBody = z.strictObject({}).nullish()

export const ListInternsQuery = z.strictObject({
  status: z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined) return undefined
      const values = [
        ...new Set(
          v
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean),
        ),
      ]
      if (values.length === 0 || values.length > 8) {
        ctx.addIssue({ code: 'custom', message: 'status takes 1 to 8 comma-separated values' })
        return z.NEVER
      }
      for (const s of values) {
        if (!InternStatus.safeParse(s).success) {
          ctx.addIssue({ code: 'custom', message: `unknown status ${s}` })
          return z.NEVER
        }
      }
      return values as InternStatus[]
    }),
  limit: z.coerce.number().int().min(1).max(500).default(50),
  starting_after: z.string().max(200).optional(),
  workspace_id: z.uuid().optional(),
  q: z.string().trim().min(1).max(100).optional().describe('Only interns whose name holds this text (any case)'),
})
export type ListInternsQuery = z.infer<typeof ListInternsQuery>

export const InternList = z
  .object({ data: z.array(InternView), has_more: z.boolean(), next_cursor: z.string().optional() })
  .meta({ id: 'InternList' })
export type InternList = z.infer<typeof InternList>

export const ProvisionAccepted = z.object({ provisioning: z.literal(true) })
export const SuspendDone = z.object({ suspended: z.literal(true) })
export const DeleteAccepted = z.object({ deleting: z.literal(true) })
