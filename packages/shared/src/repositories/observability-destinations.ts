import { Prisma, type Db } from '../db.js'
import { generationDays } from './generations.js'

// The observability_destinations table's statements.

export interface DestinationRow {
  id: string
  account_id: string
  workspace_id: string
  type: string
  name: string | null
  enabled: boolean
  privacy_mode: boolean
  broadcast_generation_cost: boolean
  broadcast_generation_identity: boolean
  broadcast_generation_request_context: boolean
  api_key_hashes: string[] | null
  api_key_ids: string[] | null
  regions: string[]
  sampling_rate: number
  filter_rules: unknown
  config: Uint8Array | null
  failures: number
  last_error: string | null
  last_delivered_at: Date | null
  created_at: Date
  updated_at: Date
}

/** What a destination is made or changed with (undefined: as it is). */
export interface DestinationFields {
  name?: string | null
  enabled?: boolean
  privacyMode?: boolean
  broadcastCost?: boolean
  broadcastIdentity?: boolean
  broadcastRequestContext?: boolean
  apiKeyHashes?: string[] | null
  apiKeyIds?: string[] | null
  regions?: string[]
  samplingRate?: number
  filterRules?: unknown
  config?: Buffer
}

const COLUMNS = Prisma.raw(`d.id, d.account_id, d.workspace_id, d.type, d.name, d.enabled, d.privacy_mode,
  d.broadcast_generation_cost, d.broadcast_generation_identity, d.broadcast_generation_request_context,
  d.api_key_hashes, d.api_key_ids, d.regions, d.sampling_rate, d.filter_rules, d.config, d.failures, d.last_error,
  d.last_delivered_at, d.created_at, d.updated_at`)

const json = (v: unknown) => (v === undefined ? undefined : v === null ? Prisma.DbNull : (v as Prisma.InputJsonValue))

export async function destinationById(db: Db | Prisma.TransactionClient, accountId: string, id: string) {
  const rows = await db.$queryRaw<DestinationRow[]>`
    SELECT ${COLUMNS} FROM observability_destinations d
    WHERE d.id = ${id}::uuid AND d.account_id = ${accountId}::uuid AND d.deleted_at IS NULL`
  return rows[0]
}

export async function destinationPage(
  db: Db,
  accountId: string,
  workspaceId: string | undefined,
  offset: number,
  limit: number,
) {
  const where = Prisma.sql`d.account_id = ${accountId}::uuid AND d.deleted_at IS NULL
    ${workspaceId ? Prisma.sql`AND d.workspace_id = ${workspaceId}::uuid` : Prisma.empty}`
  const [rows, total] = await Promise.all([
    db.$queryRaw<DestinationRow[]>`
      SELECT ${COLUMNS} FROM observability_destinations d WHERE ${where}
      ORDER BY d.created_at, d.id LIMIT ${limit} OFFSET ${offset}`,
    db.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM observability_destinations d WHERE ${where}`,
  ])
  return { rows, total: total[0]?.n ?? 0 }
}

/** Every account's destinations whose deliveries are failing (the operators' fleet page), most failures first. */
export async function failingDestinations(db: Db, limit: number) {
  return db.$queryRaw<DestinationRow[]>`
    SELECT ${COLUMNS} FROM observability_destinations d
    WHERE d.failures > 0 AND d.deleted_at IS NULL
    ORDER BY d.failures DESC, d.updated_at DESC, d.id LIMIT ${limit}`
}

/** How many live destinations of a type an account has (locked against a concurrent create). */
export async function destinationsOfType(tx: Prisma.TransactionClient, accountId: string, type: string) {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`destinations:${accountId}`}))`
  const rows = await tx.$queryRaw<{ n: number }[]>`
    SELECT count(*)::int AS n FROM observability_destinations
    WHERE account_id = ${accountId}::uuid AND type = ${type} AND deleted_at IS NULL`
  return rows[0]?.n ?? 0
}

export async function insertDestination(
  db: Db | Prisma.TransactionClient,
  d: { id: string; accountId: string; workspaceId: string; type: string } & DestinationFields,
) {
  await db.observabilityDestination.create({
    data: {
      id: d.id,
      accountId: d.accountId,
      workspaceId: d.workspaceId,
      type: d.type,
      name: d.name,
      enabled: d.enabled,
      privacyMode: d.privacyMode,
      broadcastCost: d.broadcastCost,
      broadcastIdentity: d.broadcastIdentity,
      broadcastRequestContext: d.broadcastRequestContext,
      apiKeyHashes: json(d.apiKeyHashes),
      apiKeyIds: json(d.apiKeyIds),
      regions: d.regions as Prisma.InputJsonValue,
      samplingRate: d.samplingRate,
      filterRules: json(d.filterRules),
      config: d.config && new Uint8Array(d.config),
    },
    select: { id: true },
  })
  return (await destinationById(db, d.accountId, d.id))!
}

export async function updateDestination(db: Db, row: DestinationRow, f: DestinationFields) {
  await db.observabilityDestination.update({
    where: { id: row.id },
    data: {
      name: f.name,
      enabled: f.enabled,
      privacyMode: f.privacyMode,
      broadcastCost: f.broadcastCost,
      broadcastIdentity: f.broadcastIdentity,
      broadcastRequestContext: f.broadcastRequestContext,
      apiKeyHashes: json(f.apiKeyHashes),
      apiKeyIds: json(f.apiKeyIds),
      regions: f.regions as Prisma.InputJsonValue | undefined,
      samplingRate: f.samplingRate,
      filterRules: json(f.filterRules),
      config: f.config && new Uint8Array(f.config),
      updatedAt: new Date(),
    },
  })
  return (await destinationById(db, row.account_id, row.id))!
}

/** Soft delete: the row stays, unlisted, its config (and the secrets in it) wiped. */
export async function deleteDestination(db: Db, id: string) {
  await db.$executeRaw`
    UPDATE observability_destinations SET deleted_at = now(), config = NULL, enabled = false, updated_at = now()
    WHERE id = ${id}::uuid AND deleted_at IS NULL`
}

/** The live, enabled destinations of these accounts (what the drain fans generations out to). */
export function enabledDestinations(db: Db, accountIds: string[]) {
  return db.$queryRaw<DestinationRow[]>`
    SELECT ${COLUMNS} FROM observability_destinations d
    WHERE d.account_id = ANY(${accountIds}::uuid[]) AND d.enabled AND d.deleted_at IS NULL`
}

/** A destination for delivery, by id alone (undefined: deleted, disabled or gone). */
export async function deliverableDestination(db: Db, id: string) {
  const rows = await db.$queryRaw<DestinationRow[]>`
    SELECT ${COLUMNS} FROM observability_destinations d WHERE d.id = ${id}::uuid AND d.enabled AND d.deleted_at IS NULL`
  return rows[0]
}

/** A delivery went through: the destination is healthy again. Answers whether it had been failing. */
export async function destinationDelivered(db: Db, id: string): Promise<boolean> {
  const rows = await db.$queryRaw<{ was: number }[]>`
    UPDATE observability_destinations n SET failures = 0, last_error = NULL, last_delivered_at = now()
    FROM observability_destinations o WHERE n.id = o.id AND n.id = ${id}::uuid
    RETURNING o.failures AS was`
  return (rows[0]?.was ?? 0) > 0
}

/** A delivery ran out of retries: counted, with its error. */
export async function destinationFailed(db: Db, id: string, error: string) {
  await db.$executeRaw`
    UPDATE observability_destinations SET failures = failures + 1, last_error = ${error.slice(0, 500)}
    WHERE id = ${id}::uuid`
}

/** The generations a delivery carries, of its account only, with the content private logging kept. */
export function generationsForDelivery(db: Db, accountId: string, ids: string[]) {
  return db.$queryRaw<
    (Record<string, unknown> & { id: string; request_id: string; input: unknown; output: unknown })[]
  >`
    SELECT g.*, c.input, c.output FROM generations g
    LEFT JOIN generation_content c ON c.request_id = g.request_id AND g.id = g.request_id
    WHERE g.account_id = ${accountId}::uuid AND g.id = ANY(${ids}::text[]) ${generationDays(ids, Prisma.raw('g.created_at'))}
    ORDER BY g.created_at, g.id`
}
