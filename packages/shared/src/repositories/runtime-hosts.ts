import type { Db } from '../db.js'
import type { HeartbeatRequest, HeartbeatResponse, JoinRequest } from '@roster/protocol'
import type { FleetTimes } from '../fleet/times.js'
import { placementsOf } from './interns.js'

// The runtime_hosts table's statements: hosts join and beat, drain, are declared dead, and are
// listed. Where interns are placed is the interns' record (interns.ts).

/** A refusal of the fleet's record (a join that would take another host's place). */
export class FleetConflict extends Error {
  override name = 'FleetConflict'
}

export interface HostRow {
  id: string
  address: string
  capacity: number
  state: 'live' | 'draining' | 'dead'
  epoch: number
  drained: boolean
  heartbeat_at: Date
}

/**
 * A host joins (or comes back): its record is made, or its epoch bumped. An id held by a live host
 * at another address is refused, and so is an address a live host of another id holds: a host
 * cannot take another's place while that one beats.
 */
export async function joinHost(db: Db, req: JoinRequest, times: FleetTimes): Promise<HostRow> {
  return db.$transaction(async (tx) => {
    // One join at a time for an id (and the address check sees every other join's result).
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('roster runtime host join'))`
    const fresh = new Date(Date.now() - times.deadAfterMs)
    const [byAddress] = await tx.$queryRaw<HostRow[]>`
      SELECT * FROM runtime_hosts WHERE address = ${req.address} AND id <> ${req.id} AND state <> 'dead' AND heartbeat_at > ${fresh}`
    if (byAddress) throw new FleetConflict(`${req.address} is the address of live host ${byAddress.id}`)
    const [current] = await tx.$queryRaw<HostRow[]>`SELECT * FROM runtime_hosts WHERE id = ${req.id} FOR UPDATE`
    if (current && current.state !== 'dead' && current.heartbeat_at > fresh && current.address !== req.address) {
      throw new FleetConflict(`host ${req.id} is live at ${current.address}`)
    }
    const [row] = await tx.$queryRaw<HostRow[]>`
      INSERT INTO runtime_hosts (id, address, capacity, state, epoch, drained, heartbeat_at, joined_at)
      VALUES (${req.id}, ${req.address}, ${req.capacity}, 'live', 1, false, now(), now())
      ON CONFLICT (id) DO UPDATE SET address = EXCLUDED.address, capacity = EXCLUDED.capacity,
        state = 'live', epoch = runtime_hosts.epoch + 1, drained = false, heartbeat_at = now(), joined_at = now()
      RETURNING *`
    return row!
  })
}

/**
 * A heartbeat of `host` in `epoch`: recorded, and answered with the host's state and the
 * placements it holds. A host the record has declared dead (or that a later join replaced) is told
 * so and must join again; a draining host that says it is done is marked drained.
 */
export async function heartbeat(
  db: Db,
  hostId: string,
  epoch: number,
  req: HeartbeatRequest,
): Promise<HeartbeatResponse> {
  const [row] = await db.$queryRaw<HostRow[]>`
    UPDATE runtime_hosts SET heartbeat_at = now(), drained = drained OR (state = 'draining' AND ${req.drained === true})
    WHERE id = ${hostId} AND epoch = ${epoch} AND state <> 'dead'
    RETURNING *`
  if (!row) return { state: 'dead', placements: [] }
  return { state: row.state, placements: await placementsOf(db, hostId) }
}

/** A host's record, as it stands. */
export async function hostRecord(db: Db, hostId: string): Promise<HostRow | undefined> {
  const [row] = await db.$queryRaw<HostRow[]>`SELECT * FROM runtime_hosts WHERE id = ${hostId}`
  return row
}

/** How many hosts beat within `deadAfterMs` (live), and how many have ever joined. */
export async function fleetSize(db: Db, deadAfterMs: number): Promise<{ live: number; total: number }> {
  const [counts] = await db.$queryRaw<{ live: number; total: number }[]>`
    SELECT count(*) FILTER (WHERE state = 'live' AND heartbeat_at > ${new Date(Date.now() - deadAfterMs)})::int AS live,
           count(*)::int AS total
    FROM runtime_hosts`
  return counts!
}

/** Whether a host has not beaten for `sinceMs` (undefined: no such host). */
export async function hostSilent(db: Db, hostId: string, sinceMs: number): Promise<boolean | undefined> {
  const [host] = await db.$queryRaw<{ silent: boolean }[]>`
    SELECT heartbeat_at < ${new Date(Date.now() - sinceMs)} AS silent FROM runtime_hosts WHERE id = ${hostId}`
  return host?.silent
}

/**
 * The hosts that beat (not dead, heard from within `deadAfterMs`): a call to one can be answered.
 * One host's row when `hostId` is given.
 */
export async function beatingHosts(
  db: Db,
  deadAfterMs: number,
  hostId?: string,
): Promise<{ id: string; address: string; epoch: number; state: string }[]> {
  return db.$queryRaw`
    SELECT id, address, epoch, state FROM runtime_hosts
    WHERE state <> 'dead' AND heartbeat_at > ${new Date(Date.now() - deadAfterMs)} AND (${hostId ?? null}::text IS NULL OR id = ${hostId ?? null})`
}

/** A host told to drain: it takes no new interns, ends its turns, snapshots, and its interns move. */
export async function drainHost(db: Db, hostId: string): Promise<boolean> {
  const n =
    await db.$executeRaw`UPDATE runtime_hosts SET state = 'draining', drained = false WHERE id = ${hostId} AND state = 'live'`
  return n > 0
}

export interface HostListing extends HostRow {
  interns: number
  free: number
}

/** Every host, its state, the interns placed on it and its free room (the admin CLI's listing). */
export async function listHosts(db: Db, times: FleetTimes): Promise<HostListing[]> {
  const rows = await db.$queryRaw<
    (HostRow & { interns: number })[]
  >`SELECT h.*, h.placed AS interns FROM runtime_hosts h ORDER BY h.id`
  const fresh = Date.now() - times.deadAfterMs
  return rows.map((r) => ({
    ...r,
    state: r.state !== 'dead' && r.heartbeat_at.getTime() < fresh ? 'dead' : r.state,
    free: Math.max(0, r.capacity - r.interns),
  }))
}

/** Declares dead the hosts whose heartbeat is older than `deadAfterMs`; answers their ids. */
export async function declareDeadHosts(db: Db, deadAfterMs: number): Promise<string[]> {
  const dead = await db.$queryRaw<{ id: string }[]>`
    UPDATE runtime_hosts SET state = 'dead'
    WHERE state <> 'dead' AND heartbeat_at < ${new Date(Date.now() - deadAfterMs)}
    RETURNING id`
  return dead.map((d) => d.id)
}
