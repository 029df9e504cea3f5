import type { JobPayload } from '@roster/shared'
import type { JobContext, WorkerDeps } from '../context.js'
import { fireSchedule, fireTimeOf } from '../schedules.js'

// A schedule's fire, as its job scheduler (or a catch-up) added it: its turn recorded and queued once.
export async function handle(deps: WorkerDeps, { scheduleId, at }: JobPayload<'schedule.fire'>, ctx: JobContext) {
  const time = at ?? fireTimeOf(ctx.jobId)
  if (time === undefined) return 'no fire time (not added by its scheduler)'
  return fireSchedule(deps, scheduleId, new Date(time))
}
