import { createHash } from 'node:crypto'
import { z } from 'zod'
import { AppError } from '@roster/protocol'
import type { Db } from './db.js'
import type { Caller } from './caller.js'
import { assertManagementKey, MAX_KEY_LIMIT_USD } from './managed-keys.js'
import {
  accountUsers,
  budgetsOf,
  defaultWorkspaceOf,
  deleteBudget,
  deleteMembers,
  deleteWorkspace,
  hasActiveKeys,
  insertMembers,
  insertWorkspace,
  lockWorkspace,
  memberPage,
  membersWithActiveKeys,
  updateByokInBudgets,
  updateWorkspace,
  upsertBudget,
  workspaceByRef,
  workspacePage,
  type BudgetInterval,
  type BudgetRow,
  type MemberRow,
  type WorkspaceFields,
  type WorkspaceRow,
} from './repositories/workspaces.js'

// Workspaces (`client.workspaces`, governance-contract.md §2): an account's workspaces with their
// settings, members and budgets, managed with a management key of the account. A budget bounds
// what the workspace's keys (interns' included) spend in its interval; a change reaches every API
// process at once (`changed`).

/** The server tools a workspace may disable, as the client names them. */
export const SERVER_TOOL_NAMES = [
  'openrouter:advisor',
  'openrouter:apply_patch',
  'openrouter:bash',
  'openrouter:datetime',
  'openrouter:files',
  'openrouter:fusion',
  'openrouter:image_generation',
  'openrouter:experimental__search_models',
  'openrouter:shell',
  'openrouter:subagent',
  'openrouter:tool_search',
  'openrouter:web_fetch',
  'openrouter:web_search',
] as const

const Slug = z
  .string()
  .max(64, 'must be at most 64 characters')
  .regex(/^[a-z0-9]+(-[a-z0-9]+)*$/, 'must be lowercase letters and digits in segments joined by single hyphens')
const Name = z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters')
const Text = (max: number) => z.string().max(max, `must be at most ${max} characters`).nullable()
const Fields = {
  description: Text(2_000).optional(),
  default_text_model: Text(200).optional(),
  default_image_model: Text(200).optional(),
  default_provider_sort: z.enum(['price', 'throughput', 'latency', 'exacto']).nullable().optional(),
  disabled_server_tools: z.array(z.enum(SERVER_TOOL_NAMES)).max(SERVER_TOOL_NAMES.length).nullable().optional(),
  io_logging_api_key_ids: z.array(z.number().int().min(1)).max(1_000).nullable().optional(),
  io_logging_sampling_rate: z.number().min(0.0001).max(1).optional(),
  is_data_discount_logging_enabled: z.boolean().optional(),
  is_observability_broadcast_enabled: z.boolean().optional(),
  is_observability_io_logging_enabled: z.boolean().optional(),
}
export const CreateWorkspaceBody = z.strictObject({ name: Name, slug: Slug, ...Fields })
export const UpdateWorkspaceBody = z.strictObject({ name: Name.optional(), slug: Slug.optional(), ...Fields })
/** The client's offset/limit paging of 50 by default, 100 at most (governance-contract.md §0.1, P50). */
export const PageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(50),
  offset: z.coerce.number().int().min(0).default(0),
})
export const DeleteWorkspaceQuery = z.object({
  confirm_default_workspace_deletion: z.enum(['true', 'false']).optional(),
})
export const MembersBody = z.strictObject({ user_ids: z.array(z.string().max(64)).min(1).max(500) })
export const BudgetBody = z.strictObject({
  limit_usd: z
    .number()
    .gt(0, 'must be greater than 0')
    .max(MAX_KEY_LIMIT_USD, `must be at most ${MAX_KEY_LIMIT_USD} (USD)`),
  include_byok_in_budgets: z.boolean().optional(),
})
export const INTERVALS = ['daily', 'weekly', 'monthly', 'lifetime'] as const

export interface WorkspaceDeps {
  db: Db
  /** Told of a workspace whose budgets or switches changed, so every process forgets its keys. */
  changed: (workspaceId: string) => void | Promise<void>
  /** Whether the catalogue has a model (default models must name one). */
  knownModel: (id: string) => boolean
}

/** A management key's account (assertManagementKey's refusals otherwise). */
const managementAccount = (caller: Caller, op: 'create' | 'other' = 'other') =>
  assertManagementKey(caller, op, 'managing workspaces')

/**
 * The workspace a body or query names in `workspace_id` (by id or slug), the account's default one
 * when it names none: 400 naming it when it is not one of the account's.
 */
export async function namedWorkspace(db: Db, accountId: string, ref: string | undefined): Promise<WorkspaceRow> {
  const w = ref === undefined ? await defaultWorkspaceOf(db, accountId) : await workspaceByRef(db, accountId, ref)
  if (!w)
    throw new AppError(
      'invalid_body',
      ref === undefined
        ? 'this account has no default workspace: name one with workspace_id'
        : `workspace_id: no workspace ${JSON.stringify(ref.slice(0, 80))} in this account`,
    )
  return w
}

/** The workspace's default guardrail's id: derived from the workspace's, so it is known before it exists. */
export function defaultGuardrailId(workspaceId: string): string {
  const h = createHash('sha256').update(`roster default guardrail ${workspaceId}`).digest('hex')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`
}

/** The Workspace object (§2.1). */
export function workspaceView(w: WorkspaceRow) {
  return {
    id: w.id,
    name: w.name,
    slug: w.slug,
    description: w.description,
    default_text_model: w.default_text_model,
    default_image_model: w.default_image_model,
    default_provider_sort: w.default_provider_sort,
    default_guardrail_id: defaultGuardrailId(w.id),
    created_at: w.created_at.toISOString(),
    updated_at: w.updated_at?.toISOString() ?? null,
    created_by: w.created_by,
    io_logging_api_key_ids: w.io_logging_api_key_ids,
    io_logging_sampling_rate: w.io_logging_sampling_rate,
    is_data_discount_logging_enabled: w.data_discount_logging,
    is_observability_broadcast_enabled: w.observability_broadcast,
    is_observability_io_logging_enabled: w.io_logging,
    disabled_server_tools: w.disabled_server_tools,
    include_byok_in_budgets: w.include_byok_in_budgets,
  }
}

const notFound = (ref: string) =>
  new AppError('not_found', `no workspace ${JSON.stringify(ref.slice(0, 80))} in this account`)

async function found(db: Db, accountId: string, ref: string): Promise<WorkspaceRow> {
  const w = await workspaceByRef(db, accountId, ref)
  if (!w) throw notFound(ref)
  return w
}

type Body = z.infer<typeof UpdateWorkspaceBody>

function fieldsOf(deps: WorkspaceDeps, body: Body): WorkspaceFields {
  for (const key of ['default_text_model', 'default_image_model'] as const) {
    const model = body[key]
    if (model && !deps.knownModel(model))
      throw new AppError('invalid_body', `${key}: no model ${JSON.stringify(model.slice(0, 80))} in the catalogue`)
  }
  return {
    slug: body.slug,
    name: body.name,
    description: body.description,
    defaultTextModel: body.default_text_model,
    defaultImageModel: body.default_image_model,
    defaultProviderSort: body.default_provider_sort,
    // "An empty array or null clears the list".
    disabledServerTools:
      body.disabled_server_tools === undefined
        ? undefined
        : body.disabled_server_tools?.length
          ? [...new Set(body.disabled_server_tools)]
          : null,
    dataDiscountLogging: body.is_data_discount_logging_enabled,
    observabilityBroadcast: body.is_observability_broadcast_enabled,
    ioLogging: body.is_observability_io_logging_enabled,
    ioLoggingRate: body.io_logging_sampling_rate,
    ioLoggingKeyNumbers: body.io_logging_api_key_ids,
  }
}

const isSlugTaken = (err: unknown) => (err as { code?: string }).code === 'P2002'
const slugTaken = (slug: string | undefined) =>
  new AppError('invalid_body', `slug ${JSON.stringify(slug)} is taken by another workspace of this account`)

export async function listWorkspaces(deps: WorkspaceDeps, caller: Caller, q: z.infer<typeof PageQuery>) {
  const { rows, total } = await workspacePage(deps.db, managementAccount(caller), q.offset, q.limit)
  return { data: rows.map(workspaceView), total_count: total }
}

export async function addWorkspace(deps: WorkspaceDeps, caller: Caller, body: z.infer<typeof CreateWorkspaceBody>) {
  const accountId = managementAccount(caller, 'create')
  try {
    const row = await insertWorkspace(deps.db, accountId, { ...fieldsOf(deps, body), createdBy: caller.userId })
    return { data: workspaceView(row) }
  } catch (err) {
    if (isSlugTaken(err)) throw slugTaken(body.slug)
    throw err
  }
}

export async function getWorkspace(deps: WorkspaceDeps, caller: Caller, ref: string) {
  return { data: workspaceView(await found(deps.db, managementAccount(caller), ref)) }
}

/** PATCH: omitted fields stay; null clears a nullable one. Applies at once on every API process. */
export async function patchWorkspace(deps: WorkspaceDeps, caller: Caller, ref: string, body: Body) {
  const accountId = managementAccount(caller, 'create')
  const w = await found(deps.db, accountId, ref)
  try {
    const row = await updateWorkspace(deps.db, w, fieldsOf(deps, body))
    await deps.changed(w.id)
    return { data: workspaceView(row) }
  } catch (err) {
    if (isSlugTaken(err)) throw slugTaken(body.slug)
    throw err
  }
}

/** DELETE: refused while a key of the workspace authenticates, and for the default one without confirmation. */
export async function dropWorkspace(deps: WorkspaceDeps, caller: Caller, ref: string, confirmDefault: boolean) {
  const accountId = managementAccount(caller, 'create')
  const w = await found(deps.db, accountId, ref)
  if (w.is_default && !confirmDefault)
    throw new AppError(
      'invalid_body',
      'this is the account’s default workspace: send confirm_default_workspace_deletion=true to delete it',
    )
  if (await hasActiveKeys(deps.db, w.id))
    throw new AppError(
      'invalid_body',
      'this workspace has active API keys (interns’ included), or its members hold active keys in other workspaces: delete or disable them first',
    )
  await deleteWorkspace(deps.db, w.id)
  await deps.changed(w.id)
  return { deleted: true as const }
}

// ── members ──────────────────────────────────────────────────────────────────────────────────────

const memberView = (m: MemberRow) => ({
  id: m.id,
  workspace_id: m.workspace_id,
  user_id: m.user_id,
  role: m.role,
  created_at: m.created_at.toISOString(),
})

export async function listMembers(deps: WorkspaceDeps, caller: Caller, ref: string, q: z.infer<typeof PageQuery>) {
  const w = await found(deps.db, managementAccount(caller, 'create'), ref)
  const { rows, total } = await memberPage(deps.db, w, q.offset, q.limit)
  return { data: rows.map(memberView), total_count: total }
}

/** The account's members among `userIds`, else 400 naming the first that is not. */
async function ofAccount(db: Db, accountId: string, userIds: string[]) {
  const ids = [...new Set(userIds)]
  const uuid = z.uuid()
  const known = await accountUsers(
    db,
    accountId,
    ids.filter((id) => uuid.safeParse(id).success),
  )
  const stranger = ids.find((id) => !known.has(id))
  if (stranger)
    throw new AppError('invalid_body', `user ${JSON.stringify(stranger.slice(0, 80))} is not a member of this account`)
  return known
}

/** Adds members of the account to a workspace; those already members stay as they are. */
export async function addMembers(deps: WorkspaceDeps, caller: Caller, ref: string, userIds: string[]) {
  const accountId = managementAccount(caller, 'create')
  const w = await found(deps.db, accountId, ref)
  const known = await ofAccount(deps.db, accountId, userIds)
  // A user's own workspace, and the default one, hold it already.
  const toAdd = w.is_default ? [] : [...known].filter(([, home]) => home !== w.id).map(([id]) => id)
  const added = toAdd.length ? await insertMembers(deps.db, w.id, toAdd) : []
  return { added_count: added.length, data: added.map(memberView) }
}

/** Removes members added to a workspace; refused for those holding active keys in it, or whose own it is. */
export async function removeMembers(deps: WorkspaceDeps, caller: Caller, ref: string, userIds: string[]) {
  const accountId = managementAccount(caller, 'create')
  const w = await found(deps.db, accountId, ref)
  const known = await ofAccount(deps.db, accountId, userIds)
  const own = [...known].find(([, home]) => home === w.id || w.is_default)
  if (own)
    throw new AppError(
      'invalid_body',
      `user ${own[0]} belongs to this workspace (its own, or the account's default) and cannot be removed from it`,
    )
  const holding = await membersWithActiveKeys(deps.db, w.id, [...known.keys()])
  if (holding.length)
    throw new AppError('invalid_body', `user ${holding[0]} has active API keys in this workspace: delete them first`)
  return { removed_count: await deleteMembers(deps.db, w.id, [...known.keys()]) }
}

// ── budgets ──────────────────────────────────────────────────────────────────────────────────────

const budgetView = (b: BudgetRow) => ({
  id: b.id,
  workspace_id: b.workspace_id,
  limit_usd: Number(b.limit_micros) / 1e6,
  reset_interval: b.interval === 'lifetime' ? null : b.interval,
  created_at: b.created_at.toISOString(),
  updated_at: b.updated_at.toISOString(),
})

function intervalOf(interval: string): BudgetInterval {
  if ((INTERVALS as readonly string[]).includes(interval)) return interval as BudgetInterval
  throw new AppError('invalid_body', `interval must be one of ${INTERVALS.join(', ')}`)
}

export async function listBudgets(deps: WorkspaceDeps, caller: Caller, ref: string) {
  const w = await found(deps.db, managementAccount(caller), ref)
  const rows = await budgetsOf(deps.db, w.id)
  const order = (b: BudgetRow) => INTERVALS.indexOf(b.interval)
  return {
    data: rows.sort((a, b) => order(a) - order(b)).map(budgetView),
    include_byok_in_budgets: w.include_byok_in_budgets,
  }
}

export async function getBudget(deps: WorkspaceDeps, caller: Caller, ref: string, interval: string) {
  const which = intervalOf(interval)
  const w = await found(deps.db, managementAccount(caller), ref)
  const b = (await budgetsOf(deps.db, w.id)).find((r) => r.interval === which)
  if (!b) throw new AppError('not_found', `workspace ${w.slug} has no ${which} budget`)
  return { data: budgetView(b), include_byok_in_budgets: w.include_byok_in_budgets }
}

/**
 * PUT: creates or replaces the interval's budget. Limits must strictly decrease as the interval
 * narrows (lifetime > monthly > weekly > daily); the BYOK switch, when sent, applies to every
 * interval. Applies at once on every API process.
 */
export async function setBudget(
  deps: WorkspaceDeps,
  caller: Caller,
  ref: string,
  interval: string,
  body: z.infer<typeof BudgetBody>,
) {
  const which = intervalOf(interval)
  const w = await found(deps.db, managementAccount(caller), ref)
  const micros = BigInt(Math.round(body.limit_usd * 1e6))
  if (micros <= 0n) throw new AppError('invalid_body', 'limit_usd must be at least 0.000001')
  const { row, byok } = await deps.db.$transaction(async (tx) => {
    // The workspace's row locked, so two budgets set at once are checked against each other.
    await lockWorkspace(tx, w.id)
    const others = (await budgetsOf(tx, w.id)).filter((b) => b.interval !== which)
    const rank = INTERVALS.indexOf(which)
    for (const b of others) {
      const wider = INTERVALS.indexOf(b.interval) > rank
      if (wider ? b.limit_micros <= micros : b.limit_micros >= micros)
        throw new AppError(
          'invalid_body',
          `budget limits must strictly decrease as the interval narrows (lifetime > monthly > weekly > daily): the ${b.interval} budget is ${Number(b.limit_micros) / 1e6} USD`,
        )
    }
    const row = await upsertBudget(tx, w.id, which, micros)
    if (body.include_byok_in_budgets !== undefined) await updateByokInBudgets(tx, w.id, body.include_byok_in_budgets)
    return { row, byok: body.include_byok_in_budgets ?? w.include_byok_in_budgets }
  })
  await deps.changed(w.id)
  return { data: budgetView(row), include_byok_in_budgets: byok }
}

/** DELETE: the interval's budget gone (or never there): 200 either way. */
export async function removeBudget(deps: WorkspaceDeps, caller: Caller, ref: string, interval: string) {
  const which = intervalOf(interval)
  const w = await found(deps.db, managementAccount(caller), ref)
  await deleteBudget(deps.db, w.id, which)
  await deps.changed(w.id)
  return { deleted: true as const }
}
