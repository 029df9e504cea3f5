import { beatingHosts } from '@roster/shared/repositories'
import type { WorkerDeps } from './context.js'

/** Whether a host beats (not dead, heard from within FLEET_DEAD_AFTER_MS): a call to it can be answered. */
export async function hostIsLive(deps: Pick<WorkerDeps, 'db' | 'config'>, hostId: string): Promise<boolean> {
  return (await beatingHosts(deps.db, deps.config.FLEET_DEAD_AFTER_MS, hostId)).length > 0
}
