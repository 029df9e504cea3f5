// @roster/shared/fleet: The fleet of runtime hosts: membership, placement, moves, and what an operator sees of it.
export * from './hosts.js'
export * from './times.js'
export * from './driver.js'
export * from './operator-view.js'
export * from './moves.js'
