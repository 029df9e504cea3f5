import { totalmem } from 'node:os'
import type { FastifyBaseLogger } from 'fastify'
import type { RuntimeConfig } from '@roster/protocol'
import { FleetError, type FleetClient } from './fleet-client.js'
import type { Interns } from './interns.js'

// A runtime host's membership of the fleet: it joins (again and again until the API answers),
// then beats. Each acknowledged beat renews its lease and brings the record's word on what it runs:
// it stops what the record placed elsewhere. A host whose lease runs out (cut off, or paused) stops
// running its interns until the record confirms them; one the record declared dead joins again under
// a new epoch, having stopped everything first. Asked to drain, it lets going turns finish, stops and
// snapshots every intern, and says it is done; the record then places its interns on other hosts.

/** The id a host joins with, and the address it says it is reached at. */
export function hostIdentity(config: RuntimeConfig) {
  const address =
    config.RUNTIME_ADVERTISE_URL ??
    `http://${config.HOST === '0.0.0.0' || config.HOST === '::' ? '127.0.0.1' : config.HOST}:${config.PORT}`
  return {
    id: config.RUNTIME_HOST_ID ?? `runtime-${config.PORT}`,
    address,
    // One intern per 128 MiB of the machine's memory, unless set.
    capacity: config.RUNTIME_CAPACITY ?? Math.max(1, Math.floor(totalmem() / (128 * 1024 * 1024))),
  }
}

export interface Membership {
  /** Resolves once the host has joined. */
  joined: Promise<void>
  /** Drains this host (its own choice: shutting down with RUNTIME_DRAIN_ON_SHUTDOWN). Resolves when its interns have left it, or at `timeoutMs`. */
  drainSelf(timeoutMs: number): Promise<void>
  stop(): void
}

export function startMembership(
  config: RuntimeConfig,
  fleet: FleetClient,
  interns: Interns,
  log: FastifyBaseLogger,
  identity = hostIdentity(config),
): Membership {
  let stopped = false
  let timer: NodeJS.Timeout | undefined
  let draining: Promise<void> | undefined
  let drained = false
  let holding = false
  let placed = -1

  const join = async () => {
    for (let wait = 100; !stopped; wait = Math.min(wait * 2, 5_000)) {
      try {
        const membership = await fleet.join({ address: identity.address, capacity: identity.capacity })
        log.info(
          { host: identity.id, epoch: membership.epoch, capacity: identity.capacity, address: identity.address },
          'joined the fleet',
        )
        return
      } catch (err) {
        log.warn({ err: (err as Error).message }, 'could not join the fleet yet; trying again')
        await new Promise((r) => setTimeout(r, wait).unref())
      }
    }
  }

  const beat = async () => {
    if (stopped || !fleet.membership) return
    const asked = Date.now()
    const rejoin = async (why: string) => {
      // Nothing here may run: its interns are (or will be) placed elsewhere. Join again as a new epoch.
      log.warn(`${why}: stopping every intern and joining again`)
      await Promise.all(
        interns.list().map((i) => interns.drop(i, "the intern's host was declared dead; its run was cancelled")),
      )
      fleet.forget()
      await join()
    }
    try {
      const answer = await fleet.heartbeat({
        running: interns
          .list()
          .filter((i) => i.running)
          .map((i) => ({ id: i.id, generation: i.spec.generation })),
        drained,
      })
      // Declared dead while away (paused, cut off).
      if (answer.state === 'dead') return await rejoin('the fleet declared this host dead while it was away')
      if (stopped) return
      holding = false
      await interns.applyPlacements(answer.placements, asked)
      if (answer.placements.length !== placed)
        log.info({ interns: answer.placements.length }, 'placements confirmed by the fleet')
      placed = answer.placements.length
      if (answer.state === 'draining' && !draining) {
        log.warn('draining: this host takes no new turns; its interns move to other hosts')
        draining = interns.drain(config.RUNTIME_DRAIN_TURN_GRACE_MS).then(() => {
          drained = true
          log.info('drained: every turn ended and every workspace snapshotted')
        })
      }
    } catch (err) {
      // Its credential no longer admitted (another epoch of its id joined; the fleet's keys changed): as dead.
      if (err instanceof FleetError && err.status === 401)
        return await rejoin('the fleet no longer admits this host’s credential')
      log.warn({ err: (err as Error).message }, 'a heartbeat was not acknowledged')
    }
  }

  // The lease, watched apart from the beats: a host whose beats go unanswered stops its interns
  // before the record can declare it dead and place them elsewhere.
  const watchLease = () => {
    if (stopped) return
    if (fleet.membership && !fleet.verified && !holding) {
      holding = true
      log.warn('the fleet has not acknowledged this host within its lease: its interns stop until it does')
      void interns.hold(
        "the intern's host lost touch with the fleet; its run was cancelled (the session is kept: continue it)",
      )
    }
  }

  const loop = async () => {
    if (stopped) return
    watchLease()
    await beat()
    watchLease()
    timer = setTimeout(() => void loop(), fleet.membership?.heartbeat_ms ?? 1_000)
    timer.unref()
  }

  const joined = join().then(() => void loop())

  return {
    joined,
    async drainSelf(timeoutMs) {
      const deadline = Date.now() + timeoutMs
      await fleet
        .drainSelf()
        .catch((err) => log.warn({ err: (err as Error).message }, 'the fleet could not be asked to drain this host'))
      while (Date.now() < deadline) {
        await beat()
        if (drained && interns.list().length === 0) return
        await new Promise((r) => setTimeout(r, 200))
      }
    },
    stop() {
      stopped = true
      clearTimeout(timer)
    },
  }
}
