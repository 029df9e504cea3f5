import { Jobs, type JobPayload } from '@roster/shared'
import type { JobContext, WorkerDeps } from '../context.js'

/** Stops the runtime of a suspended intern; the status was set to stopped by the suspend itself. */
export async function handle(deps: WorkerDeps, payload: JobPayload<'intern.suspend'>, _ctx: JobContext) {
  const { internId } = Jobs['intern.suspend'].schema.parse(payload)
  const intern = await deps.db.intern.findUnique({ where: { id: internId }, select: { status: true } })
  // Provisioned again (or deleted) since: the runtime belongs to the newer request now.
  if (intern?.status !== 'stopped') return 'obsolete'
  await deps.runtime.stop(internId)
  return 'stopped'
}
