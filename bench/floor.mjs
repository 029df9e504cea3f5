// The gateway at the floor (`npm run bench -- floor`): Roster's three doors, streamed and not, from
// a key under every policy (bench/gateway.mjs governedKeys: limits on the key, its guardrail's and
// its workspace default's, a budget, an allow-list, a content filter), with accounting (the worker
// drains the ledger) and Prometheus metrics on and tracing off, held against a bare Fastify proxy
// (bench/floor-fastify.mjs) in front of the same Chat Completions endpoint of the simulator, in one
// run. A plain key (no policy) beside each door gives the features' cost.
//
// Three measures, each taking the targets in turn, round by round:
// - CPU per request at a fixed rate (BENCH_RATE, 1,000/s; BENCH_SECONDS split into BENCH_ROUNDS),
//   the process behind each target (the API or the Fastify proxy), from /proc;
// - throughput with 64 connections (autocannon), BENCH_FLOOR_THR_ROUNDS rounds of
//   BENCH_FLOOR_THR_SECONDS each per target after a warm-up;
// - a streamed reply's first byte, one request at a time (BENCH_TTFB_RUNS per round).
// With BENCH_BEFORE_ROOT (a checkout of the build before, built), every Roster target also runs
// through that build's API beside this one's, in the same rounds: each step's ratio in one run.
import { writeFileSync } from 'node:fs'
import autocannon from 'autocannon'
import { Pool } from 'undici'
import {
  addStolen,
  doorTargets,
  fixedRate,
  governedKeys,
  plainKeys,
  machineTicks,
  measureTargets,
  pct,
  percentStolen,
  rotated,
} from './gateway.mjs'

const f2 = (x) => x.toFixed(2)

/** Each door's target (`roster-<door>`) for `key`, and the floor's, streamed (`-stream`) and not. */
function floorTargets(base, key) {
  const doors = doorTargets(base, key)
  const all = { fastify: doors['fastify-chat'] }
  for (const d of DOORS) all[`roster-${d}`] = doors[`roster-${d}`]
  for (const [name, t] of Object.entries(all))
    all[`${name}-stream`] = { ...t, body: JSON.stringify({ ...JSON.parse(t.body), stream: true }) }
  return all
}

const withKey = (t, key) => ({ ...t, headers: { ...t.headers, authorization: `Bearer ${key}` } })
/** `t` sent from each of `keys` in turn. */
const fromKeys = (t, keys) => ({ ...t, keyed: keys.map((k) => withKey(t, k).headers) })
/** BENCH_FLOOR_PARTS: some of cpu,throughput,ttfb (all by default). */
const parts = (process.env.BENCH_FLOOR_PARTS ?? 'cpu,throughput,ttfb').split(',')
/**
 * BENCH_FLOOR_DOORS: some of responses, chat (passed through), chat-translated, messages (from a Chat
 * Completions endpoint), messages-own (from an Anthropic one, passed through), messages-own-translated
 * (all by default).
 */
const DOORS = (
  process.env.BENCH_FLOOR_DOORS ?? 'responses,chat,chat-translated,messages,messages-own,messages-own-translated'
).split(',')

export async function benchFloor({ key, managementKey, base, apiPid, before }) {
  // Requests come from 16 keys in turn: one key alone would meet its fair share while the process
  // is loaded (KEY_CONCURRENCY_UNDER_LOAD, 8) and measure the refusals.
  const governed = await governedKeys({ key, managementKey, base }, 16)
  const plain = await plainKeys({ managementKey, base }, 16)
  const on = floorTargets(base, governed[0])
  for (const n of Object.keys(on)) on[n] = fromKeys(on[n], governed)
  // The same requests from plain keys: every feature off for them (the process is the same).
  const off = Object.fromEntries(
    Object.entries(on)
      .filter(([n]) => n.startsWith('roster-'))
      .map(([n, t]) => [`${n}-off`, fromKeys(t, plain)]),
  )
  // BENCH_BEFORE_ROOT: every Roster target again through the earlier build's API (`<name>@before`),
  // in the same rounds, for the step's ratio in one run.
  if (before)
    for (const group of [on, off])
      for (const [n, t] of Object.entries(group))
        if (n.startsWith('roster-'))
          group[`${n}@before`] = { ...t, origin: new URL(before.base).origin, pid: before.pid }
  // BENCH_FLOOR_ONLY: load on these targets alone, nothing measured (for a profile or a trace), e.g.
  // roster-chat-off: with BENCH_FLOOR_SEQUENTIAL=N, N requests one at a time; with BENCH_RATE, that
  // rate for BENCH_SECONDS; else 64 connections for BENCH_FLOOR_THR_SECONDS.
  const only = process.env.BENCH_FLOOR_ONLY?.split(',')
  if (only) {
    const n = Number(process.env.BENCH_FLOOR_SEQUENTIAL ?? 0)
    for (const [name, t] of Object.entries({ ...on, ...off }).filter(([name]) => only.includes(name)))
      if (n) await firstByte(t, n)
      else if (process.env.BENCH_RATE) {
        const r = await fixedRate(t, Number(process.env.BENCH_RATE), Number(process.env.BENCH_SECONDS ?? 10))
        process.stderr.write(
          `bench: ${name}: p50 ${r.p50?.toFixed(2)} ms, p99 ${r.p99?.toFixed(2)} ms, ${r.errors} errors, ${Math.round(r.achieved)}/s\n`,
        )
        if (process.env.BENCH_DUMP) writeFileSync(process.env.BENCH_DUMP, JSON.stringify({ [name]: r.timeline }))
      } else await autocannonKeyed(t, Number(process.env.BENCH_FLOOR_THR_SECONDS ?? 10))
    return []
  }
  return [
    ...(parts.includes('cpu') ? await cpuPerRequest({ ...on, ...off }, apiPid) : []),
    ...(parts.includes('throughput') ? await throughput(on) : []),
    ...(parts.includes('ttfb') ? await firstBytes({ ...on, ...off }) : []),
  ]
}

/** Each door's row: `value(name, floorName)` for the door streamed and not. */
const perDoor = (row) => DOORS.flatMap((d) => ['', '-stream'].map((s) => row(`roster-${d}${s}`, `fastify${s}`)))

/** CPU per request at a fixed rate, every target in turn (measureTargets' rounds). */
async function cpuPerRequest(all, apiPid) {
  const rate = Number(process.env.BENCH_RATE ?? 1000)
  const seconds = Number(process.env.BENCH_SECONDS ?? 10)
  const { lat, cpu, stolen, rounds } = await measureTargets(all, apiPid, rate, seconds, 0)
  const errors = Object.entries(lat)
    .filter(([, l]) => l.errors)
    .map(([n, l]) => `${n}: ${l.errors}`)
  return [
    {
      scenario: `floor: CPU per request at ${rate}/s (${seconds} s in ${rounds} rounds), fastify / fastify-stream`,
      metric: 'µs',
      value: `${cpu.fastify.toFixed(0)} / ${cpu['fastify-stream'].toFixed(0)}`,
      target: errors.length ? `errors! ${errors.join(', ')}` : `stolen ${percentStolen(stolen.fastify)} %`,
    },
    ...perDoor((name, floor) => ({
      scenario: `  ${name}: CPU µs on (off); on / floor; on / off`,
      metric: '×',
      value: `${cpu[name].toFixed(0)} (${cpu[`${name}-off`].toFixed(0)}); ${f2(cpu[name] / cpu[floor])}; ${f2(cpu[name] / cpu[`${name}-off`])}`,
      target: '≤ 1.10; ≤ 1.05',
    })),
    ...(!Object.keys(cpu).some((n) => n.endsWith('@before'))
      ? []
      : perDoor((name) => ({
          scenario: `  ${name}: CPU this build / the one before, on (off)`,
          metric: '×',
          value: `${f2(cpu[name] / cpu[`${name}@before`])} (${f2(cpu[`${name}-off`] / cpu[`${name}-off@before`])})`,
          target: '',
        }))),
  ]
}

/** Throughput: 16 clients of 4 connections, one key each, together; rounds taken in turn. */
async function throughput(on) {
  const rounds = Number(process.env.BENCH_FLOOR_THR_ROUNDS ?? 3)
  const seconds = Number(process.env.BENCH_FLOOR_THR_SECONDS ?? 3)
  const thr = Object.fromEntries(Object.keys(on).map((n) => [n, { ok: 0, seconds: 0, bad: 0 }]))
  for (const t of Object.values(on)) await autocannonKeyed(t, 2)
  for (let r = 0; r < rounds; r++)
    for (const [name, t] of rotated(Object.entries(on), r)) {
      const res = await autocannonKeyed(t, seconds)
      for (const k of ['ok', 'seconds', 'bad']) thr[name][k] += res[k]
    }
  const rps = (n) => thr[n].ok / thr[n].seconds
  return [
    {
      scenario: `floor: throughput, 64 connections (${rounds} × ${seconds} s), fastify / fastify-stream`,
      metric: 'req/s',
      value: `${rps('fastify').toFixed(0)} / ${rps('fastify-stream').toFixed(0)}`,
      target: '',
    },
    ...perDoor((name, floor) => ({
      scenario: `  ${name}: req/s; / floor${thr[`${name}@before`] ? '; / the build before' : ''}`,
      metric: '×',
      value: `${rps(name).toFixed(0)}; ${f2(rps(name) / rps(floor))}${thr[`${name}@before`] ? `; ${f2(rps(name) / rps(`${name}@before`))}` : ''}`,
      target: thr[name].bad ? `${thr[name].bad} errors!` : '≥ 0.90',
    })),
  ]
}

/** 64 connections: 16 clients of 4, one key each, together. */
async function autocannonKeyed(t, duration) {
  const runs = await Promise.all(
    t.keyed.map((headers) =>
      autocannon({ url: t.origin + t.path, method: 'POST', headers, body: t.body, connections: 4, duration }),
    ),
  )
  const sum = (f) => runs.reduce((a, r) => a + f(r), 0)
  return {
    ok: sum((r) => r['2xx']),
    seconds: sum((r) => r.duration) / runs.length,
    bad: sum((r) => r.non2xx + r.errors),
  }
}

/** A streamed reply's first byte, one request at a time, the targets in turn after a warm-up round. */
async function firstBytes(on) {
  const runs = Number(process.env.BENCH_TTFB_RUNS ?? 300)
  const rounds = Number(process.env.BENCH_TTFB_ROUNDS ?? 3)
  const streamed = Object.keys(on).filter((n) => /-stream(-off)?(@before)?$/.test(n))
  const times = Object.fromEntries(streamed.map((n) => [n, []]))
  const machineBefore = machineTicks()
  for (let r = -1; r < rounds; r++)
    for (const name of rotated(streamed, r + 1)) {
      const ms = await firstByte(on[name], r < 0 ? 200 : runs)
      if (r >= 0) times[name].push(ms)
    }
  const stolen = addStolen({ total: 0, steal: 0 }, machineBefore, machineTicks())
  const mid = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  const floor = mid(times['fastify-stream'])
  return [
    {
      scenario: `floor: streamed first byte (${runs} sequential × ${rounds}), fastify-stream`,
      metric: 'p50 ms',
      value: f2(floor),
      target: `stolen ${percentStolen(stolen)} %`,
    },
    ...DOORS.map((d) => {
      const name = `roster-${d}-stream`
      const then = times[`${name}@before`]
      return {
        scenario: `  ${name}: p50 ms; over the floor's (features off: over the floor's)${then ? '; the build before: the same' : ''}`,
        metric: 'ms',
        value: `${f2(mid(times[name]))}; ${f2(mid(times[name]) - floor)} (${f2(mid(times[`${name}-off`]) - floor)})${then ? `; ${f2(mid(then) - floor)} (${f2(mid(times[`${name}-off@before`]) - floor)})` : ''}`,
        target: '≤ 0.20',
      }
    }),
  ]
}

/** The median time to a streamed reply's first body byte, over `n` requests one at a time. */
async function firstByte(t, n) {
  const pool = new Pool(t.origin, { connections: 1 })
  const times = []
  for (let i = 0; i < n; i++) {
    const t0 = performance.now()
    const res = await pool.request({ method: 'POST', path: t.path, headers: t.keyed[i % t.keyed.length], body: t.body })
    let first = 0
    for await (const _ of res.body) first ||= performance.now()
    if (res.statusCode !== 200) throw new Error(`${t.path}: ${res.statusCode}`)
    times.push(first - t0)
  }
  await pool.close()
  return pct(
    times.sort((a, b) => a - b),
    0.5,
  )
}
