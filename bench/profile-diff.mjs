#!/usr/bin/env node
// What one process did more than another, function by function: `node bench/profile-diff.mjs
// <a.cpuprofile> <b.cpuprofile> <requests per second> [seconds]` compares the self time of the
// samples in each profile's last `seconds` (22; the last second left out: the process ending) and
// prints, in microseconds per request, both totals and the functions whose time differs most (a
// minus b). Both profiles from the same load (BENCH_API_FLAGS='--cpu-prof --cpu-prof-dir=DIR
// --cpu-prof-interval=200' with BENCH_FLOOR_ONLY=<target> BENCH_RATE=<rate> BENCH_SECONDS=25), e.g.
// a target with every feature on against the same target from a plain key (`<target>-off`).
import { busySamples } from './cpu-profile.mjs'

const [a, b, rate, seconds = '22'] = process.argv.slice(2)
if (!a || !b || !rate) throw new Error('usage: profile-diff.mjs <a.cpuprofile> <b.cpuprofile> <requests/s> [seconds]')
const requests = Number(rate) * Number(seconds)

/** Each function's (name, file, line) self time in the window, in µs per request. */
function selfTimes(file) {
  const us = new Map()
  let total = 0
  busySamples(file, seconds, (f, time) => {
    const where = f.url.replace(/.*node_modules\//, '').replace(/^file:\/\/.*?\/(apps|packages|bench)\//, '$1/')
    const key = `${f.functionName || '(anonymous)'} ${where}${where ? `:${f.lineNumber + 1}` : ''}`
    us.set(key, (us.get(key) ?? 0) + time / requests)
    total += time / requests
  })
  return { us, total }
}

const A = selfTimes(a)
const B = selfTimes(b)
console.log(
  `µs per request: ${A.total.toFixed(1)} (a), ${B.total.toFixed(1)} (b), ${(A.total - B.total).toFixed(1)} more`,
)
const differences = [...new Set([...A.us.keys(), ...B.us.keys()])]
  .map((k) => [k, (A.us.get(k) ?? 0) - (B.us.get(k) ?? 0)])
  .sort((x, y) => Math.abs(y[1]) - Math.abs(x[1]))
for (const [k, d] of differences.slice(0, 40)) console.log(`${d.toFixed(1).padStart(7)}  ${k}`)
