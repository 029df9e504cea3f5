import type { Db } from '../db.js'
import type { HostErrorCode } from '@roster/protocol'
import { internMoving, unplace } from '../repositories/interns.js'
import { hostSilent } from '../repositories/runtime-hosts.js'
import { RuntimeUnavailableError } from './driver.js'

// The fleet's one policy for an intern that may be moving between hosts (its host died, was cut
// off, or drains), for every caller of a host: the chat route waits and tries the intern's new
// host; a provisioning run gives the intern up to be placed again. What they share: only a call
// that never reached a host is tried elsewhere (a call a host took is never sent twice), and a
// host's refusals that mean "not here any more" are a move, not a failure.

/** A call that never reached the intern's host: it may be dead, and the fleet moves its interns once it is declared so. */
export const neverReachedHost = (err: unknown): err is RuntimeUnavailableError =>
  err instanceof RuntimeUnavailableError && err.undelivered

/** A host's refusals that mean the intern is between hosts (its host drains, was cut off, or no longer holds it). */
export const REFUSED_WHILE_MOVING: ReadonlySet<HostErrorCode> = new Set<HostErrorCode>([
  'draining',
  'placement_stale',
  'placement_unverified',
])

/** How often a caller waiting for a moving intern looks again. */
export const MOVE_POLL_MS = 250

/**
 * Waits, a poll at a time, for a moving intern, until `waitMs` after it was made (0: never waits:
 * a move is then the caller's failure at once), or until `signal` aborts.
 */
export class MoveWait {
  private readonly deadline: number
  constructor(
    private readonly db: Db,
    private readonly internId: string,
    private readonly waitMs: number,
    private readonly signal: AbortSignal,
  ) {
    this.deadline = Date.now() + waitMs
  }

  /** Whether the fleet is moving the intern: placed again lately, after its host died or drained, and not suspended since. */
  moving(): Promise<boolean> {
    return this.waitMs === 0 ? Promise.resolve(false) : internMoving(this.db, this.internId)
  }

  /** One more poll's wait, or `failure` when the time is up (or the caller left). */
  async next(failure: () => Error): Promise<void> {
    const remaining = this.deadline - Date.now()
    if (remaining <= 0 || this.signal.aborted) throw failure()
    await new Promise((r) => setTimeout(r, Math.min(MOVE_POLL_MS, remaining)))
  }
}

/**
 * A provisioning run's side: the intern's host could not be reached, so its placement is taken back
 * (the next attempt places it anew). Answers whether the host has also stopped beating (none for
 * `silentMs`): then it has most likely died, and the run tries again shortly; a host still beating
 * (a wrong address, a partition) makes the failure the call's own.
 */
export async function unplaceFromUnreachableHost(
  db: Db,
  internId: string,
  placed: { hostId: string; generation: number },
  silentMs: number,
): Promise<boolean> {
  await unplace(db, internId, placed)
  return (await hostSilent(db, placed.hostId, silentMs)) !== false
}
