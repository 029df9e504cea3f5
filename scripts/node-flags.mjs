// Node flags for Roster's long-running processes, used by `npm start` and the benchmarks alike.
//
// On two cores or fewer, V8's parallel garbage collection hands each young-generation collection
// to helper threads that then wait for a core the process's own thread and its neighbours (the
// database, Redis, a provider) are using; a single-threaded collector keeps those pauses short.
// In three alternating pairs of the gateway benchmark, p99 added latency read 1.5–2.1 ms with it
// and 2.3–2.8 ms without (bench/RESULTS.md). ROSTER_NODE_FLAGS, when set, replaces the choice
// (empty: no flags).
import { availableParallelism } from 'node:os'

export function nodeFlags(env = process.env) {
  if (env.ROSTER_NODE_FLAGS !== undefined) return env.ROSTER_NODE_FLAGS.split(' ').filter(Boolean)
  return availableParallelism() <= 2 ? ['--single-threaded-gc'] : []
}
