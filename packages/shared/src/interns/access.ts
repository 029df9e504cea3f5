import { AppError } from '@roster/protocol'
import type { Caller } from '../caller.js'
import type { Db } from '../db.js'
import { internScope } from '../repositories/interns.js'
import { inGroup } from '../intern-statuses.js'

export interface InternAccess {
  /** The route names the collection (/interns) rather than one intern. */
  collection: boolean
  /** The route changes an intern's lifecycle. */
  write: boolean
  /** The route creates an intern, which needs a member to own it. */
  create?: boolean
  /** The request arrived on a regional hostname. */
  regional: boolean
}

/**
 * The spec's authentication rules for intern operations, in the order a refusal is decided.
 * Management ("provisioning") keys do not act on interns at all: 401, as for an unknown key.
 */
export function checkInternAccess(caller: Caller | undefined, access: InternAccess): asserts caller is Caller {
  if (!caller || caller.kind === 'management') {
    throw new AppError('unauthorized', 'a valid user, organization or intern API key is required')
  }
  if (!caller.inProgramme) throw new AppError('not_found', 'not found')
  if (access.regional) {
    throw new AppError('workspace_capability_unavailable', 'intern operations are not served on regional hostnames')
  }
  if (!caller.internsEnabled) {
    throw new AppError('workspace_capability_unavailable', 'this workspace does not allow interns')
  }
  if (access.collection && caller.kind === 'intern') throw new AppError('not_found', 'not found')
  if (access.write && !caller.lifecycleWrites) throw new AppError('not_found', 'not found')
  if (access.create && !caller.userId) {
    throw new AppError('no_acting_user', 'this key acts for no member, so no one could own the intern; use a user key')
  }
}

/** A UUID as ids are written (for a cursor's id, and every id in a path). */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export function isUuid(value: string): boolean {
  return UUID_PATTERN.test(value)
}

/**
 * The one answer for an intern the caller may not have: malformed id, unknown id, or one the key
 * may not see all look alike (404), so nothing about other workspaces leaks.
 */
export function internNotFound(internId: string): AppError {
  return new AppError('not_found', `intern ${internId} not found`)
}

/** Refuses a malformed intern id before any query. */
export function assertInternId(internId: string): void {
  if (!isUuid(internId)) throw internNotFound(internId)
}

/** The intern, if it exists and this caller may see it; otherwise not found. */
export function visibleOrNotFound<T extends { id: string }>(
  caller: Caller,
  intern: T | null | undefined,
  internId: string,
  workspaceOf: (intern: T) => string,
): T {
  if (!intern || !canSeeIntern(caller, { id: intern.id, workspaceId: workspaceOf(intern) }))
    throw internNotFound(internId)
  return intern
}

/** `workspace_id`, when given, must be the key's own workspace (there is no other). */
export function assertOwnWorkspace(caller: Caller, workspaceId: string | undefined): void {
  if (workspaceId !== undefined && workspaceId !== caller.workspaceId) {
    throw new AppError('not_found', `workspace ${workspaceId} is not the workspace of this API key`)
  }
}

/** While an intern is being deleted, nothing but the delete itself may change it. */
export function refuseWhileDeleting(status: string, internId: string): void {
  if (inGroup('deleting', status)) {
    throw new AppError('intern_deleting', `intern ${internId} is being deleted (status ${status})`)
  }
}

export function nameTaken(name: string | undefined): AppError {
  return new AppError('name_taken', `you already have an intern named "${name}" in this workspace`)
}

/** Whether the caller may see the intern at all: an intern key sees only its own intern. */
export function canSeeIntern(caller: Caller, intern: { id: string; workspaceId: string }): boolean {
  if (intern.workspaceId !== caller.workspaceId) return false
  return caller.kind !== 'intern' || caller.internId === intern.id
}

/** What the routes that act on one intern (its vault, its chat) need of its row. */
export interface InternScope {
  id: string
  status: string
  vault_id: string | null
  attached_vault_id: string | null
}

/**
 * The intern, read fresh, when this caller may see it (an intern key: its own alone); otherwise the
 * one not-found answer, malformed ids included.
 */
export async function visibleInternScope(db: Db, caller: Caller, internId: string): Promise<InternScope> {
  assertInternId(internId)
  return visibleOrNotFound(caller, await internScope(db, internId), internId, (r) => r.workspace_id)
}
