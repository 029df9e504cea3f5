import { randomUUID } from 'node:crypto'
import { z } from 'zod'
import { AppError } from '@roster/protocol'
import type { Db } from './db.js'
import type { Caller } from './caller.js'
import { assertManagementKey, MAX_KEY_LIMIT_USD } from './managed-keys.js'
import { BUILTIN_DETECTORS, DATA_REGIONS, type GuardrailRules } from '@roster/protocol'
import {
  deleteGuardrail,
  guardrailById,
  guardrailPage,
  insertGuardrail,
  lockGuardrail,
  updateGuardrail,
  type GuardrailFields,
  type GuardrailRow,
} from './repositories/guardrails.js'
import { accountWorkspaces } from './repositories/workspaces.js'
import { defaultGuardrailId, namedWorkspace, PageQuery } from './workspaces.js'
import { isUuid } from './interns/access.js'

// Guardrails (`client.guardrails`, governance-contract.md §8): policies on what keys and members
// may use, managed with a management key of the account. A new guardrail enforces nothing until
// it is assigned; a workspace's default guardrail (its id known from the workspace's) applies to
// every request of the workspace and is made the first time it is read or changed. A change
// reaches every API process at once (`changed`); the engine enforces them (packages/gateway).

const Name = z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters')
const Models = z.array(z.string().min(1).max(200)).max(500, 'at most 500 models').nullable()
const Providers = z.array(z.string().min(1).max(64)).max(200, 'at most 200 providers').nullable()
const Flag = z.boolean().nullable()
const Action = z.enum(['block', 'redact', 'flag'])
const DETECTORS = Object.keys(BUILTIN_DETECTORS) as (keyof typeof BUILTIN_DETECTORS)[]
const CustomFilter = z.strictObject({
  pattern: z.string().min(1, 'must not be empty').max(1_000, 'must be at most 1000 characters'),
  action: Action,
  label: z.string().trim().min(1).max(64).nullable().optional(),
})
const BuiltinFilter = z
  .strictObject({
    slug: z.string().refine((s) => (DETECTORS as string[]).includes(s), {
      message: `not a detector this Roster runs (it runs ${DETECTORS.join(', ')})`,
    }),
    action: Action,
    // "label is system-assigned … ignored on input".
    label: z.string().max(200).optional(),
    scan_scope: z.enum(['user_only', 'all_messages']).optional(),
  })
  .refine((b) => b.scan_scope === undefined || b.slug === 'regex-prompt-injection', {
    message: 'scan_scope applies to regex-prompt-injection only',
    path: ['scan_scope'],
  })
const RuleFields = {
  allowed_models: Models.optional(),
  ignored_models: Models.optional(),
  allowed_providers: Providers.optional(),
  ignored_providers: Providers.optional(),
  allowed_data_regions: z
    .array(z.enum(DATA_REGIONS))
    .min(1, 'an empty array is rejected: send null for no restriction')
    .nullable()
    .optional(),
  content_filters: z.array(CustomFilter).max(50, 'at most 50 custom filters').nullable().optional(),
  content_filter_builtins: z.array(BuiltinFilter).max(DETECTORS.length).nullable().optional(),
  enable_free_model_publication: Flag.optional(),
  enable_free_model_training: Flag.optional(),
  enable_paid_model_training: Flag.optional(),
  enforce_zdr: Flag.optional(),
  enforce_zdr_anthropic: Flag.optional(),
  enforce_zdr_openai: Flag.optional(),
  enforce_zdr_google: Flag.optional(),
  enforce_zdr_xai: Flag.optional(),
  enforce_zdr_other: Flag.optional(),
}
const RULE_KEYS = Object.keys(RuleFields) as (keyof GuardrailRules)[]
const ZDR_VENDOR_KEYS = [
  'enforce_zdr_anthropic',
  'enforce_zdr_openai',
  'enforce_zdr_google',
  'enforce_zdr_xai',
  'enforce_zdr_other',
] as const
const Common = {
  description: z.string().max(2_000, 'must be at most 2000 characters').nullable().optional(),
  limit_usd: z
    .number()
    .gt(0, 'must be greater than 0')
    .max(MAX_KEY_LIMIT_USD, `must be at most ${MAX_KEY_LIMIT_USD} (USD)`)
    .nullable()
    .optional(),
  reset_interval: z.enum(['daily', 'weekly', 'monthly']).nullable().optional(),
  include_byok_in_budgets: z.boolean().optional(),
  ...RuleFields,
}
export const CreateGuardrailBody = z.strictObject({
  name: Name,
  workspace_id: z.string().min(1).max(200).optional(),
  ...Common,
})
export const UpdateGuardrailBody = z.strictObject({ name: Name.optional(), ...Common })
export const GuardrailListQuery = PageQuery.extend({ workspace_id: z.string().min(1).max(200).optional() })
export const KeyHashesBody = z.strictObject({ key_hashes: z.array(z.string().max(200)).min(1).max(500) })
export const MemberIdsBody = z.strictObject({ member_user_ids: z.array(z.string().max(200)).min(1).max(500) })

type UpdateBody = z.infer<typeof UpdateGuardrailBody>

export interface GuardrailDeps {
  db: Db
  /** Told of a change to an account's guardrails, so every process forgets the account's keys. */
  changed: (accountId: string) => void | Promise<void>
  /** The catalogue's id of a model named by slug or canonical slug (undefined: not served). */
  canonicalModel: (id: string) => string | undefined
  /** The providers the catalogue routes to. */
  providers: () => readonly string[]
  /** Why RE2 refuses a pattern (undefined: it takes it). */
  patternError: (pattern: string) => string | undefined
}

/**
 * A management key's account. The client maps 403 for the operations that change a guardrail or
 * give it keys, 401 for the rest (governance §8's typed errors).
 */
export const guardrailsAccount = (caller: Caller, op: 'create' | 'other' = 'other') =>
  assertManagementKey(caller, op, 'managing guardrails')

/** The Guardrail object (§8.1): every rule, null where unset. */
export function guardrailView(g: GuardrailRow) {
  const rules = Object.fromEntries(RULE_KEYS.map((k) => [k, g.rules[k] ?? null]))
  return {
    id: g.id,
    name: g.name,
    description: g.description,
    workspace_id: g.workspace_id,
    limit_usd: g.limit_micros === null ? null : Number(g.limit_micros) / 1e6,
    reset_interval: g.reset_interval,
    include_byok_in_budgets: g.include_byok_in_budgets,
    ...rules,
    content_filters:
      g.rules.content_filters?.map((f) => ({ pattern: f.pattern, action: f.action, label: f.label ?? null })) ?? null,
    content_filter_builtins:
      g.rules.content_filter_builtins?.map((b) => ({
        slug: b.slug,
        action: b.action,
        label: BUILTIN_DETECTORS[b.slug],
        ...(b.slug === 'regex-prompt-injection' ? { scan_scope: b.scan_scope ?? 'all_messages' } : {}),
      })) ?? null,
    created_at: g.created_at.toISOString(),
    updated_at: g.updated_at?.toISOString() ?? null,
  }
}

const notFound = (id: string) =>
  new AppError('not_found', `no guardrail ${JSON.stringify(id.slice(0, 80))} in this account`)

/**
 * One of the account's guardrails. A workspace's default guardrail exists before it is stored: read,
 * it answers unconfigured; `materialise` (an update) stores it first, so that
 * `PATCH /guardrails/{default_guardrail_id}` works before anything made it.
 */
export async function guardrailOf(db: Db, accountId: string, id: string, materialise = false): Promise<GuardrailRow> {
  if (!isUuid(id)) throw notFound(id)
  const row = await guardrailById(db, accountId, id)
  if (row) return row
  const workspaces = await accountWorkspaces(db, accountId)
  const w = workspaces.find((x) => defaultGuardrailId(x.id) === id.toLowerCase())
  if (!w) throw notFound(id)
  const unconfigured = {
    id: defaultGuardrailId(w.id),
    accountId,
    workspaceId: w.id,
    isDefault: true,
    name: `${w.name} default`.slice(0, 200),
  }
  if (materialise) return insertGuardrail(db, unconfigured)
  return {
    id: unconfigured.id,
    account_id: accountId,
    workspace_id: w.id,
    is_default: true,
    name: unconfigured.name,
    description: null,
    limit_micros: null,
    reset_interval: null,
    include_byok_in_budgets: false,
    rules: {},
    created_at: w.created_at,
    updated_at: null,
  }
}

/** The rules a body sets, checked against the catalogue: models by their canonical slug. */
function rulesOf(deps: GuardrailDeps, body: UpdateBody): Partial<GuardrailRules> {
  const set: Partial<Record<keyof GuardrailRules, unknown>> = {}
  for (const k of RULE_KEYS) if (body[k] !== undefined) set[k] = body[k]
  for (const k of ['allowed_models', 'ignored_models'] as const) {
    const models = body[k]
    if (!models) continue
    set[k] = [
      ...new Set(
        models.map((m) => {
          const id = deps.canonicalModel(m)
          if (!id)
            throw new AppError('invalid_body', `${k}: no model ${JSON.stringify(m.slice(0, 80))} in the catalogue`)
          return id
        }),
      ),
    ]
  }
  for (const k of ['allowed_providers', 'ignored_providers'] as const) {
    const providers = body[k]
    if (!providers) continue
    const known = deps.providers()
    const unknown = providers.find((p) => !known.includes(p))
    if (unknown)
      throw new AppError(
        'invalid_body',
        `${k}: no provider ${JSON.stringify(unknown.slice(0, 64))} in the catalogue (it has ${known.join(', ')})`,
      )
    set[k] = [...new Set(providers)]
  }
  if (body.allowed_data_regions) set.allowed_data_regions = [...new Set(body.allowed_data_regions)]
  body.content_filters?.forEach((f, i) => {
    const why = deps.patternError(f.pattern)
    if (why) throw new AppError('invalid_body', `content_filters[${i}].pattern: ${why} (RE2 syntax)`)
  })
  if (body.content_filter_builtins) {
    const slugs = body.content_filter_builtins.map((b) => b.slug)
    const twice = slugs.find((s, i) => slugs.indexOf(s) !== i)
    if (twice) throw new AppError('invalid_body', `content_filter_builtins: ${twice} is named twice`)
    set.content_filter_builtins = body.content_filter_builtins.map(({ label: _ignored, ...b }) => b)
  }
  // The deprecated switch fills in for the vendors' that were not sent (§8.2).
  if (body.enforce_zdr !== undefined && body.enforce_zdr !== null)
    for (const k of ZDR_VENDOR_KEYS) if (body[k] === undefined) set[k] = body.enforce_zdr
  return set as Partial<GuardrailRules>
}

/** The spend limit a body sets: both or neither of limit_usd and reset_interval (400 otherwise). */
function limitOf(body: UpdateBody): Pick<GuardrailFields, 'limitMicros' | 'resetInterval'> {
  if (body.limit_usd === undefined && body.reset_interval === undefined) return {}
  const usd = body.limit_usd ?? null
  const interval = body.reset_interval ?? null
  if ((usd === null) !== (interval === null))
    throw new AppError(
      'invalid_body',
      'limit_usd and reset_interval must be provided together (both null removes the limit)',
    )
  const micros = usd === null ? null : BigInt(Math.round(usd * 1e6))
  if (micros !== null && micros <= 0n) throw new AppError('invalid_body', 'limit_usd must be at least 0.000001')
  return { limitMicros: micros, resetInterval: interval }
}

/** Rules after an update: a rule sent replaces what was there (the full set), null removes it. */
function merged(rules: GuardrailRules, set: Partial<GuardrailRules>): GuardrailRules {
  const out: Record<string, unknown> = { ...rules, ...set }
  for (const k of Object.keys(out)) if (out[k] === null) delete out[k]
  return out as GuardrailRules
}

export async function listGuardrails(deps: GuardrailDeps, caller: Caller, q: z.infer<typeof GuardrailListQuery>) {
  const accountId = guardrailsAccount(caller)
  const w = await namedWorkspace(deps.db, accountId, q.workspace_id)
  const { rows, total } = await guardrailPage(deps.db, w.id, q.offset, q.limit)
  return { data: rows.map(guardrailView), total_count: total }
}

export async function addGuardrail(deps: GuardrailDeps, caller: Caller, body: z.infer<typeof CreateGuardrailBody>) {
  const accountId = guardrailsAccount(caller, 'create')
  const w = await namedWorkspace(deps.db, accountId, body.workspace_id)
  const limit = limitOf(body)
  const row = await insertGuardrail(deps.db, {
    id: randomUUID(),
    accountId,
    workspaceId: w.id,
    isDefault: false,
    name: body.name,
    description: body.description ?? null,
    limitMicros: limit.limitMicros ?? null,
    resetInterval: limit.resetInterval ?? null,
    includeByokInBudgets: body.include_byok_in_budgets ?? false,
    rules: merged({}, rulesOf(deps, body)),
  })
  return { data: guardrailView(row) }
}

export async function getGuardrail(deps: GuardrailDeps, caller: Caller, id: string) {
  return { data: guardrailView(await guardrailOf(deps.db, guardrailsAccount(caller), id)) }
}

/** PATCH: omitted fields stay; a list sent replaces the list; null removes it. Applies at once everywhere. */
export async function patchGuardrail(deps: GuardrailDeps, caller: Caller, id: string, body: UpdateBody) {
  const accountId = guardrailsAccount(caller, 'create')
  // Checked before anything is stored (a default guardrail is made by its first update).
  const set = rulesOf(deps, body)
  const limit = limitOf(body)
  const current = await guardrailOf(deps.db, accountId, id, true)
  const row = await deps.db.$transaction(async (tx) => {
    // Locked and read again: two updates at once each merge into what the other wrote.
    await lockGuardrail(tx, current.id)
    const now = (await guardrailById(tx, accountId, current.id)) ?? current
    return updateGuardrail(tx, now, {
      name: body.name,
      description: body.description,
      ...limit,
      includeByokInBudgets: body.include_byok_in_budgets,
      rules: merged(now.rules, set),
    })
  })
  await deps.changed(accountId)
  return { data: guardrailView(row) }
}

/** DELETE: the guardrail and its assignments go; a workspace's default one is left unconfigured. */
export async function dropGuardrail(deps: GuardrailDeps, caller: Caller, id: string) {
  const accountId = guardrailsAccount(caller)
  const g = await guardrailOf(deps.db, accountId, id)
  await deleteGuardrail(deps.db, g.id)
  await deps.changed(accountId)
  return { deleted: true as const }
}
