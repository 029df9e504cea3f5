import type { WorkerDeps } from './context.js'

/** Whether a host beats (not dead, heard from within FLEET_DEAD_AFTER_MS): a call to it can be answered. */
export async function hostIsLive(deps: Pick<WorkerDeps, 'db' | 'config'>, hostId: string): Promise<boolean> {
  const rows = await deps.db.$queryRaw<{ ok: number }[]>`
    SELECT 1 AS ok FROM runtime_hosts WHERE id = ${hostId} AND state <> 'dead' AND heartbeat_at > ${new Date(Date.now() - deps.config.FLEET_DEAD_AFTER_MS)}`
  return rows.length > 0
}
