// Node flags for Roster's long-running processes, used by `npm start` and the benchmarks alike.
//
// --no-allocation-site-pretenuring, everywhere: V8 decides, per allocation site, to allocate
// straight into the old generation when most of a site's objects outlived a young-generation
// collection. A server that takes load while still cold (interpreted code, requests queueing)
// sees every request's objects outlive collections for a few seconds, and the sites it tenures
// then stay tenured: each request's objects are born old, die old, and keep what they point to
// alive through every young collection until a full one. In the gateway benchmark 21 sites were
// tenured in the first seconds of load (--trace-pretenuring-statistics); with the flag each
// young collection promoted 12 KB instead of 124 KB and paused 1.0 ms instead of 2.0
// (bench/RESULTS.md).
//
// --single-threaded-gc, on two cores or fewer: V8's parallel garbage collection hands each
// young-generation collection to helper threads that then wait for a core the process's own
// thread and its neighbours (the database, Redis, a provider) are using; a single-threaded
// collector keeps those pauses short. In three alternating pairs of the gateway benchmark, p99
// added latency read 1.5–2.1 ms with it and 2.3–2.8 ms without.
//
// ROSTER_NODE_FLAGS, when set, replaces the choice (empty: no flags).
import { availableParallelism } from 'node:os'

export function nodeFlags(env = process.env, cores = availableParallelism()) {
  if (env.ROSTER_NODE_FLAGS !== undefined) return env.ROSTER_NODE_FLAGS.split(' ').filter(Boolean)
  return [...(cores <= 2 ? ['--single-threaded-gc'] : []), '--no-allocation-site-pretenuring']
}
