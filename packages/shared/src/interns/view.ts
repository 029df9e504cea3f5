import type { Intern, InternProgress, InternStatus, InternView } from '@roster/protocol'
import type { Caller } from '../caller.js'

/** An intern row as our raw queries select it (repositories/interns.ts's INTERN_COLUMNS); timestamps as Date or JSON text. */
export interface InternRecord {
  id: string
  name: string
  description: string | null
  instructions: string | null
  model: string | null
  status: InternStatus
  last_failure_message: string | null
  progress: InternProgress | null
  hostname: string | null
  workspace_id: string
  vault_id: string | null
  attached_vault_id: string | null
  created_at: Date | string
  updated_at: Date | string
  creator_user_id: string | null
  icon_sha256: string | null
}

const iso = (t: Date | string) => new Date(t).toISOString()

/** The Intern of the spec: the fourteen keys, nullable ones always present. */
export function toIntern(r: InternRecord): Intern {
  return {
    id: r.id,
    name: r.name,
    description: r.description,
    instructions: r.instructions,
    model: r.model,
    status: r.status,
    last_failure_message: r.last_failure_message,
    progress: r.progress ?? null,
    hostname: r.hostname,
    workspace_id: r.workspace_id,
    vault_id: r.vault_id,
    attached_vault_id: r.attached_vault_id,
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
  }
}

/** Retrieve/list shape: created_by_you is left out for keys that act for no user. */
export function toInternView(r: InternRecord, caller: Caller): InternView {
  const view: InternView = { ...toIntern(r), icon_sha256: r.icon_sha256 }
  if (caller.kind !== 'organization')
    view.created_by_you = caller.userId !== null && caller.userId === r.creator_user_id
  return view
}
