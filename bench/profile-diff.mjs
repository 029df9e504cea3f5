#!/usr/bin/env node
// What one process did more than another, function by function: `node bench/profile-diff.mjs
// <a.cpuprofile> <b.cpuprofile> <requests per second> [seconds]` compares the self time of the
// samples in each profile's last `seconds` (22; the last second left out: the process ending) and
// prints, in microseconds per request, both totals and the functions whose time differs most (a
// minus b). Both profiles from the same load (BENCH_API_FLAGS='--cpu-prof --cpu-prof-dir=DIR
// --cpu-prof-interval=200' with BENCH_FLOOR_ONLY=<target> BENCH_RATE=<rate> BENCH_SECONDS=25), e.g.
// a target with every feature on against the same target from a plain key (`<target>-off`).
import { readFileSync } from 'node:fs'

const [a, b, rate, seconds = '22'] = process.argv.slice(2)
if (!a || !b || !rate) throw new Error('usage: profile-diff.mjs <a.cpuprofile> <b.cpuprofile> <requests/s> [seconds]')
const requests = Number(rate) * Number(seconds)

/** Each function's (name, file, line) self time in the window, in µs per request. */
function selfTimes(file) {
  const profile = JSON.parse(readFileSync(file, 'utf8'))
  const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]))
  let at = profile.startTime
  const times = profile.timeDeltas.map((d) => (at += d))
  const end = times.at(-1) - 1e6
  const start = end - Number(seconds) * 1e6
  // Each sample stands for the time until the next (as DevTools counts it), in µs per request.
  const counts = new Map()
  let busy = 0
  profile.samples.forEach((id, i) => {
    if (times[i] < start || times[i] > end) return
    const f = frames.get(id)
    if (f.functionName === '(idle)') return
    const us = (times[i + 1] - times[i]) / requests
    busy += us
    const where = f.url.replace(/.*node_modules\//, '').replace(/^file:\/\/.*?\/(apps|packages|bench)\//, '$1/')
    const key = `${f.functionName || '(anonymous)'} ${where}${where ? `:${f.lineNumber + 1}` : ''}`
    counts.set(key, (counts.get(key) ?? 0) + us)
  })
  return { us: counts, total: busy }
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
