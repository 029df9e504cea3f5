#!/usr/bin/env node
// Where a process's CPU went, by part: `node bench/profile-split.mjs <file.cpuprofile> [seconds]
// [µs per request]` splits the self time of the samples in the profile's last `seconds` (20; the
// last second left out: the process ending) into the parts below, first match wins, and with a
// CPU per request (from `npm run bench -- floor`) turns the shares into microseconds. The profile
// comes from BENCH_API_FLAGS or BENCH_FASTIFY_FLAGS='--cpu-prof --cpu-prof-dir=DIR
// --cpu-prof-interval=200' with BENCH_FLOOR_ONLY=<target> BENCH_RATE=1000 (bench/floor.mjs).
import { busySamples } from './cpu-profile.mjs'

const has =
  (...parts) =>
  (fn, url) =>
    parts.some((p) => url.includes(p))
const PARTS = [
  [
    'socket writes (system calls)',
    (fn) => ['writev', 'writeUtf8String', 'writeBuffer', 'writeLatin1String'].includes(fn),
  ],
  ['garbage collection', (fn) => fn === '(garbage collector)'],
  ['V8 and native, unattributed', (fn, url) => !url && ['(program)', 'runMicrotasks', '(anon)', ''].includes(fn)],
  ['key hashing (SHA-256)', has('node:internal/crypto')],
  ['Node: http, net, streams, events, timers', (fn, url) => url.startsWith('node:') && !url.includes('modules')],
  ['Fastify (router, hooks, body, reply)', has('fastify', 'find-my-way', 'secure-json-parse', 'avvio', 'toad-cache')],
  ['undici (upstream client; llhttp in wasm)', has('undici', 'wasm://')],
  ['ioredis (ledger append, spend reads)', has('ioredis', 'redis-parser', 'cluster-key-slot', 'denque')],
  ['Prisma, pg (background reads, ledger sums)', has('@prisma', '/pg/', 'pg-protocol', 'pg-pool')],
  ['zod (body validation)', has('/zod/')],
  ['prom-client and metrics', has('prom-client', 'metrics')],
  ['Roster: spend limits', has('spend-limits')],
  ['Roster: ledger (records, append)', has('generation-ledger', 'generation-records')],
  [
    'Roster: auth, admission, input guards',
    has('plugins/auth', 'plugins/lru', 'fair-use', 'request-rate', 'input-guards'),
  ],
  ['Roster: guardrails', has('guardrail', 're2js')],
  ['Roster: engine, doors, adapters', has('packages/gateway')],
  ['Roster: API routes, shared', has('apps/api', 'packages/shared')],
  ['the Fastify floor script', has('bench/floor')],
]

const [file, seconds = '20', perRequest] = process.argv.slice(2)
if (!file) throw new Error('usage: profile-split.mjs <file.cpuprofile> [seconds] [µs per request]')
const counts = new Map()
let busy = 0
busySamples(file, seconds, ({ functionName: fn, url }, us) => {
  busy += us
  const part = PARTS.find(([, test]) => test(fn, url))?.[0] ?? 'other'
  counts.set(part, (counts.get(part) ?? 0) + us)
})
console.log(`${(busy / 1e6).toFixed(1)} s busy in the last ${seconds} s`)
for (const [part, n] of [...counts].sort((a, b) => b[1] - a[1])) {
  const share = n / busy
  const us = perRequest ? ` ${(share * Number(perRequest)).toFixed(0).padStart(4)} µs` : ''
  console.log(`${(100 * share).toFixed(1).padStart(5)} %${us}  ${part}`)
}
