import { type JobPayload } from '@roster/shared'
import { internStatus } from '@roster/shared/repositories'
import type { JobContext, WorkerDeps } from '../context.js'
import { hostIsLive } from '../fleet.js'

/** Stops the runtime of a suspended intern; the status was set to stopped by the suspend itself. */
export async function handle(deps: WorkerDeps, payload: JobPayload<'intern.suspend'>, _ctx: JobContext) {
  const { internId } = payload
  // Provisioned again (or deleted) since: the runtime belongs to the newer request now.
  if ((await internStatus(deps.db, internId)) !== 'stopped') return 'obsolete'
  // Stopped where it is placed; a host that is gone has nothing left running.
  const at = await deps.runtime.placement(internId)
  if (at && (await hostIsLive(deps, at.hostId))) await deps.runtime.stop(at, internId)
  return 'stopped'
}
