// @roster/protocol: the wire contracts every Roster process and package speaks, with no dependency
// but zod (no database, no Redis, no logger): the error table and its renderers, the runtime host's
// protocol, job payloads, the event streams' shapes, the settings' schemas, the public API's
// contracts. The runtime host and the gateway depend on this, never on the database package.
export * from './errors.js'
export * from './runtime-protocol.js'
export * from './jobs.js'
export * from './config.js'
export * from './listener-settings.js'
export * from './guardrail-policy.js'
export * from './generations.js'
export * from './storable-text.js'
export * from './canonical-json.js'
export * from './sse.js'
export * from './contracts/interns.js'
export * from './contracts/intern-work.js'
export * from './contracts/slack.js'
export * from './contracts/operator.js'
export * from './spend.js'
