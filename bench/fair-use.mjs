// Fair use (used by run.mjs as `npm run bench -- fair-use`): each attack of one key from the issue
// that asked for the limits, against one API process on its defaults, while another key makes
// quick /responses calls; that key's latency with the attack and without it in the same run (a
// ratio: the target is p99 ≤ 3× without), and the API's resident memory at its peak. Everything on
// the loopback; every attack bounded in count and time.
//
// Knobs: BENCH_FAIR_SECONDS (each measurement, default 6); BENCH_API_ROOT (another checkout, built: its
// API is measured instead, e.g. the build before, to compare in one session); BENCH_FAIR_ONLY_FLOODS=1
// (only the floods probed one call at a time, the first table).
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { Agent, Pool, request } from 'undici'
import { WebSocket } from 'ws'

const SECONDS = Number(process.env.BENCH_FAIR_SECONDS ?? 6)
const API_PORT = 3920
const SIM_PORT = 3921
const base = `http://127.0.0.1:${API_PORT}/api/v1`
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/**
 * One provider (one simulator, so one origin and one pool of connections), streaming slowly: the
 * long streams take 40 s; the other key's calls are not streamed, and answered at once.
 */
function catalogue() {
  const model = (id, port) => ({
    id,
    name: id,
    context_length: 100_000,
    pricing: { input: '0.000001', output: '0.000002' },
    endpoints: [
      {
        provider: 'upstream-sim',
        protocol: 'openai-chat',
        base_url: `http://127.0.0.1:${port}/v1`,
        upstream_model: 'sim',
        timeout_ms: 120_000,
      },
    ],
  })
  return { models: [model('bench/slow', SIM_PORT), model('bench/quick', SIM_PORT)] }
}

const rss = (pid) => Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024

/** The other key: quick calls one after another for `seconds`; its latencies (ms) and failures. */
async function victim(key, seconds) {
  const pool = new Pool(`http://127.0.0.1:${API_PORT}`, { connections: 4 })
  const latencies = []
  let failed = 0
  const end = performance.now() + seconds * 1000
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (performance.now() < end) {
        const started = performance.now()
        try {
          const res = await pool.request({
            path: '/api/v1/responses',
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body: '{"model":"bench/quick","input":"hi","max_output_tokens":4}',
          })
          await res.body.dump()
          if (res.statusCode === 200) latencies.push(performance.now() - started)
          else failed++
        } catch {
          failed++
        }
      }
    }),
  )
  await pool.close()
  latencies.sort((a, b) => a - b)
  const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN
  return { p50: at(0.5), p99: at(0.99), failed, ok: latencies.length }
}

/**
 * The other key as one client making one quick call at a time (no concurrency to average a stall
 * away): its latencies (ms) until `until()` says stop, at least `min` of them.
 */
async function probe(key, until, min = 200, port = API_PORT) {
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: 1 })
  // Roster's door, or the bare proxy's (the floor: the same call, straight to the simulator).
  const call =
    port === API_PORT
      ? { path: '/api/v1/responses', body: '{"model":"bench/quick","input":"hi","max_output_tokens":4}' }
      : { path: '/v1/chat/completions', body: BARE_BODY }
  const latencies = []
  let failed = 0
  while (latencies.length + failed < min || !until()) {
    const started = performance.now()
    try {
      const res = await pool.request({
        path: call.path,
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: call.body,
      })
      await res.body.dump()
      if (res.statusCode === 200) latencies.push(performance.now() - started)
      else failed++
    } catch {
      failed++
    }
    if (latencies.length + failed > 20_000) break
  }
  await pool.close()
  latencies.sort((a, b) => a - b)
  const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN
  return { p50: at(0.5), p99: at(0.99), max: latencies.at(-1) ?? NaN, failed, ok: latencies.length }
}

/**
 * The floods of the issue that found another key's stalls: 10,000 requests at 256 at a time from
 * one key, or with random unknown keys, from a process of their own at nice 19; the other key
 * probed one call at a time throughout, and alone before (the target: p99 and max ≤ 3× alone).
 */
const name0 = '10,000 calls at 256 at a time, one client'
const FLOODS = {
  '10,000 /responses at 256 at a time, one key': 'one-key',
  '10,000 requests with random unknown keys at 256 at a time': 'unknown-keys',
}

/** The floor's call: what the bare proxy passes to the simulator as it came. */
const BARE_BODY = '{"model":"sim","messages":[{"role":"user","content":"hi"}],"max_tokens":4}'
const FLOOR_PORT = 3922

async function flooded(root, mode, key, url = base) {
  const child = spawn(
    'nice',
    ['-n', '19', process.execPath, join(root, 'bench/fair-use-flood.mjs'), url, mode, key, '10000', '256'],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  )
  let out = ''
  child.stdout.on('data', (d) => (out += d))
  const done = new Promise((r) => child.once('exit', r))
  let ended = false
  done.then(() => (ended = true))
  return { ended: () => ended, statuses: async () => (await done, out) }
}

const ATTACKS = {
  '300 long streams on /responses': async (key, signal) => {
    const agent = new Agent({ connections: 400 })
    const streams = Array.from({ length: 300 }, () =>
      request(`${base}/responses`, {
        dispatcher: agent,
        method: 'POST',
        signal,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: '{"model":"bench/slow","input":"a long story","stream":true}',
      })
        .then(async (r) => {
          for await (const _ of r.body);
        })
        .catch(() => {}),
    )
    return async () => {
      await Promise.all(streams)
      await agent.close()
    }
  },
  // The attack queued 16 on each; 4 here keep the load generator's own memory in bounds (1.4 GB sent).
  '18 WebSockets, a slow request and 4 × 19 MiB waiting on each': async (key) => {
    const big = JSON.stringify({ type: 'response.create', model: 'bench/quick', input: 'x'.repeat(19 * 1024 * 1024) })
    const sockets = Array.from(
      { length: 18 },
      () =>
        new WebSocket(`ws://127.0.0.1:${API_PORT}/api/v1/responses`, {
          headers: { authorization: `Bearer ${key}` },
          maxPayload: 64 * 1024 * 1024,
        }),
    )
    for (const s of sockets) {
      s.on('error', () => {})
      s.on('open', () => {
        s.send(JSON.stringify({ type: 'response.create', model: 'bench/slow', input: 'slow' }))
        for (let i = 0; i < 4; i++) s.send(big)
      })
    }
    return async () => sockets.forEach((s) => s.terminate())
  },
  '100 POST /responses with Content-Length 1000 and 10 bytes sent': async (key) => {
    const sockets = Array.from({ length: 100 }, () => {
      const s = connect(API_PORT, '127.0.0.1', () =>
        s.write(
          `POST /api/v1/responses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"model":"`,
        ),
      )
      s.on('error', () => {})
      s.resume()
      return s
    })
    return async () => sockets.forEach((s) => s.destroy())
  },
  'silent TCP connections (up to 21,000), no key': async () => {
    const sockets = []
    // As many as this process may open, keeping 2,000 descriptors for its own work.
    const own = Number(/^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1] ?? 4096)
    for (let i = 0; i < Math.min(21_000, own - 2_000); i++) {
      try {
        const s = connect(API_PORT, '127.0.0.1')
        s.on('error', () => {})
        s.resume()
        sockets.push(s)
      } catch {
        break
      }
      if (i % 1000 === 999) await sleep(10)
    }
    return async () => sockets.forEach((s) => s.destroy())
  },
  '2,000 idle WebSockets, one key': async (key) => {
    const sockets = []
    for (let i = 0; i < 2_000; i++) {
      const s = new WebSocket(`ws://127.0.0.1:${API_PORT}/api/v1/responses`, {
        headers: { authorization: `Bearer ${key}` },
      })
      s.on('error', () => {})
      sockets.push(s)
      if (i % 100 === 99) await sleep(5)
    }
    return async () => sockets.forEach((s) => s.terminate())
  },
  '10,000 requests with random wrong keys': async (_key, signal) => {
    const agent = new Agent({ connections: 64 })
    let sent = 0
    const flood = Array.from({ length: 64 }, async () => {
      while (sent++ < 10_000 && !signal.aborted) {
        const res = await request(`${base}/models`, {
          dispatcher: agent,
          headers: { authorization: `Bearer sk-roster-v1-${randomBytes(24).toString('hex')}` },
        }).catch(() => undefined)
        await res?.body.dump()
      }
    })
    return async () => {
      await Promise.all(flood)
      await agent.close()
    }
  },
  '/responses at 256 concurrency, one key': async (key, signal) => {
    const agent = new Agent({ connections: 256 })
    const flood = Array.from({ length: 256 }, async () => {
      while (!signal.aborted) {
        const res = await request(`${base}/responses`, {
          dispatcher: agent,
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: '{"model":"bench/quick","input":"flood","max_output_tokens":4}',
        }).catch(() => undefined)
        await res?.body.dump()
      }
    })
    return async () => {
      await Promise.all(flood)
      await agent.close()
    }
  },
}

/**
 * For run.mjs: `ctx` gives the bench database and a key made there; `makeKey` another member's key.
 * Starts its own API (defaults, plus the two simulators' catalogue) and measures each attack.
 */
export async function benchFairUse({ db, key: attacker, makeKey, root, nodeFlags }) {
  const dir = mkdtempSync(join(tmpdir(), 'roster-fair-'))
  const file = join(dir, 'catalogue.json')
  writeFileSync(file, JSON.stringify(catalogue()))
  const sims = [
    spawn(process.execPath, [join(root, 'packages/upstream-sim/dist/main.js')], {
      env: { ...process.env, PORT: String(SIM_PORT), SIM_TOKENS_PER_SECOND: '5', SIM_REPLY_TOKENS: '200' },
      stdio: 'ignore',
    }),
    spawn(process.execPath, [join(root, 'bench/floor-proxy.mjs')], {
      env: { ...process.env, PORT: String(FLOOR_PORT), UPSTREAM: `http://127.0.0.1:${SIM_PORT}` },
      stdio: ['ignore', 'ignore', 'inherit'],
    }),
  ]
  const api = spawn(
    process.execPath,
    [...nodeFlags, join(process.env.BENCH_API_ROOT ?? root, 'apps/api/dist/main.js')],
    {
      env: {
        ...process.env,
        DATABASE_URL: db,
        PORT: String(API_PORT),
        MODEL_CATALOGUE: file,
        LOG_LEVEL: 'warn',
        VAULT_MASTER_KEY: '',
        QUEUE_PREFIX: `{fair-${randomBytes(3).toString('hex')}}`,
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  )
  const rows = []
  try {
    for (let i = 0; i < 200; i++) {
      if ((await fetch(`http://127.0.0.1:${API_PORT}/health`).catch(() => undefined))?.ok) break
      await sleep(50)
    }
    const other = makeKey()
    // Warm the path (keys cached, connections open), then the floor: the other key alone.
    await victim(other, 1)
    // The floor: the bare proxy beside Roster, flooded the same way (one client, 256 at a time), so
    // that what the machine does to a one-at-a-time caller (two cores, four busy processes) is
    // read apart from what Roster does.
    const floors = [
      [
        `${name0}: the bare proxy (the floor), one call at a time`,
        'bare',
        FLOOR_PORT,
        `http://127.0.0.1:${FLOOR_PORT}/v1`,
      ],
      ...Object.entries(FLOODS).map(([name, mode]) => [
        `${name}: the other key, one call at a time`,
        mode,
        API_PORT,
        base,
      ]),
    ]
    for (const [scenario, mode, port, url] of floors) {
      const alone = await probe(other, () => true, 400, port)
      const flood = await flooded(root, mode, attacker, url)
      await sleep(300)
      const loud = await probe(other, flood.ended, 100, port)
      const statuses = await flood.statuses()
      const ms = (r) => `${r.p50.toFixed(1)} / ${r.p99.toFixed(1)} / ${r.max.toFixed(1)}`
      rows.push(
        {
          scenario,
          metric: 'p50 / p99 / max ms alone → flooded',
          value: `${ms(alone)} → ${ms(loud)}`,
          target: mode === 'bare' ? 'the floor' : 'p99, max ≤ 3× alone',
        },
        {
          scenario: '  p99 and max flooded ÷ alone; failed calls; the flood got',
          metric: 'ratios; count; statuses',
          value: `${(loud.p99 / alone.p99).toFixed(2)}, ${(loud.max / alone.max).toFixed(2)}; ${loud.failed} of ${loud.ok + loud.failed}; ${statuses}`,
          target: mode === 'bare' ? '' : '≤ 3; 0',
        },
      )
      await sleep(2_000)
    }
    if (process.env.BENCH_FAIR_ONLY_FLOODS) return rows
    for (const [name, attack] of Object.entries(ATTACKS)) {
      const quiet = await victim(other, SECONDS)
      const before = rss(api.pid)
      let peak = before
      const sampler = setInterval(() => (peak = Math.max(peak, api.exitCode === null ? rss(api.pid) : peak)), 100)
      const stop = new AbortController()
      const end = await attack(attacker, stop.signal)
      await sleep(1_000)
      const loud = await victim(other, SECONDS)
      stop.abort()
      await end()
      clearInterval(sampler)
      const alive = api.exitCode === null
      rows.push(
        {
          scenario: `${name}: the other key`,
          metric: 'p50 / p99 ms quiet → attacked',
          value: `${quiet.p50.toFixed(1)} / ${quiet.p99.toFixed(1)} → ${loud.p50.toFixed(1)} / ${loud.p99.toFixed(1)}`,
          target: 'p99 ≤ 3× quiet',
        },
        {
          scenario: '  p99 attacked ÷ quiet; its failed calls',
          metric: 'ratio; count',
          value: `${(loud.p99 / quiet.p99).toFixed(2)}; ${loud.failed} of ${loud.ok + loud.failed}`,
          target: '≤ 3; 0',
        },
        {
          scenario: '  API resident memory, before → peak',
          metric: 'MiB',
          value: `${(before / 2 ** 20).toFixed(0)} → ${(peak / 2 ** 20).toFixed(0)}${alive ? '' : ' (API died)'}`,
          target: 'alive',
        },
      )
      if (!alive) {
        rows.push({
          scenario: '  (the API died: the attacks after this one were not run)',
          metric: '',
          value: '',
          target: '',
        })
        break
      }
      // Let the attack's leftovers (timeouts, closes) settle before the next.
      await sleep(3_000)
    }
  } finally {
    api.kill('SIGTERM')
    for (const s of sims) s.kill('SIGTERM')
    await new Promise((r) => (api.exitCode !== null ? r() : api.once('exit', r)))
  }
  return rows
}

/** A user key of another member in the bench database's first workspace (the CLI, offline). */
export function makeKeyWith(root, db) {
  return () => {
    const out = spawnSync(process.execPath, [join(root, 'apps/cli/dist/main.js'), 'bootstrap', '--json'], {
      env: { ...process.env, DATABASE_URL: db },
      encoding: 'utf8',
    })
    return JSON.parse(out.stdout).keys.user
  }
}
