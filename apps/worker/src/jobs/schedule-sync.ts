import type { JobPayload } from '@roster/shared'
import type { JobContext, WorkerDeps } from '../context.js'
import { jobOptionsFor } from '../queue.js'
import { syncSchedule } from '../schedules.js'

// A schedule made, changed or removed: its job scheduler made to match its row.
export async function handle(deps: WorkerDeps, { scheduleId }: JobPayload<'schedule.sync'>, _ctx: JobContext) {
  return syncSchedule(deps, jobOptionsFor(deps.config), scheduleId)
}
