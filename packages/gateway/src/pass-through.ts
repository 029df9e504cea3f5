import type { Candidate } from './routing.js'
import type { Run } from './run.js'

// Pass-through: a reply answered with the provider's own bytes, where the door speaks the
// endpoint's protocol and nothing of the run changes what the provider said. The reply is still
// read as every reply is (usage, finish, calls, errors: the record, the limits, fallback); only the
// door's translation of it is skipped (doors/chat-pass-through.ts, doors/messages-pass-through.ts).

/**
 * Whether this call's reply may go to the client as its provider sent it: the door allows it and
 * speaks the endpoint's protocol, and the run neither adds to the reply (server tools, plugins, web
 * search and its citations, routing metadata, the upstream body echoed) nor is another run's part
 * (a consultation's).
 */
export function passes(run: Run, c: Candidate): boolean {
  return (
    run.opts.passThrough?.protocol === c.endpoint.protocol &&
    run.tools.size === 0 &&
    run.plugins.length === 0 &&
    !run.webSearch &&
    !run.req.debug &&
    !run.tap &&
    !run.depth &&
    !run.opts.metadata?.service &&
    !run.opts.metadata?.openrouter
  )
}
