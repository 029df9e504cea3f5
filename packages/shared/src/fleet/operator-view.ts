import type { Db } from '../db.js'
import { AppError } from '@roster/protocol'
import { drainHost, listHosts } from '../repositories/runtime-hosts.js'
import { HostId } from '@roster/protocol'
import type { HostView } from '@roster/protocol'
import type { FleetTimes } from './times.js'

// What an operator sees of the fleet and does to it, the same through the admin CLI (`runtime list`,
// `runtime drain`) and the API's operator reads (the console's fleet page).

export async function hostsView(db: Db, times: FleetTimes): Promise<HostView[]> {
  return (await listHosts(db, times)).map((h) => ({
    id: h.id,
    address: h.address,
    state: h.state === 'draining' && h.drained ? 'drained' : (h.state as HostView['state']),
    interns: h.interns,
    capacity: h.capacity,
    free: h.state === 'live' ? h.free : 0,
    last_heartbeat_at: h.heartbeat_at.toISOString(),
  }))
}

/** Drains a live host (it takes no new interns; its interns move to the others); else 404 or 409 saying why. */
export async function drainHostOrExplain(db: Db, times: FleetTimes, hostId: string) {
  // No host has an id that is not one (a NUL, say, which Postgres's text cannot even hold).
  const valid = HostId.safeParse(hostId).success
  if (valid && (await drainHost(db, hostId))) return { host: hostId, state: 'draining' as const }
  const known = valid && (await hostsView(db, times)).find((h) => h.id === hostId)
  if (!known) throw new AppError('not_found', `no runtime host ${hostId.slice(0, 200)} (see the fleet: runtime list)`)
  throw new AppError('host_not_drainable', `host ${hostId} is ${known.state}: only a live host can be drained`)
}
