import { AppError } from '../errors.js'
import type { Caller } from '../caller.js'

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

/** Whether the caller may see the intern at all: an intern key sees only its own intern. */
export function canSeeIntern(caller: Caller, intern: { id: string; workspaceId: string }): boolean {
  if (intern.workspaceId !== caller.workspaceId) return false
  return caller.kind !== 'intern' || caller.internId === intern.id
}
