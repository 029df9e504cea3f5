import { createHmac, timingSafeEqual } from 'node:crypto'
import type { Db } from '../db.js'
import { enqueueInTx } from '../outbox.js'
import { transition } from '../intern-state.js'
import { Prisma } from '../generated/prisma/client.js'
import type { HeartbeatRequest, HeartbeatResponse, JoinRequest } from '../runtime-protocol.js'

// The fleet of runtime hosts, as Postgres records it: hosts join and beat, interns are placed on
// live hosts with room, and the interns of a host that died (or finished draining) are placed
// again. Every placement carries the provision generation it was made under: a host may act for an
// intern only while the record still places the intern there under that generation.

/** A refusal of the fleet's record (a join that would take another host's place). */
export class FleetConflict extends Error {
  override name = 'FleetConflict'
}

export interface FleetTimes {
  /** A host whose last heartbeat is older than this is dead. */
  deadAfterMs: number
  /**
   * New interns go only to hosts heard from this recently (default deadAfterMs): a few missed
   * beats stop placements on a host well before it can be declared dead.
   */
  placeWithinMs?: number
}

/** The fleet's times from its settings: placements need a beat within three intervals (and a second). */
export const fleetTimes = (config: { FLEET_DEAD_AFTER_MS: number; FLEET_HEARTBEAT_MS: number }): FleetTimes => ({
  deadAfterMs: config.FLEET_DEAD_AFTER_MS,
  placeWithinMs: Math.min(config.FLEET_DEAD_AFTER_MS, 3 * config.FLEET_HEARTBEAT_MS + 1_000),
})

/**
 * The key host credentials are derived from. Only the API and the workers have it (from the
 * master key, which no host holds): a host is given its own credential when it joins, and cannot
 * work out another's.
 */
export const hostCredentialKey = (masterKey: Buffer) =>
  createHmac('sha256', masterKey).update('roster runtime host credential').digest()

/** A host's credential for one epoch of its membership. */
export const hostCredential = (key: Buffer, hostId: string, epoch: number) =>
  createHmac('sha256', key).update(`${hostId}:${epoch}`).digest('base64url')

/** Whether `given` is the credential of `hostId` in `epoch` (in constant time). */
export function isHostCredential(key: Buffer, hostId: string, epoch: number, given: string | undefined): boolean {
  if (!given) return false
  const want = Buffer.from(hostCredential(key, hostId, epoch))
  const got = Buffer.from(given)
  return got.length === want.length && timingSafeEqual(got, want)
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

/** Whether the fleet is moving an intern: placed again lately (its host died or drained), and not suspended since. */
export async function internMoving(db: Db, internId: string): Promise<boolean> {
  const [row] = await db.$queryRaw<{ moving: boolean }[]>`
    SELECT status IN ('queued', 'provisioning', 'running') AND moved_at > now() - interval '10 minutes' AS moving
    FROM interns WHERE id = ${internId}::uuid`
  return row?.moving === true
}

/** Marks an intern placed again by the fleet (a chat meanwhile waits for it: CHAT_MOVE_WAIT_MS). */
export const markMoved = (tx: Prisma.TransactionClient, internId: string) =>
  tx.$executeRaw`UPDATE interns SET moved_at = now() WHERE id = ${internId}::uuid`

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
 * The statuses in which an intern is held by the host it is placed on: provisioning and running, and
 * destroying (its host takes the last snapshot of its workspace for the archive, then removes it).
 * A stopped intern's workspace is its latest snapshot: its host drops it.
 */
export const HELD_BY_HOST = Prisma.raw(`('provisioning', 'running', 'destroying')`)

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

/** The interns the record has a host hold, with their generations. */
export async function placementsOf(db: Db, hostId: string): Promise<{ id: string; generation: number }[]> {
  return db.$queryRaw<{ id: string; generation: number }[]>`
    SELECT id, placement_generation AS generation FROM interns
    WHERE runtime_host_id = ${hostId} AND status IN ${HELD_BY_HOST}`
}

/** Whether the record places `internId` on `hostId` under `generation`. */
export async function isPlaced(db: Db, internId: string, hostId: string, generation: number): Promise<boolean> {
  const rows = await db.$queryRaw<{ ok: number }[]>`
    SELECT 1 AS ok FROM interns WHERE id = ${internId}::uuid AND runtime_host_id = ${hostId} AND placement_generation = ${generation}
      AND status IN ${HELD_BY_HOST}`
  return rows.length > 0
}

export interface PlacedOn {
  hostId: string
  address: string
  epoch: number
  generation: number
  /** From a placement: the digest of the intern's latest workspace snapshot (null: none). */
  snapshot?: string | null
}

/**
 * Places an intern for its provisioning run `generation`: on the host it is on, if that host is live
 * and still has its room, else on the live host with the most free room (ties at random). One
 * statement (the `place_intern` function of the migrations): the chosen host's row is locked and its
 * count of placed interns (kept by a trigger) read again under the lock, so concurrent placements
 * never overfill it, and the lock is held for that statement alone. Undefined when no live host has
 * room (the run waits for one), or the run is no longer the intern's latest.
 */
export async function placeIntern(
  db: Db,
  internId: string,
  generation: number,
  times: FleetTimes,
): Promise<PlacedOn | undefined> {
  const fresh = new Date(Date.now() - (times.placeWithinMs ?? times.deadAfterMs))
  const [row] = await db.$queryRaw<{ host_id: string; address: string; epoch: number; snapshot: string | null }[]>`
    SELECT host_id, address, epoch, snapshot FROM place_intern(${internId}::uuid, ${generation}::int, ${fresh})`
  return row && { hostId: row.host_id, address: row.address, epoch: row.epoch, generation, snapshot: row.snapshot }
}

/**
 * Takes back a placement its host could not be reached for (it may have died and not yet been
 * declared dead): the run's next attempt places the intern anew. Only that placement: a later one
 * is left alone.
 */
export async function unplace(db: Db, internId: string, at: { hostId: string; generation: number }): Promise<void> {
  await db.$executeRaw`UPDATE interns SET runtime_host_id = NULL WHERE id = ${internId}::uuid AND runtime_host_id = ${at.hostId} AND placement_generation = ${at.generation}`
}

/** Where an intern is placed now (its host's address and epoch) and its status, or undefined when it is not placed. */
export async function placementOf(db: Db, internId: string): Promise<(PlacedOn & { status: string }) | undefined> {
  const [row] = await db.$queryRaw<(PlacedOn & { status: string })[]>`
    SELECT h.id AS "hostId", h.address, h.epoch, i.placement_generation AS generation, i.status::text AS status
    FROM interns i JOIN runtime_hosts h ON h.id = i.runtime_host_id WHERE i.id = ${internId}::uuid`
  return row
}

/**
 * Declares dead the hosts whose heartbeat is older than `deadAfterMs`, then places again the
 * interns of every host that is dead or has finished draining: each goes back to `queued` under a
 * new generation, with a provisioning job, and is placed on another host by its run. Answers the
 * hosts declared dead and the interns moved.
 */
export async function vacateHosts(db: Db, times: FleetTimes): Promise<{ dead: string[]; moved: string[] }> {
  const dead = await db.$queryRaw<{ id: string }[]>`
    UPDATE runtime_hosts SET state = 'dead'
    WHERE state <> 'dead' AND heartbeat_at < ${new Date(Date.now() - times.deadAfterMs)}
    RETURNING id`
  const stranded = await db.$queryRaw<{ id: string }[]>`
    SELECT i.id FROM interns i JOIN runtime_hosts h ON h.id = i.runtime_host_id
    WHERE i.status IN ('provisioning', 'running') AND (h.state = 'dead' OR (h.state = 'draining' AND h.drained))
    LIMIT 5000`
  const moved: string[] = []
  for (const { id } of stranded) {
    const done = await db.$transaction(async (tx) => {
      const next = await transition(tx, {
        internId: id,
        from: ['running', 'provisioning'],
        to: 'queued',
        set: { progress: null, lastFailureMessage: null, bumpGeneration: true },
      })
      if (!next) return false
      // Unplaced: its run places it anew (never on the host it left: that one is dead or draining).
      await tx.$executeRaw`UPDATE interns SET runtime_host_id = NULL, moved_at = now() WHERE id = ${id}::uuid`
      await enqueueInTx(tx, 'intern.provision', { internId: id, generation: next.provision_generation })
      return true
    })
    if (done) moved.push(id)
  }
  return { dead: dead.map((d) => d.id), moved }
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
