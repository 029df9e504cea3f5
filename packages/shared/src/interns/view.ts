import type { Intern as InternRow } from '../generated/prisma/client.js'
import type { Intern, InternProgress, InternView } from '../contracts/interns.js'
import type { Caller } from '../caller.js'

export type { InternRow }

export function toIntern(row: InternRow): Intern {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    instructions: row.instructions,
    model: row.model,
    status: row.status,
    last_failure_message: row.lastFailureMessage,
    progress: (row.progress as InternProgress | null) ?? null,
    hostname: row.hostname,
    workspace_id: row.workspaceId,
    vault_id: row.vaultId,
    attached_vault_id: row.attachedVaultId,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  }
}

/** Retrieve/list shape: created_by_you is left out for keys that act for no user. */
export function toInternView(row: InternRow, caller: Caller): InternView {
  const view: InternView = { ...toIntern(row), icon_sha256: row.iconSha256 }
  if (caller.kind !== 'organization') view.created_by_you = caller.userId !== null && caller.userId === row.creatorUserId
  return view
}
