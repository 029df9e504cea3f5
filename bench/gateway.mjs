// Gateway benchmarks (used by run.mjs): Roster's /responses against the upstream simulator, side by
// side with a direct call to the simulator and with the Portkey gateway (@portkey-ai/gateway) in
// front of the same simulator, under the same load in one run.
//
// Knobs (environment): BENCH_TARGETS (some of direct,floor,fastify,roster,portkey), BENCH_RATE,
// BENCH_SECONDS, BENCH_THROUGHPUT_SECONDS (0: none), BENCH_AWAKE=1 (keepCoresAwake), BENCH_ROUNDS (the measured seconds split into rounds taking the targets in turn),
// BENCH_WARMUP_SECONDS, BENCH_TTFB_RUNS / BENCH_TTFB_ROUNDS / BENCH_TTFB_WARMUP (unmeasured requests first), BENCH_PIN=1, BENCH_API_FLAGS and
// BENCH_FASTIFY_FLAGS (node flags, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"), BENCH_SOAK_*,
// BENCH_DUMP (a file: each target's measured requests as [sent at, epoch ms; latency, ms]).
// doors-instructions: BENCH_CG_WARMUP (requests per door before counting), BENCH_CG_REQUESTS (per round), BENCH_CG_ROUNDS.
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { Pool } from 'undici'

export const SIM_PORT = 3902
export const PORTKEY_PORT = 3903
export const FLOOR_PORT = 3904
export const FASTIFY_FLOOR_PORT = 3905
const sim = `http://127.0.0.1:${SIM_PORT}`

/** The catalogue Roster serves in these benchmarks: one model per protocol, on the simulator. */
export const benchCatalogue = {
  models: ['chat:openai-chat', 'responses:openai-responses', 'messages:anthropic-messages'].map((pair) => {
    const [slug, protocol] = pair.split(':')
    return {
      id: `bench/${slug}`,
      name: `simulator (${protocol})`,
      context_length: 8000,
      pricing: { input: '0.000001', output: '0.000002' },
      endpoints: [
        { provider: 'upstream-sim', protocol, base_url: `${sim}/v1`, upstream_model: 'sim', timeout_ms: 30000 },
      ],
    }
  }),
}

/**
 * BENCH_PIN=1 (on a machine with 2+ cores) runs each gateway (Roster's API, Portkey, the floor
 * proxy) on core 1 and the simulator and load generator on core 0, so a gateway's figures are its
 * own and not its neighbours' time slices. Off by default.
 */
export const pinning = process.env.BENCH_PIN === '1'
export function pin(pid, cpu) {
  if (pinning) spawnSync('taskset', ['-a', '-pc', String(cpu), String(pid)], { stdio: 'ignore' })
}

// Counts in the shell, and every ~25 ms looks for its parent: it ends when the benchmark does.
const LOOP = 'while kill -0 $PPID 2>/dev/null; do i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; done'

/**
 * BENCH_AWAKE=1 keeps every core of this machine busy with a loop at the idle scheduling class
 * (SCHED_IDLE), which any other thread preempts at once. On these VMs an idle virtual core halts,
 * and waking it for the next request costs a trip through the hypervisor, which every hop of a
 * request may pay: the bare Fastify proxy's added p50 read 0.52–0.63 ms in eight runs with the cores
 * free to halt, 0.30–0.35 in four of seven with them kept awake (bench/RESULTS.md). A server under
 * real load rarely lets its cores halt. The busy loops' CPU is not counted in any process's CPU per
 * request; they end with the benchmark, killed or not. Off by default. Returns a function that
 * stops them.
 */
export const keepingAwake = process.env.BENCH_AWAKE === '1'
export function keepCoresAwake() {
  if (!keepingAwake) return () => {}
  const loops = cpus().map(() => spawn('chrt', ['--idle', '0', 'sh', '-c', LOOP], { stdio: 'ignore' }))
  const stop = () => loops.forEach((l) => l.kill('SIGKILL'))
  process.once('exit', stop)
  return stop
}

/** Process ids of what startUpstreams started, to measure each one's CPU. */
export const pids = {}

/** CPU seconds (user + system) a process has used so far, from /proc. */
export function cpuSeconds(pid) {
  if (!pid) return NaN
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return (Number(fields[11]) + Number(fields[12])) / 100 // utime, stime in clock ticks (USER_HZ 100)
}

/**
 * The machine's CPU time so far, all cores, from /proc/stat: total and stolen (the hypervisor gave
 * this VM's cores to someone else). A run whose rounds lost a good share to steal measured the host's
 * neighbours, not the gateways; the table says how much each target's rounds lost.
 */
export function machineTicks() {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number)
  return { total: f.slice(0, 8).reduce((a, b) => a + b, 0), steal: f[7] ?? 0 }
}
/** Adds what was stolen between two readings to a tally; answers the tally. */
export const addStolen = (tally, before, after) =>
  Object.assign(tally, {
    total: tally.total + after.total - before.total,
    steal: tally.steal + after.steal - before.steal,
  })
export const percentStolen = (tally) => ((100 * tally.steal) / (tally.total || 1)).toFixed(1)

/** Starts the simulator, Portkey and the floor proxies; answers a stop function. */
export async function startUpstreams(root, waitHttp) {
  const procs = [
    spawn(process.execPath, [join(root, 'packages/upstream-sim/dist/main.js')], {
      env: { ...process.env, PORT: String(SIM_PORT), SIM_REPLY_TOKENS: '16' },
      stdio: ['ignore', 'ignore', 'inherit'],
    }),
    spawn(
      process.execPath,
      [join(root, 'node_modules/@portkey-ai/gateway/build/start-server.js'), `--port=${PORTKEY_PORT}`, '--headless'],
      {
        env: { ...process.env, NODE_ENV: 'production' },
        stdio: ['ignore', 'ignore', 'ignore'],
      },
    ),
    spawn(process.execPath, [join(root, 'bench/floor-proxy.mjs')], {
      env: { ...process.env, PORT: String(FLOOR_PORT), UPSTREAM: sim },
      stdio: ['ignore', 'ignore', 'inherit'],
    }),
    // BENCH_FASTIFY_FLAGS: node flags for the Fastify floor (e.g. a CPU profile to hold against the API's).
    spawn(
      process.execPath,
      [...(process.env.BENCH_FASTIFY_FLAGS ?? '').split(' ').filter(Boolean), join(root, 'bench/floor-fastify.mjs')],
      {
        env: { ...process.env, PORT: String(FASTIFY_FLOOR_PORT), UPSTREAM: sim },
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    ),
  ]
  Object.assign(pids, { direct: procs[0].pid, portkey: procs[1].pid, floor: procs[2].pid, fastify: procs[3].pid })
  pin(process.pid, 0)
  pin(procs[0].pid, 0)
  pin(procs[1].pid, 1)
  pin(procs[2].pid, 1)
  pin(procs[3].pid, 1)
  await waitHttp(`${sim}/health`)
  for (let i = 0; i < 200; i++) {
    try {
      await fetch(`http://127.0.0.1:${PORTKEY_PORT}/`)
      break
    } catch {
      await new Promise((r) => setTimeout(r, 50))
    }
  }
  return async () => {
    for (const p of procs) p.kill('SIGTERM')
    await Promise.all(procs.map((p) => new Promise((r) => (p.exitCode !== null ? r() : p.once('exit', r)))))
  }
}

/** The same Responses request, three ways: straight to the simulator, through Roster, through Portkey. */
function targets(base, key, model = 'bench/responses') {
  const body = (m) =>
    JSON.stringify({ model: m, input: 'benchmark prompt: say something short', max_output_tokens: 64 })
  return {
    direct: { origin: sim, path: '/v1/responses', headers: { 'content-type': 'application/json' }, body: body('sim') },
    floor: {
      origin: `http://127.0.0.1:${FLOOR_PORT}`,
      path: '/v1/responses',
      headers: { 'content-type': 'application/json' },
      body: body('sim'),
    },
    fastify: {
      origin: `http://127.0.0.1:${FASTIFY_FLOOR_PORT}`,
      path: '/v1/responses',
      headers: { 'content-type': 'application/json' },
      body: body('sim'),
    },
    roster: {
      origin: new URL(base).origin,
      path: '/api/v1/responses',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: body(model),
    },
    portkey: {
      origin: `http://127.0.0.1:${PORTKEY_PORT}`,
      path: '/v1/responses',
      headers: {
        'content-type': 'application/json',
        authorization: 'Bearer sim',
        'x-portkey-provider': 'openai',
        'x-portkey-custom-host': `${sim}/v1`,
      },
      body: body('sim'),
    },
  }
}

/**
 * The doors: one Chat Completions request (and its Messages form) to the same Chat Completions
 * upstream, straight to the simulator, through each of Roster's three doors, and through Portkey's
 * own /chat/completions.
 */
export function doorTargets(base, key) {
  const chat = (m) =>
    JSON.stringify({
      model: m,
      messages: [{ role: 'user', content: 'benchmark prompt: say something short' }],
      max_tokens: 64,
    })
  const roster = new URL(base).origin
  const ownMessages = JSON.stringify({
    model: 'bench/messages',
    max_tokens: 64,
    messages: [{ role: 'user', content: 'benchmark prompt: say something short' }],
  })
  const json = { 'content-type': 'application/json' }
  const auth = { ...json, authorization: `Bearer ${key}` }
  return {
    'direct-chat': { origin: sim, path: '/v1/chat/completions', headers: json, body: chat('sim') },
    // A bare Fastify proxy (no auth, validation or translation) in front of the same endpoint: what
    // this machine lets any Fastify gateway add, in the same run.
    'fastify-chat': {
      origin: `http://127.0.0.1:${FASTIFY_FLOOR_PORT}`,
      path: '/v1/chat/completions',
      headers: json,
      body: chat('sim'),
    },
    'roster-responses': {
      origin: roster,
      path: '/api/v1/responses',
      headers: auth,
      body: JSON.stringify({
        model: 'bench/chat',
        input: 'benchmark prompt: say something short',
        max_output_tokens: 64,
      }),
    },
    'roster-chat': { origin: roster, path: '/api/v1/chat/completions', headers: auth, body: chat('bench/chat') },
    'roster-messages': {
      origin: roster,
      path: '/api/v1/messages',
      headers: auth,
      body: JSON.stringify({
        model: 'bench/chat',
        max_tokens: 64,
        messages: [{ role: 'user', content: 'benchmark prompt: say something short' }],
      }),
    },
    // Pass-through (docs/gateway.md): /chat/completions to an openai-chat endpoint answers with the
    // provider's bytes; the same request translated, and /messages to an anthropic-messages endpoint
    // both ways, for the two paths' ratio in one run.
    'roster-chat-translated': {
      origin: roster,
      path: '/api/v1/chat/completions',
      headers: { ...auth, 'x-roster-pass-through': 'off' },
      body: chat('bench/chat'),
    },
    'roster-messages-own': {
      origin: roster,
      path: '/api/v1/messages',
      headers: auth,
      body: ownMessages,
    },
    'roster-messages-own-translated': {
      origin: roster,
      path: '/api/v1/messages',
      headers: { ...auth, 'x-roster-pass-through': 'off' },
      body: ownMessages,
    },
    'portkey-chat': {
      origin: `http://127.0.0.1:${PORTKEY_PORT}`,
      path: '/v1/chat/completions',
      headers: {
        ...json,
        authorization: 'Bearer sim',
        'x-portkey-provider': 'openai',
        'x-portkey-custom-host': `${sim}/v1`,
      },
      body: chat('sim'),
    },
  }
}
/** Roster's three doors, as doorTargets names them. */
const DOORS = ['roster-responses', 'roster-chat', 'roster-messages']

/** Which targets are Roster's API (their CPU is the API process's). */
export const isRoster = (name) => name === 'roster' || name.startsWith('roster-')

export const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]

/**
 * Open-loop load at a fixed rate with sub-millisecond timing (autocannon reports whole
 * milliseconds, too coarse for a gateway's added latency). Latency is measured from each
 * request's send to the end of its body.
 */
export async function fixedRate(t, rate, seconds, shared) {
  // A shared pool carries its warmed connections from a warm-up into the measured run.
  const pool = shared ?? new Pool(t.origin, { connections: 128, pipelining: 1 })
  const latencies = []
  // BENCH_DUMP: each request's send time (epoch ms) and latency, in order, to line a tail up with
  // the process's own events (GC, timers) afterwards.
  const timeline = process.env.BENCH_DUMP ? [] : undefined
  let errors = 0
  const total = rate * seconds
  const started = performance.now()
  const inflight = new Set()
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / rate
    const wait = due - performance.now()
    if (wait > 1) await new Promise((r) => setTimeout(r, wait))
    const t0 = performance.now()
    const p = pool
      // `t.keyed`: the same request from several keys in turn (each key's share of a loaded process).
      .request({ method: 'POST', path: t.path, headers: t.keyed?.[i % t.keyed.length] ?? t.headers, body: t.body })
      .then(async (res) => {
        const text = await res.body.text()
        if (res.statusCode !== 200) {
          errors++
          // BENCH_WHY: the first refusals' bodies, to tell a limit from a fault.
          if (process.env.BENCH_WHY && errors <= 3)
            process.stderr.write(`bench: ${res.statusCode} ${text.slice(0, 300)}\n`)
        } else {
          const ms = performance.now() - t0
          latencies.push(ms)
          timeline?.push([performance.timeOrigin + t0, ms])
        }
      })
      .catch(() => errors++)
      .finally(() => inflight.delete(p))
    inflight.add(p)
  }
  await Promise.all(inflight)
  const achieved = total / ((performance.now() - started) / 1000)
  if (!shared) await pool.close()
  return { ...percentiles(latencies), latencies, timeline, errors, achieved }
}

function percentiles(latencies) {
  latencies.sort((a, b) => a - b)
  return { p50: pct(latencies, 0.5), p90: pct(latencies, 0.9), p99: pct(latencies, 0.99) }
}

/** Non-streaming: latency at 1,000 req/s, then throughput with 64 connections, for each target. */
export async function benchGatewayLatency(ctx) {
  // BENCH_DOORS=0 leaves the doors' rows out (the /responses figures alone, when comparing builds).
  const doors = process.env.BENCH_DOORS === '0' ? [] : await benchGatewayDoors(ctx)
  return [...(await benchResponsesLatency(ctx)), ...doors]
}

async function benchResponsesLatency({ key, base, apiPid }) {
  const rate = Number(process.env.BENCH_RATE ?? 1000)
  const seconds = Number(process.env.BENCH_SECONDS ?? 10)
  // BENCH_TARGETS (e.g. "roster") measures only some of the five, to profile one alone.
  const wanted = (process.env.BENCH_TARGETS ?? 'direct,floor,fastify,roster,portkey').split(',')
  const all = Object.fromEntries(Object.entries(targets(base, key)).filter(([name]) => wanted.includes(name)))
  const { lat, cpu, stolen, thr, rounds } = await measureTargets(all, apiPid, rate, seconds)
  const f = (x) => x.toFixed(2)
  const rows = []
  for (const name of Object.keys(all)) {
    const l = lat[name]
    rows.push({
      scenario: `POST responses at ${rate}/s (${seconds} s in ${rounds} rounds): ${name}`,
      metric: 'p50 / p90 / p99 ms',
      value: `${f(l.p50)} / ${f(l.p90)} / ${f(l.p99)}`,
      target: l.errors ? `${l.errors} errors!` : `sent ${l.achieved.toFixed(0)}/s`,
    })
  }
  rows.push({
    scenario: `  CPU per request of the process behind each (${Object.keys(all).join(' / ')})`,
    metric: 'µs',
    value: Object.values(cpu)
      .map((c) => c.toFixed(0))
      .join(' / '),
    target: '',
  })
  rows.push({
    scenario: `  CPU time the host stole from this VM during each one's rounds`,
    metric: '%',
    value: Object.values(stolen).map(percentStolen).join(' / '),
    target: "figures above are the neighbours' when this is more than a few %",
  })
  // Round by round (each against direct's round just before it): a tail from one slow spell shows as one round.
  if (lat.roster && lat.direct) {
    const added = (k) => lat.roster.rounds.map((r, i) => f(r[k] - lat.direct.rounds[i][k])).join(', ')
    rows.push({
      scenario: '  added by roster, round by round',
      metric: 'p50 ms; p99 ms',
      value: `${added('p50')}; ${added('p99')}`,
      target: '',
    })
  }
  for (const name of ['floor', 'fastify', 'roster', 'portkey'].filter((n) => lat[n] && lat.direct)) {
    rows.push({
      scenario: `  added by ${name} over direct`,
      metric: 'p50 / p99 ms',
      value: `${f(lat[name].p50 - lat.direct.p50)} / ${f(lat[name].p99 - lat.direct.p99)}`,
      target: name === 'roster' ? 'p50 ≤ 0.5, p99 ≤ 2' : '',
    })
  }
  for (const name of Object.keys(thr)) {
    rows.push({
      scenario: `POST responses, 64 connections: ${name}`,
      metric: 'req/s (p99 ms)',
      value: `${thr[name].rps.toFixed(0)} (${thr[name].p99})`,
      target: thr[name].bad ? `${thr[name].bad} errors!` : '',
    })
  }
  if (thr.roster && thr.portkey)
    rows.push({
      scenario: '  Roster throughput / Portkey',
      metric: '×',
      value: (thr.roster.rps / thr.portkey.rps).toFixed(2),
      target: '≥ 2',
    })
  return rows
}

/**
 * Round r's order of the targets: each round starts one later, so no target always opens the rounds.
 * The order within a round stays: a target mostly follows the same one.
 */
export const rotated = (list, r) => [...list.slice(r % list.length), ...list.slice(0, r % list.length)]

/**
 * Latency at a fixed rate, round by round across the targets, and each one's CPU per request; then
 * throughput with 64 connections (BENCH_THROUGHPUT_SECONDS, 0: none).
 */
/** `thrSeconds`: each target's throughput run (0: none); BENCH_THROUGHPUT_SECONDS, else `seconds`. */
export async function measureTargets(
  all,
  apiPid,
  rate,
  seconds,
  thrSeconds = Number(process.env.BENCH_THROUGHPUT_SECONDS ?? seconds),
) {
  // The measured seconds are split into rounds that take the targets in turn (direct, floor, …,
  // direct, floor, …): this VM's slow spells then land on every target alike, so the difference
  // between two targets is not the difference between two moments. Each target is warmed at the
  // measured rate before its first round (JIT, connection pools grown to that concurrency) and
  // for a second before each later one; a round starts once the last one's leftovers drained.
  // The first warm-up is 10 s: on this 2-core VM the API's optimising compiler was still busy for
  // ~10 s of load (--trace-opt, optimisations per second of load: 160, 202, 112, 50, 28, 52, 48,
  // 30, 26, then 2–10), and after a 4 s warm-up the first round had the run's worst added p99 in
  // six runs of ten (bench/RESULTS.md).
  const rounds = Number(process.env.BENCH_ROUNDS ?? 5)
  const lat = Object.fromEntries(
    Object.keys(all).map((n) => [n, { latencies: [], errors: 0, sent: 0, ms: 0, rounds: [] }]),
  )
  const cpu = Object.fromEntries(Object.keys(all).map((n) => [n, 0]))
  const stolen = Object.fromEntries(Object.keys(all).map((n) => [n, { total: 0, steal: 0 }]))
  const pools = Object.fromEntries(
    Object.entries(all).map(([n, t]) => [n, new Pool(t.origin, { connections: 128, pipelining: 1 })]),
  )
  // Portkey cannot keep up with 1,000 req/s on two cores: its rounds saturate the machine and leave
  // a backlog for whatever comes next, so its rounds come after everyone else's. The others take
  // turns (rotated).
  const entries = Object.entries(all)
  const saturating = entries.filter(([name]) => name.startsWith('portkey'))
  const rest = entries.filter(([name]) => !name.startsWith('portkey'))
  const schedule = []
  for (let r = 0; r < rounds; r++) for (const e of rotated(rest, r)) schedule.push([r, e])
  for (let r = 0; r < rounds; r++) for (const e of saturating) schedule.push([r, e])
  for (const [r, [name, t]] of schedule) {
    await fixedRate(t, rate, r === 0 ? Number(process.env.BENCH_WARMUP_SECONDS ?? 10) : 1, pools[name])
    // The process behind the target: its CPU per request is the cost least disturbed by neighbours.
    const pid = t.pid ?? (isRoster(name) ? apiPid : pids[name.split('-')[0]])
    const before = cpuSeconds(pid)
    const machineBefore = machineTicks()
    const started = performance.now()
    const round = await fixedRate(t, rate, seconds / rounds, pools[name])
    cpu[name] += cpuSeconds(pid) - before
    addStolen(stolen[name], machineBefore, machineTicks())
    Object.assign(lat[name], {
      errors: lat[name].errors + round.errors,
      sent: lat[name].sent + (rate * seconds) / rounds,
      ms: lat[name].ms + performance.now() - started,
    })
    lat[name].latencies.push(...round.latencies)
    lat[name].rounds.push({ p50: round.p50, p99: round.p99 })
    if (round.timeline) (lat[name].timeline ??= []).push(...round.timeline)
    await new Promise((r) => setTimeout(r, 500))
  }
  await Promise.all(Object.values(pools).map((p) => p.close()))
  if (process.env.BENCH_DUMP)
    writeFileSync(
      process.env.BENCH_DUMP,
      JSON.stringify(Object.fromEntries(Object.entries(lat).map(([n, l]) => [n, l.timeline]))),
    )
  for (const name of Object.keys(all)) {
    Object.assign(lat[name], percentiles(lat[name].latencies), { achieved: lat[name].sent / (lat[name].ms / 1000) })
    cpu[name] = (cpu[name] / (rate * seconds)) * 1e6
  }
  const thr = {}
  // BENCH_THROUGHPUT_SECONDS=0 skips the throughput runs (latency alone, when comparing builds).
  for (const [name, t] of Object.entries(all).filter(() => thrSeconds > 0)) {
    const r = await autocannon({
      url: t.origin + t.path,
      method: 'POST',
      headers: t.headers,
      body: t.body,
      connections: 64,
      duration: thrSeconds,
    })
    thr[name] = { rps: r['2xx'] / r.duration, bad: r.non2xx + r.errors, p99: r.latency.p99 }
  }
  return { lat, cpu, stolen, thr, rounds }
}

/**
 * The other doors against the same Chat Completions upstream: each door's added latency at the
 * same rate, its CPU per request beside the /responses door's, and /chat/completions' throughput
 * beside Portkey's own.
 */
async function benchGatewayDoors({ key, base, apiPid }) {
  const rate = Number(process.env.BENCH_RATE ?? 1000)
  const seconds = Number(process.env.BENCH_SECONDS ?? 10)
  const all = doorTargets(base, key)
  const { lat, cpu, stolen, thr, rounds } = await measureTargets(all, apiPid, rate, seconds)
  const f = (x) => x.toFixed(2)
  const rows = []
  for (const name of Object.keys(all)) {
    const l = lat[name]
    rows.push({
      scenario: `doors, one Chat Completions upstream, at ${rate}/s (${seconds} s in ${rounds} rounds): ${name}`,
      metric: 'p50 / p90 / p99 ms',
      value: `${f(l.p50)} / ${f(l.p90)} / ${f(l.p99)}`,
      target: l.errors ? `${l.errors} errors!` : `sent ${l.achieved.toFixed(0)}/s`,
    })
  }
  rows.push({
    scenario: `  CPU per request (${Object.keys(all).join(' / ')})`,
    metric: 'µs',
    value: Object.values(cpu)
      .map((c) => c.toFixed(0))
      .join(' / '),
    target: '',
  })
  rows.push({
    scenario: "  CPU time the host stole from this VM during each one's rounds",
    metric: '%',
    value: Object.values(stolen).map(percentStolen).join(' / '),
    target: '',
  })
  // Round by round, each against direct-chat's round of the same number: a tail from one slow spell
  // of the VM shows as one round, where the whole run's p99 cannot tell it from a door's cost.
  for (const name of ['fastify-chat', ...DOORS]) {
    const added = (k) => lat[name].rounds.map((r, i) => f(r[k] - lat['direct-chat'].rounds[i][k])).join(', ')
    rows.push({
      scenario: `  added by ${name}, round by round`,
      metric: 'p50 ms; p99 ms',
      value: `${added('p50')}; ${added('p99')}`,
      target: '',
    })
  }
  for (const name of ['fastify-chat', ...DOORS, 'portkey-chat']) {
    rows.push({
      scenario: `  added by ${name} over direct-chat`,
      metric: 'p50 / p99 ms',
      value: `${f(lat[name].p50 - lat['direct-chat'].p50)} / ${f(lat[name].p99 - lat['direct-chat'].p99)}`,
      target: name.startsWith('roster')
        ? 'p50 ≤ 0.5, p99 ≤ 2'
        : name === 'fastify-chat'
          ? "this machine's floor: where it misses, the targets cannot be read here"
          : '',
    })
  }
  for (const name of ['roster-chat', 'roster-messages']) {
    rows.push({
      scenario: `  ${name} CPU per request / roster-responses`,
      metric: '×',
      value: (cpu[name] / cpu['roster-responses']).toFixed(2),
      target: '≤ 1.10',
    })
  }
  for (const name of Object.keys(thr)) {
    rows.push({
      scenario: `doors, 64 connections: ${name}`,
      metric: 'req/s (p99 ms)',
      value: `${thr[name].rps.toFixed(0)} (${thr[name].p99})`,
      target: thr[name].bad ? `${thr[name].bad} errors!` : '',
    })
  }
  if (thr['roster-chat'] && thr['portkey-chat'])
    rows.push({
      scenario: '  /chat/completions throughput: Roster / Portkey',
      metric: '×',
      value: (thr['roster-chat'].rps / thr['portkey-chat'].rps).toFixed(2),
      target: '',
    })
  return rows
}

/** Streaming: time to the first byte and to the first text token, one request at a time. */
export async function benchGatewayTtfb({ key, base }) {
  const runs = Number(process.env.BENCH_TTFB_RUNS ?? 300)
  const all = { ...targets(base, key), ...doorTargets(base, key) }
  // Where each wire's first text shows: a Responses text delta, a Chat Completions content delta
  // (the role chunk's content is empty), a Messages text delta.
  const firstText = (name, text) =>
    name.endsWith('chat')
      ? /"content":"[^"]/.test(text)
      : name === 'roster-messages'
        ? text.includes('text_delta')
        : text.includes('output_text.delta')
  const measure = async (t, stream = true, n = runs, name = '') => {
    const pool = new Pool(t.origin, { connections: 1 })
    const first = []
    const token = []
    const body = JSON.stringify({ ...JSON.parse(t.body), stream })
    for (let i = 0; i < n + 20; i++) {
      const t0 = performance.now()
      const res = await pool.request({ method: 'POST', path: t.path, headers: t.headers, body })
      let seenFirst = 0
      let seenToken = 0
      let text = ''
      for await (const chunk of res.body) {
        const now = performance.now()
        if (!seenFirst) seenFirst = now
        text += chunk
        if (!seenToken && (!stream || firstText(name, text))) seenToken = now
      }
      if (res.statusCode !== 200 || !seenToken)
        throw new Error(`streaming failed: ${res.statusCode} ${text.slice(0, 200)}`)
      // The first 20 warm up.
      if (i >= 20) {
        first.push(seenFirst - t0)
        token.push(seenToken - t0)
      }
    }
    await pool.close()
    first.sort((a, b) => a - b)
    token.sort((a, b) => a - b)
    return { first: pct(first, 0.5), firstP99: pct(first, 0.99), token: pct(token, 0.5), tokenP99: pct(token, 0.99) }
  }
  // Interleaved rounds (direct, floor, roster, direct, …), so a slow spell of this shared machine
  // lands on every target alike instead of on whichever happened to run then.
  const rounds = Number(process.env.BENCH_TTFB_ROUNDS ?? 3)
  const names = [
    'direct',
    'floor',
    'roster',
    ...(process.env.BENCH_DOORS === '0' ? [] : ['direct-chat', 'roster-chat', 'roster-messages']),
  ]
  // Warm-up, unmeasured: each target's streaming and whole-reply paths are still being optimised for
  // the first thousand or so requests (without it the first round read Roster 0.18–0.35 ms slower
  // than the rest, in three runs of three), as in the latency benchmark's warm-up.
  const warmup = Number(process.env.BENCH_TTFB_WARMUP ?? 1000)
  if (warmup > 0) for (const n of names) for (const stream of [true, false]) await measure(all[n], stream, warmup, n)
  const machineBefore = machineTicks()
  const stream = Object.fromEntries(names.map((n) => [n, []]))
  const whole = Object.fromEntries(names.map((n) => [n, []]))
  for (let r = 0; r < rounds; r++) {
    for (const n of names) stream[n].push(await measure(all[n], true, runs, n))
    for (const n of names) whole[n].push(await measure(all[n], false, runs, n))
  }
  const stolen = addStolen({ total: 0, steal: 0 }, machineBefore, machineTicks())
  // Each figure is the median over the rounds of each round's median.
  const mid = (xs, k) => xs.map((x) => x[k]).sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  const f = (x) => x.toFixed(2)
  return [
    {
      scenario: `not streamed, whole reply (${runs} sequential × ${rounds}): ${names.join(' / ')}`,
      metric: 'p50 ms',
      value: names.map((n) => f(mid(whole[n], 'first'))).join(' / '),
      target: '',
    },
    {
      scenario: '  added by floor / roster, unloaded',
      metric: 'p50 ms',
      value: `${f(mid(whole.floor, 'first') - mid(whole.direct, 'first'))} / ${f(mid(whole.roster, 'first') - mid(whole.direct, 'first'))}`,
      target: '',
    },
    {
      scenario: `stream, first byte: ${names.join(' / ')}`,
      metric: 'p50 ms',
      value: names.map((n) => f(mid(stream[n], 'first'))).join(' / '),
      target: '',
    },
    {
      scenario: '  the same',
      metric: 'p99 ms',
      value: names.map((n) => f(mid(stream[n], 'firstP99'))).join(' / '),
      target: '',
    },
    {
      scenario: '  added by floor / roster',
      metric: 'p50 ms',
      value: `${f(mid(stream.floor, 'first') - mid(stream.direct, 'first'))} / ${f(mid(stream.roster, 'first') - mid(stream.direct, 'first'))}`,
      target: 'roster ≤ 1',
    },
    {
      scenario: `stream, first text delta: ${names.join(' / ')}`,
      metric: 'p50 ms',
      value: names.map((n) => f(mid(stream[n], 'token'))).join(' / '),
      target: '',
    },
    {
      scenario: '  added by floor / roster',
      metric: 'p50 ms',
      value: `${f(mid(stream.floor, 'token') - mid(stream.direct, 'token'))} / ${f(mid(stream.roster, 'token') - mid(stream.direct, 'token'))}`,
      target: 'roster ≤ 1',
    },
    {
      scenario: '  rounds of roster, added first text delta',
      metric: 'p50 ms',
      value: stream.roster.map((x, i) => f(x.token - stream.direct[i].token)).join(', '),
      target: '',
    },
    ...(stream['roster-chat']
      ? ['roster-chat', 'roster-messages'].flatMap((door) => [
          {
            scenario: `${door} stream over direct-chat's: first byte added`,
            metric: 'p50 ms',
            value: f(mid(stream[door], 'first') - mid(stream['direct-chat'], 'first')),
            target: '≤ 1',
          },
          {
            scenario: `  first text delta added`,
            metric: 'p50 ms',
            value: f(mid(stream[door], 'token') - mid(stream['direct-chat'], 'token')),
            target: '≤ 1',
          },
        ])
      : []),
    {
      scenario: 'CPU time the host stole from this VM meanwhile',
      metric: '%',
      value: percentStolen(stolen),
      target: '',
    },
  ]
}

const rssOf = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024

/** Memory soak: steady load on /responses for BENCH_SOAK_SECONDS (600), the API's RSS sampled. */
export async function benchGatewaySoak({ key, base, apiPid }) {
  const seconds = Number(process.env.BENCH_SOAK_SECONDS ?? 600)
  const rate = Number(process.env.BENCH_SOAK_RATE ?? 500)
  // BENCH_SOAK_STREAM=1 soaks the streaming path instead (each stream read to its end).
  const stream = process.env.BENCH_SOAK_STREAM === '1'
  const plain = targets(base, key).roster
  const t = stream ? { ...plain, body: JSON.stringify({ ...JSON.parse(plain.body), stream: true }) } : plain
  const samples = []
  const timer = setInterval(() => samples.push({ at: performance.now(), mb: rssOf(apiPid) }), 5000)
  const started = performance.now()
  const result = await fixedRate(t, rate, seconds)
  clearInterval(timer)
  const minute = 60_000
  const window = (from, to) => samples.filter((s) => s.at - started >= from && s.at - started < to).map((s) => s.mb)
  const avg = (xs) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length)
  // The first minute warms up (JIT, pools); compare the second minute with the last.
  const early = avg(window(minute, 2 * minute))
  const late = avg(window(seconds * 1000 - minute, Infinity))
  return [
    {
      scenario: `soak: POST responses${stream ? ' (streamed)' : ''} at ${rate}/s for ${seconds} s`,
      metric: 'p50 / p99 ms, errors',
      value: `${result.p50.toFixed(2)} / ${result.p99.toFixed(2)}, ${result.errors}`,
      target: '',
    },
    {
      scenario: '  api RSS, minute 2 → last minute',
      metric: 'MiB',
      value: `${early.toFixed(1)} → ${late.toFixed(1)} (${(((late - early) / early) * 100).toFixed(1)}%)`,
      target: '±5%',
    },
  ]
}

/**
 * `doors-instructions`: the API runs under valgrind's callgrind, which counts the instructions a
 * process executes (all its threads), not seconds: the same work counts the same whatever else the
 * machine is doing, where CPU seconds on these VMs move ±20 % between rounds of one target. Each
 * door's rounds are counted alone (a dump before and after: callgrind answers the counts since the
 * last dump); the API is warmed first with instrumentation off (valgrind still runs it, 5–10×
 * slower, but its JIT gets to the same optimised code). V8's memory reducer is off: it starts full
 * collections when the allocation rate per second of wall-clock time is low, and valgrind slows the
 * API so much that it looked idle: rounds with a full collection read 1.2–2× the others, where at
 * 1,000 req/s natively the API ran one in 30 s (--trace-gc).
 */
export const callgrind = {
  dir: '',
  nodeFlags: ['--no-memory-reducer'],
  wrap() {
    if (spawnSync('valgrind', ['--version']).error)
      throw new Error('doors-instructions needs valgrind (Debian: apt-get install valgrind)')
    callgrind.dir = mkdtempSync(join(tmpdir(), 'roster-callgrind-'))
    return ['valgrind', '--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${callgrind.dir}/api.%p`]
  },
}

/** callgrind_control <args> <pid> (-d: dump the counts since the last dump, and zero them). */
function callgrindControl(pid, ...args) {
  const r = spawnSync('callgrind_control', [...args, String(pid)], { encoding: 'utf8' })
  if (r.status !== 0 || !/OK/.test(r.stdout))
    throw new Error(`callgrind_control ${args.join(' ')}: ${r.stdout}${r.stderr}`)
}
/** The instructions in the newest dump: the one with the highest number in callgrind.dir. */
function lastDumpTotal(pid) {
  const dumps = readdirSync(callgrind.dir)
    .filter((f) => f.startsWith(`api.${pid}.`))
    .sort((a, b) => Number(a.split('.').pop()) - Number(b.split('.').pop()))
  const text = readFileSync(join(callgrind.dir, dumps.at(-1)), 'utf8')
  const total = /^(?:totals|summary): (\d+)/m.exec(text)
  if (!total) throw new Error(`no total in ${dumps.at(-1)}`)
  return Number(total[1])
}

/** n requests to a target over `connections` concurrent loops; any answer but 200 fails the run. */
async function closedLoop(pool, t, n, connections = 4) {
  let next = 0
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (next++ < n) {
        const res = await pool.request({ method: 'POST', path: t.path, headers: t.headers, body: t.body })
        const text = await res.body.text()
        if (res.statusCode !== 200) throw new Error(`${t.path} answered ${res.statusCode}: ${text.slice(0, 300)}`)
      }
    }),
  )
}

export async function benchDoorInstructions({ key, base, apiPid }) {
  const warmup = Number(process.env.BENCH_CG_WARMUP ?? 10000)
  const n = Number(process.env.BENCH_CG_REQUESTS ?? 1000)
  const rounds = Number(process.env.BENCH_CG_ROUNDS ?? 9)
  const all = doorTargets(base, key)
  const pool = new Pool(new URL(base).origin, { connections: 4 })
  try {
    // Warmed in turns, so no door's code is tiered up while another's is measured.
    for (let i = 0; i < 10; i++) for (const d of DOORS) await closedLoop(pool, all[d], warmup / 10)
    callgrindControl(apiPid, '-i', 'on')
    await closedLoop(pool, all[DOORS[0]], n / 10) // code translated anew with instrumentation: not counted
    const counts = Object.fromEntries(DOORS.map((d) => [d, []]))
    for (let r = 0; r < rounds; r++) {
      for (const d of rotated(DOORS, r)) {
        callgrindControl(apiPid, '-d')
        await closedLoop(pool, all[d], n)
        callgrindControl(apiPid, '-d')
        counts[d].push(lastDumpTotal(apiPid) / n)
      }
    }
    const k = (x) => (x / 1000).toFixed(0)
    // The median of a door's rounds: a round that caught the JIT still compiling or a full
    // collection (both seen in the first rounds after warm-up) reads 10–20 % more, on any door.
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
    const rows = DOORS.map((d) => ({
      scenario: `instructions per request in the API (callgrind; ${rounds} rounds of ${n}, 4 connections): ${d}`,
      metric: 'thousands: median (rounds)',
      value: `${k(median(counts[d]))} (${counts[d].map(k).join(', ')})`,
      target: '',
    }))
    for (const d of DOORS.slice(1)) {
      rows.push({
        scenario: `  ${d} / roster-responses, medians`,
        metric: '×',
        value: (median(counts[d]) / median(counts['roster-responses'])).toFixed(3),
        target: '≤ 1.10',
      })
    }
    return rows
  } finally {
    await pool.close()
  }
}

/**
 * Governance's cost (`npm run bench -- governance`): the same /chat/completions request through
 * Roster, from a key under no policy and from a key in a workspace with a monthly budget, a default
 * guardrail (an allow-list, an e-mail redaction, a weekly limit per key and member) and a guardrail
 * of its own (a daily limit), in alternating rounds of one run: each one's
 * CPU per request of the API process, and their ratio.
 */
export async function benchGovernance({ key, managementKey, base, apiPid }) {
  const rate = Number(process.env.BENCH_RATE ?? 1000)
  const seconds = Number(process.env.BENCH_SECONDS ?? 10)
  const [governed] = await governedKeys({ key, managementKey, base })
  const plain = doorTargets(base, key)['roster-chat']
  const all = {
    'roster-chat': plain,
    'roster-chat-governed': { ...plain, headers: { ...plain.headers, authorization: `Bearer ${governed}` } },
  }
  const { lat, cpu, stolen, rounds } = await measureTargets(all, apiPid, rate, seconds)
  const f = (x) => x.toFixed(2)
  return [
    ...Object.keys(all).map((name) => ({
      scenario: `governance, /chat/completions at ${rate}/s (${seconds} s in ${rounds} rounds): ${name}`,
      metric: 'p50 / p99 ms; CPU µs/request',
      value: `${f(lat[name].p50)} / ${f(lat[name].p99)}; ${cpu[name].toFixed(0)}`,
      target: lat[name].errors ? `${lat[name].errors} errors!` : `stolen ${percentStolen(stolen[name])} %`,
    })),
    {
      scenario: '  CPU per request: governed / plain',
      metric: '×',
      value: (cpu['roster-chat-governed'] / cpu['roster-chat']).toFixed(2),
      target: '≤ 1.05',
    },
  ]
}

/** `count` keys under no policy (the account's default workspace, no limit). */
export async function plainKeys({ managementKey, base }, count = 1) {
  const keys = []
  for (let i = 0; i < count; i++) {
    const res = await fetch(`${base}/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${managementKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `plain ${i + 1}` }),
    })
    const made = await res.json()
    if (res.status >= 300) throw new Error(`POST /keys: ${res.status} ${JSON.stringify(made)}`)
    keys.push(made.key)
  }
  return keys
}

/**
 * A key under every policy there is, made through the API: a workspace with a monthly budget, whose
 * default guardrail has an allow-list, an e-mail redaction and a weekly limit per key and per
 * member; a guardrail of the keys' own with a daily limit; and a limit on each key itself. Answers
 * `count` such keys. `key` is a plain key of the account (its creator becomes the workspace's member).
 */
export async function governedKeys({ key, managementKey, base }, count = 1) {
  const call = async (method, path, body) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${managementKey}`, 'content-type': 'application/json' },
      body: body && JSON.stringify(body),
    })
    const text = await res.text()
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`)
    return JSON.parse(text)
  }
  const me = await (await fetch(`${base}/key`, { headers: { authorization: `Bearer ${key}` } })).json()
  const userId = me.data.creator_user_id
  const ws = (await call('POST', '/workspaces', { name: 'Governed', slug: 'governed' })).data
  await call('POST', '/workspaces/governed/members/add', { user_ids: [userId] })
  await call('PUT', '/workspaces/governed/budgets/monthly', { limit_usd: 1_000_000 })
  await call('PATCH', `/guardrails/${ws.default_guardrail_id}`, {
    allowed_models: ['bench/chat', 'bench/messages'],
    content_filter_builtins: [{ slug: 'email', action: 'redact' }],
    limit_usd: 500_000,
    reset_interval: 'weekly',
  })
  const own = await call('POST', '/guardrails', {
    name: 'own',
    workspace_id: ws.id,
    limit_usd: 100_000,
    reset_interval: 'daily',
  })
  const keys = []
  for (let i = 0; i < count; i++) {
    const governed = await call('POST', '/keys', {
      name: `governed ${i + 1}`,
      workspace_id: ws.id,
      creator_user_id: userId,
      limit: 1_000_000,
      limit_reset: 'monthly',
    })
    keys.push(governed)
  }
  await call('POST', `/guardrails/${own.data.id}/assignments/keys`, { key_hashes: keys.map((k) => k.data.hash) })
  return keys.map((k) => k.key)
}
