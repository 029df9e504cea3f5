// @roster/platform: what every Roster process runs on, beside its protocol: logging, metrics,
// tracing, its listeners' limits, shutdown, and the one reader of Server-Sent Events. No database.
export * from './logger.js'
export * from './metrics.js'
export * from './tracing.js'
export * from './listener-limits.js'
export * from './shutdown.js'
export * from './event-stream.js'
export * from './connection-errors.js'
export * from './secrets.js'
