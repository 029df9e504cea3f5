import { randomUUID } from 'node:crypto'
import { Prisma, type Db } from '../db.js'
import { AppError } from '@roster/protocol'
import type { Caller } from '../caller.js'

// Presets in Postgres, scoped to the caller's workspace. A create is one statement: the preset row
// is inserted or (on the same slug) updated to its next version number under its row lock, the
// version is inserted and made the designated one, all or nothing.

type Json = Record<string, unknown>

interface PresetRow {
  id: string
  name: string
  slug: string
  description: string | null
  status: string
  status_updated_at: Date | null
  created_at: Date
  updated_at: Date
  creator_user_id: string | null
  workspace_id: string
  designated_version_id: string | null
}
interface VersionRow {
  id: string
  preset_id: string
  version: number
  config: Json
  system_prompt: string | null
  creator_id: string
  created_at: Date
  updated_at: Date
}

const iso = (t: Date | null) => (t ? new Date(t).toISOString() : null)

export function presetView(p: PresetRow) {
  return {
    id: p.id,
    name: p.name,
    slug: p.slug,
    description: p.description,
    status: p.status,
    status_updated_at: iso(p.status_updated_at),
    created_at: iso(p.created_at)!,
    updated_at: iso(p.updated_at)!,
    creator_user_id: p.creator_user_id,
    workspace_id: p.workspace_id,
    designated_version_id: p.designated_version_id,
  }
}

export function versionView(v: VersionRow) {
  return {
    id: v.id,
    preset_id: v.preset_id,
    version: v.version,
    config: v.config,
    system_prompt: v.system_prompt,
    creator_id: v.creator_id,
    created_at: iso(v.created_at)!,
    updated_at: iso(v.updated_at)!,
  }
}

const PRESET_COLUMNS = Prisma.raw(
  `id, name, slug, description, status, status_updated_at, created_at, updated_at, creator_user_id, workspace_id, designated_version_id`,
)
const VERSION_COLUMNS = Prisma.raw(`id, preset_id, version, config, system_prompt, creator_id, created_at, updated_at`)

/** How long a create waits for another create of the same slug before answering 409 "try again". */
const LOCK_WAIT_MS = 2_000

/** A new version of `slug` (the preset is made with version 1 when the slug is new), designated. */
export async function createPresetVersion(
  db: Db,
  caller: Caller,
  slug: string,
  content: { config: Json; systemPrompt: string | null },
) {
  const versionId = randomUUID()
  const creator = caller.userId ?? caller.keyId
  try {
    const [, rows] = await db.$transaction([
      db.$executeRawUnsafe(`SET LOCAL lock_timeout = '${LOCK_WAIT_MS}ms'`),
      db.$queryRaw<(PresetRow & { v: VersionRow })[]>`
        WITH p AS (
          INSERT INTO presets (id, workspace_id, slug, name, creator_user_id, designated_version_id, latest_version)
          VALUES (${randomUUID()}::uuid, ${caller.workspaceId}::uuid, ${slug}, ${slug}, ${caller.userId}::uuid, ${versionId}::uuid, 1)
          ON CONFLICT (workspace_id, slug) DO UPDATE
            SET latest_version = presets.latest_version + 1, designated_version_id = EXCLUDED.designated_version_id, updated_at = now()
          RETURNING ${PRESET_COLUMNS}, latest_version
        ), v AS (
          INSERT INTO preset_versions (id, preset_id, version, config, system_prompt, creator_id)
          SELECT ${versionId}::uuid, p.id, p.latest_version, ${JSON.stringify(content.config)}::jsonb, ${content.systemPrompt}, ${creator} FROM p
          RETURNING ${VERSION_COLUMNS}
        )
        SELECT p.*, to_jsonb(v.*) AS v FROM p, v`,
    ])
    const row = rows[0]!
    return {
      ...presetView(row),
      designated_version: versionView({
        ...row.v,
        created_at: new Date(row.v.created_at),
        updated_at: new Date(row.v.updated_at),
      }),
    }
  } catch (err) {
    const code =
      (err as { code?: string; meta?: { code?: string } })?.meta?.code ?? (err as { code?: string }).code ?? ''
    if (
      /55P03|40001|40P01|23505/.test(code) ||
      /lock timeout|could not obtain lock/i.test(String((err as Error).message))
    ) {
      throw new AppError('preset_conflict', `another change to preset ${slug} is in progress; try again later`, {
        cause: err,
      })
    }
    throw err
  }
}

export async function listPresets(db: Db, workspaceId: string, limit: number, offset: number) {
  const [rows, counts] = await Promise.all([
    db.$queryRaw<PresetRow[]>`
      SELECT ${PRESET_COLUMNS} FROM presets WHERE workspace_id = ${workspaceId}::uuid
      ORDER BY updated_at DESC, id DESC LIMIT ${limit} OFFSET ${offset}`,
    db.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM presets WHERE workspace_id = ${workspaceId}::uuid`,
  ])
  return { data: rows.map(presetView), total_count: counts[0]!.n }
}

async function presetBySlug(db: Db, workspaceId: string, slug: string): Promise<PresetRow> {
  const [row] = await db.$queryRaw<
    PresetRow[]
  >`SELECT ${PRESET_COLUMNS} FROM presets WHERE workspace_id = ${workspaceId}::uuid AND slug = ${slug}`
  if (!row) throw new AppError('not_found', `no preset ${slug} in this workspace`)
  return row
}

export async function getPreset(db: Db, workspaceId: string, slug: string) {
  const p = await presetBySlug(db, workspaceId, slug)
  const [v] = p.designated_version_id
    ? await db.$queryRaw<
        VersionRow[]
      >`SELECT ${VERSION_COLUMNS} FROM preset_versions WHERE id = ${p.designated_version_id}::uuid`
    : []
  return { ...presetView(p), designated_version: v ? versionView(v) : null }
}

export async function listPresetVersions(db: Db, workspaceId: string, slug: string, limit: number, offset: number) {
  const p = await presetBySlug(db, workspaceId, slug)
  const [rows, counts] = await Promise.all([
    db.$queryRaw<
      VersionRow[]
    >`SELECT ${VERSION_COLUMNS} FROM preset_versions WHERE preset_id = ${p.id}::uuid ORDER BY version ASC LIMIT ${limit} OFFSET ${offset}`,
    db.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM preset_versions WHERE preset_id = ${p.id}::uuid`,
  ])
  return { data: rows.map(versionView), total_count: counts[0]!.n }
}

export async function getPresetVersion(db: Db, workspaceId: string, slug: string, version: number) {
  const p = await presetBySlug(db, workspaceId, slug)
  const [v] = await db.$queryRaw<
    VersionRow[]
  >`SELECT ${VERSION_COLUMNS} FROM preset_versions WHERE preset_id = ${p.id}::uuid AND version = ${version}`
  if (!v) throw new AppError('not_found', `preset ${slug} has no version ${version}`)
  return versionView(v)
}

/** The designated version's configuration, for a request that names the preset. */
export async function designatedPresetVersion(
  db: Db,
  workspaceId: string,
  slug: string,
): Promise<{ presetId: string; config: Json; systemPrompt: string | null } | undefined> {
  const [v] = await db.$queryRaw<{ preset_id: string; config: Json; system_prompt: string | null }[]>`
    SELECT p.id AS preset_id, v.config, v.system_prompt FROM presets p JOIN preset_versions v ON v.id = p.designated_version_id
    WHERE p.workspace_id = ${workspaceId}::uuid AND p.slug = ${slug} AND p.status = 'active'`
  return v ? { presetId: v.preset_id, config: v.config, systemPrompt: v.system_prompt } : undefined
}
