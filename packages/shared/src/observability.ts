import { createHmac, randomUUID } from 'node:crypto'

import { z } from 'zod'
import { AppError } from '@roster/protocol'
import type { Db } from './db.js'
import type { Caller } from './caller.js'

import { assertManagementKey, keysNamedByHash } from './managed-keys.js'
import { seal, unseal } from './vault/seal.js'
import {
  deleteDestination,
  destinationById,
  destinationPage,
  destinationsOfType,
  insertDestination,
  updateDestination,
  type DestinationFields,
  type DestinationRow,
} from './repositories/observability-destinations.js'
import { isUuid } from './interns/access.js'
import { namedWorkspace, PageQuery } from './workspaces.js'

// Observability destinations (`client.observability`, governance-contract.md §10): where a
// workspace's generations are sent as they are recorded. Roster delivers to `webhook` (JSON) and
// `otel-collector` (OTLP/HTTP, the GenAI conventions its own traces use); other types are refused.
// A destination's config (URLs, tokens, headers) is sealed like provider keys and shown masked.
// Delivery runs in the workers (apps/worker/src/destinations.ts).

/** The types Roster delivers to. */
export const DELIVERED_TYPES = ['webhook', 'otel-collector'] as const
export type DeliveredType = (typeof DELIVERED_TYPES)[number]
/** Every type the client knows (others are refused with 400 naming those delivered). */
const KNOWN_TYPES = [
  'arize',
  'braintrust',
  'clickhouse',
  'datadog',
  'grafana',
  'langfuse',
  'langsmith',
  'newrelic',
  'opik',
  'otel-collector',
  'posthog',
  'ramp',
  's3',
  'sentry',
  'snowflake',
  'weave',
  'webhook',
]
/** "A maximum of 5 destinations per type is allowed." */
const PER_TYPE = 5
/** What a masked config value reads as; sent back on an update, it keeps the current value. */
export const MASK = '********'

const Headers = z.record(z.string().min(1).max(200), z.string().max(4_096)).refine((h) => Object.keys(h).length <= 50, {
  message: 'at most 50 headers',
})
const HttpUrl = z
  .string()
  .max(2_048)
  .refine((u) => {
    try {
      return ['http:', 'https:'].includes(new URL(u).protocol)
    } catch {
      return false
    }
  }, 'must be an http(s) URL')
const CONFIGS = {
  webhook: z.strictObject({
    url: HttpUrl,
    method: z.enum(['POST', 'PUT']).default('POST'),
    headers: Headers.optional(),
  }),
  'otel-collector': z.strictObject({ endpoint: HttpUrl, headers: Headers.optional() }),
} as const
export type DestinationConfig =
  | ({ type: 'webhook' } & z.infer<(typeof CONFIGS)['webhook']>)
  | ({ type: 'otel-collector' } & z.infer<(typeof CONFIGS)['otel-collector']>)

/** Filter rules: a generation is sent when any group holds (a group's rules joined by its logic). */
const FILTER_FIELDS = {
  model: 'string',
  provider: 'string',
  door: 'string',
  finish_reason: 'string',
  session_id: 'string',
  app_title: 'string',
  http_referer: 'string',
  user_id: 'string',
  is_byok: 'boolean',
  streamed: 'boolean',
  cancelled: 'boolean',
  total_cost: 'number',
  tokens_prompt: 'number',
  tokens_completion: 'number',
  latency_ms: 'number',
} as const
export type FilterField = keyof typeof FILTER_FIELDS
export const FILTER_OPERATORS = [
  'eq',
  'neq',
  'contains',
  'not_contains',
  'starts_with',
  'gt',
  'gte',
  'lt',
  'lte',
  'exists',
  'not_exists',
] as const
const Rule = z.strictObject({
  field: z.string().refine((f) => Object.hasOwn(FILTER_FIELDS, f), {
    message: `not a field rules may test (they test ${Object.keys(FILTER_FIELDS).join(', ')})`,
  }),
  operator: z.enum(FILTER_OPERATORS),
  value: z.union([z.string().max(500), z.number()]).optional(),
})
const FilterRules = z
  .strictObject({
    enabled: z.boolean().optional(),
    groups: z
      .array(z.strictObject({ logic: z.enum(['and', 'or']).optional(), rules: z.array(Rule).min(1).max(50) }))
      .max(20),
  })
  .nullable()
export type FilterRules = z.infer<typeof FilterRules>

const Regions = z
  .array(z.enum(['global', 'europe', 'us', 'eu']))
  .min(1, 'name at least one region')
  .transform((r) => [...new Set(r.map((x) => (x === 'eu' ? 'europe' : x)))])
const Common = {
  name: z.string().trim().max(200).nullable().optional(),
  config: z.record(z.string(), z.unknown()),
  enabled: z.boolean().optional(),
  privacy_mode: z.boolean().optional(),
  broadcast_generation_cost: z.boolean().optional(),
  broadcast_generation_identity: z.boolean().optional(),
  broadcast_generation_request_context: z.boolean().optional(),
  api_key_hashes: z
    .array(z.string().max(200))
    .min(1, 'must contain at least one hash if provided')
    .max(500)
    .nullable()
    .optional(),
  filter_rules: FilterRules.optional(),
  regions: Regions.optional(),
  sampling_rate: z.number().min(0.0001).max(1).optional(),
}
export const CreateDestinationBody = z.strictObject({
  ...Common,
  name: z.string().trim().min(1).max(200),
  type: z.string().max(64),
  workspace_id: z.string().min(1).max(200).optional(),
})
export const UpdateDestinationBody = z.strictObject({ ...Common, config: Common.config.optional() })
export const DestinationListQuery = PageQuery.extend({ workspace_id: z.string().min(1).max(200).optional() })

export interface DestinationDeps {
  db: Db
  masterKey: Buffer | undefined
  /** Told of a destination made healthy by hand (an update): its failed deliveries go again. */
  retryFailed?: (destinationId: string) => Promise<void>
}

const sealingKey = (masterKey: Buffer) =>
  createHmac('sha256', masterKey).update('roster observability destinations').digest()
const aad = (id: string) => `destination:${id}`

function keyOf(deps: Pick<DestinationDeps, 'masterKey'>) {
  if (!deps.masterKey)
    throw new AppError(
      'configuration_error',
      'destination configs are sealed with the vault master key, and VAULT_MASTER_KEY is not set on this API',
    )
  return sealingKey(deps.masterKey)
}

/** A destination's config, unsealed (for delivery and for its masked view). */
export function openConfig(masterKey: Buffer, row: Pick<DestinationRow, 'id' | 'type' | 'config'>): DestinationConfig {
  const plain = JSON.parse(unseal(sealingKey(masterKey), Buffer.from(row.config!), aad(row.id)).toString('utf8'))
  return { type: row.type, ...plain } as DestinationConfig
}

/** A config as shown: header values masked (they carry tokens), URLs without their credentials. */
function maskedConfig(config: DestinationConfig) {
  const { type: _type, ...rest } = config
  const out: Record<string, unknown> = { ...rest }
  for (const k of ['url', 'endpoint'] as const) {
    const v = out[k]
    if (typeof v !== 'string') continue
    const u = new URL(v)
    if (u.password) u.password = MASK
    out[k] = u.toString()
  }
  if (rest.headers) out.headers = Object.fromEntries(Object.keys(rest.headers).map((h) => [h, MASK]))
  return out
}

/** The Destination object (§10.1): 16 keys, the config masked. */
export function destinationView(row: DestinationRow, masterKey: Buffer | undefined) {
  return {
    id: row.id,
    type: row.type,
    name: row.name,
    workspace_id: row.workspace_id,
    enabled: row.enabled,
    privacy_mode: row.privacy_mode,
    broadcast_generation_cost: row.broadcast_generation_cost,
    broadcast_generation_identity: row.broadcast_generation_identity,
    broadcast_generation_request_context: row.broadcast_generation_request_context,
    api_key_hashes: row.api_key_hashes,
    regions: row.regions,
    sampling_rate: row.sampling_rate,
    filter_rules: row.filter_rules ?? null,
    config: row.config && masterKey ? maskedConfig(openConfig(masterKey, row)) : {},
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    // Roster's, beyond the contract's fields (clients that check them drop it): how deliveries go.
    delivery: {
      failures: row.failures,
      last_error: row.last_error,
      last_delivered_at: row.last_delivered_at?.toISOString() ?? null,
    },
  }
}

const account = (caller: Caller, op: 'create' | 'other' = 'other') =>
  assertManagementKey(caller, op, 'managing observability destinations')
const notFound = (id: string) =>
  new AppError('not_found', `no observability destination ${JSON.stringify(id.slice(0, 80))} in this account`)

async function found(db: Db, accountId: string, id: string) {
  const row = isUuid(id) ? await destinationById(db, accountId, id) : undefined
  if (!row) throw notFound(id)
  return row
}

/** A type's config checked (unknown fields, missing URLs: 400). */
function configOf(type: DeliveredType, raw: Record<string, unknown>) {
  const parsed = CONFIGS[type].safeParse(raw)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!
    throw new AppError('invalid_body', `config${issue.path.length ? `.${issue.path.join('.')}` : ''}: ${issue.message}`)
  }
  return parsed.data
}

/** An update's config over the current one: unset fields keep their value, masked values too. */
function mergedConfig(current: DestinationConfig, sent: Record<string, unknown>) {
  const { type: _type, ...was } = current
  const out: Record<string, unknown> = { ...was }
  for (const [k, v] of Object.entries(sent)) {
    if (v === MASK) continue
    if (k === 'headers' && v && typeof v === 'object') {
      const headers: Record<string, unknown> = { ...(was as { headers?: Record<string, string> }).headers }
      for (const [h, hv] of Object.entries(v)) if (hv !== MASK) headers[h] = hv
      out.headers = headers
    } else if ((k === 'url' || k === 'endpoint') && typeof v === 'string' && v.includes(MASK)) continue
    else out[k] = v
  }
  return out
}

async function keyIdsOf(db: Db, accountId: string, hashes: string[] | null | undefined) {
  if (!hashes) return hashes
  const keys = await keysNamedByHash(db, accountId, hashes, 'api_key_hashes')
  return { hashes: [...keys.keys()], ids: [...keys.values()].map((k) => k.id) }
}

type Body = z.infer<typeof UpdateDestinationBody>

async function fieldsOf(deps: DestinationDeps, accountId: string, body: Body): Promise<DestinationFields> {
  const keys = await keyIdsOf(deps.db, accountId, body.api_key_hashes)
  return {
    name: body.name,
    enabled: body.enabled,
    privacyMode: body.privacy_mode,
    broadcastCost: body.broadcast_generation_cost,
    broadcastIdentity: body.broadcast_generation_identity,
    broadcastRequestContext: body.broadcast_generation_request_context,
    apiKeyHashes: keys === undefined ? undefined : keys && keys.hashes,
    apiKeyIds: keys === undefined ? undefined : keys && keys.ids,
    regions: body.regions,
    samplingRate: body.sampling_rate,
    filterRules: body.filter_rules,
  }
}

export async function listDestinations(deps: DestinationDeps, caller: Caller, q: z.infer<typeof DestinationListQuery>) {
  const accountId = account(caller)
  const workspaceId =
    q.workspace_id === undefined ? undefined : (await namedWorkspace(deps.db, accountId, q.workspace_id)).id
  const { rows, total } = await destinationPage(deps.db, accountId, workspaceId, q.offset, q.limit)
  return { data: rows.map((r) => destinationView(r, deps.masterKey)), total_count: total }
}

export async function addDestination(
  deps: DestinationDeps,
  caller: Caller,
  body: z.infer<typeof CreateDestinationBody>,
) {
  const accountId = account(caller, 'create')
  if (!(DELIVERED_TYPES as readonly string[]).includes(body.type))
    throw new AppError(
      'invalid_body',
      `type: Roster delivers to ${DELIVERED_TYPES.join(' and ')}${KNOWN_TYPES.includes(body.type) ? `, not ${body.type}` : ''}`,
    )
  const type = body.type as DeliveredType
  const config = configOf(type, body.config)
  const key = keyOf(deps)
  const w = await namedWorkspace(deps.db, accountId, body.workspace_id)
  const fields = await fieldsOf(deps, accountId, body)
  const id = randomUUID()
  const row = await deps.db.$transaction(async (tx) => {
    if ((await destinationsOfType(tx, accountId, type)) >= PER_TYPE)
      throw new AppError(
        'destination_limit_reached',
        `this account has ${PER_TYPE} ${type} destinations already, the most it may have`,
      )
    return insertDestination(tx, {
      ...fields,
      regions: fields.regions ?? ['global'],
      id,
      accountId,
      workspaceId: w.id,
      type,
      config: seal(key, Buffer.from(JSON.stringify(config)), aad(id)),
    })
  })
  return { data: destinationView(row, deps.masterKey) }
}

export async function getDestination(deps: DestinationDeps, caller: Caller, id: string) {
  return { data: destinationView(await found(deps.db, account(caller), id), deps.masterKey) }
}

/** PATCH: only the fields sent change; a config sent keeps what it leaves out or masks. A failing destination's deliveries go again. */
export async function patchDestination(deps: DestinationDeps, caller: Caller, id: string, body: Body) {
  const accountId = account(caller, 'create')
  const row = await found(deps.db, accountId, id)
  const fields = await fieldsOf(deps, accountId, body)
  if (body.config) {
    const key = keyOf(deps)
    const config = configOf(row.type as DeliveredType, mergedConfig(openConfig(deps.masterKey!, row), body.config))
    fields.config = seal(key, Buffer.from(JSON.stringify(config)), aad(row.id))
  }
  const updated = await updateDestination(deps.db, row, fields)
  if (row.failures > 0 && updated.enabled) await deps.retryFailed?.(row.id)
  return { data: destinationView(updated, deps.masterKey) }
}

export async function dropDestination(deps: DestinationDeps, caller: Caller, id: string) {
  const row = await found(deps.db, account(caller), id)
  await deleteDestination(deps.db, row.id)
  return { deleted: true as const }
}
