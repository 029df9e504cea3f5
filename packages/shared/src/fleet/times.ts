// The fleet's clocks: when a host counts as dead, and how recently it must have beaten to be given new interns.

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
