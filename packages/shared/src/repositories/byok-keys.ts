import { Prisma, type Db } from '../db.js'

// The byok_keys table's statements.

export interface ByokRow {
  id: string
  account_id: string
  workspace_id: string | null
  provider: string
  name: string | null
  sealed: Uint8Array | null
  label: string
  disabled: boolean
  is_byok_only: boolean
  is_fallback: boolean
  is_required: boolean
  declared_zdr: boolean | null
  sort_order: number
  allowed_api_key_hashes: string[] | null
  allowed_models: string[] | null
  allowed_user_ids: string[] | null
  created_at: Date
  updated_at: Date | null
}

/** What a credential is made or changed with (undefined: as it is; null clears). */
export interface ByokFields {
  name?: string | null
  sealed?: Buffer
  label?: string
  disabled?: boolean
  isByokOnly?: boolean
  isFallback?: boolean
  isRequired?: boolean
  declaredZdr?: boolean | null
  allowedKeyHashes?: string[] | null
  allowedModels?: string[] | null
  allowedUserIds?: string[] | null
}

const COLUMNS = Prisma.raw(`b.id, b.account_id, b.workspace_id, b.provider, b.name, b.sealed, b.label, b.disabled,
  b.is_byok_only, b.is_fallback, b.is_required, b.declared_zdr, b.sort_order, b.allowed_api_key_hashes,
  b.allowed_models, b.allowed_user_ids, b.created_at, b.updated_at`)

const json = (v: string[] | null | undefined) =>
  v === undefined ? undefined : v === null ? Prisma.DbNull : (v as Prisma.InputJsonValue)

/** One of the account's credentials, not deleted (undefined: none). */
export async function byokById(db: Db | Prisma.TransactionClient, accountId: string, id: string) {
  const rows = await db.$queryRaw<ByokRow[]>`
    SELECT ${COLUMNS} FROM byok_keys b
    WHERE b.id = ${id}::uuid AND b.account_id = ${accountId}::uuid AND b.deleted_at IS NULL`
  return rows[0]
}

/** A page of the account's credentials (in a workspace, for a provider, when named), in the order they are tried. */
export async function byokPage(
  db: Db,
  f: { accountId: string; workspaceId?: string; provider?: string },
  offset: number,
  limit: number,
) {
  const where = Prisma.sql`b.account_id = ${f.accountId}::uuid AND b.deleted_at IS NULL
    ${f.workspaceId ? Prisma.sql`AND b.workspace_id = ${f.workspaceId}::uuid` : Prisma.empty}
    ${f.provider ? Prisma.sql`AND b.provider = ${f.provider}` : Prisma.empty}`
  const [rows, total] = await Promise.all([
    db.$queryRaw<ByokRow[]>`
      SELECT ${COLUMNS} FROM byok_keys b WHERE ${where}
      ORDER BY b.provider, b.sort_order, b.created_at, b.id LIMIT ${limit} OFFSET ${offset}`,
    db.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM byok_keys b WHERE ${where}`,
  ])
  return { rows, total: total[0]?.n ?? 0 }
}

/** A new credential, last in its provider's order in its scope; its row. */
export async function insertByok(
  db: Db,
  b: { id: string; accountId: string; workspaceId: string | null; provider: string } & ByokFields,
) {
  await db.$executeRaw`
    INSERT INTO byok_keys (id, account_id, workspace_id, provider, name, sealed, label, disabled, is_byok_only,
      is_fallback, is_required, declared_zdr, sort_order, allowed_api_key_hashes, allowed_models, allowed_user_ids)
    SELECT ${b.id}::uuid, ${b.accountId}::uuid, ${b.workspaceId}::uuid, ${b.provider}, ${b.name ?? null}, ${b.sealed},
      ${b.label}, ${b.disabled ?? false}, ${b.isByokOnly ?? false}, ${b.isFallback ?? false}, ${b.isRequired ?? false},
      ${b.declaredZdr ?? null},
      coalesce((SELECT max(sort_order) + 1 FROM byok_keys o WHERE o.account_id = ${b.accountId}::uuid
        AND o.workspace_id IS NOT DISTINCT FROM ${b.workspaceId}::uuid AND o.provider = ${b.provider}), 0),
      ${b.allowedKeyHashes ? JSON.stringify(b.allowedKeyHashes) : null}::jsonb,
      ${b.allowedModels ? JSON.stringify(b.allowedModels) : null}::jsonb,
      ${b.allowedUserIds ? JSON.stringify(b.allowedUserIds) : null}::jsonb`
  return (await byokById(db, b.accountId, b.id))!
}

/** Changes a credential; its row after. */
export async function updateByok(db: Db, row: ByokRow, f: ByokFields) {
  await db.byokKey.update({
    where: { id: row.id },
    data: {
      name: f.name,
      sealed: f.sealed && new Uint8Array(f.sealed),
      label: f.label,
      disabled: f.disabled,
      isByokOnly: f.isByokOnly,
      isFallback: f.isFallback,
      isRequired: f.isRequired,
      declaredZdr: f.declaredZdr,
      allowedKeyHashes: json(f.allowedKeyHashes),
      allowedModels: json(f.allowedModels),
      allowedUserIds: json(f.allowedUserIds),
      updatedAt: new Date(),
    },
  })
  return (await byokById(db, row.account_id, row.id))!
}

/** Deletes a credential: its sealed value is wiped, the row kept (soft delete). */
export async function deleteByok(db: Db, id: string) {
  await db.$executeRaw`
    UPDATE byok_keys SET sealed = NULL, label = '', deleted_at = now(), updated_at = now()
    WHERE id = ${id}::uuid AND deleted_at IS NULL`
}

/** The credentials a workspace's requests may use (its own and the account's global ones), sealed. */
export function usableByok(db: Db, accountId: string, workspaceId: string) {
  return db.$queryRaw<ByokRow[]>`
    SELECT ${COLUMNS} FROM byok_keys b
    WHERE b.account_id = ${accountId}::uuid AND (b.workspace_id = ${workspaceId}::uuid OR b.workspace_id IS NULL)
      AND b.deleted_at IS NULL AND NOT b.disabled AND b.sealed IS NOT NULL`
}
