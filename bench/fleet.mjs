// The fleet of runtime hosts: what placement costs provisioning, how long a host's death takes to
// heal, how fast workspaces are snapshotted and restored per store, and chat's first chunk against
// the build before the fleet. Each scenario runs its own stacks (run.mjs's withStack).
//
//   npm run bench -- fleet-provision   BENCH_INTERNS (2,000) interns, create → running, one host vs three
//   npm run bench -- failover          BENCH_FAILOVER_INTERNS (1,000) interns on a host killed with SIGKILL
//   npm run bench -- snapshots         a BENCH_SNAPSHOT_MB (64 MiB) workspace, per store (postgres, s3 via s3rver)
//   npm run bench -- fleet-chat        chat's first text chunk, this build vs BENCH_BEFORE_ROOT (a checkout of
//                                      the build before the fleet, built), alternating, BENCH_CHAT_RUNS turns each
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { createServer } from 'node:net'
import pg from 'pg'
import { firstText } from './first-text.mjs'

const pct = (xs, p) => {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const freePort = () =>
  new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })

/** Provisioning throughput with one runtime host and with three: the cost of placement. */
export async function benchFleetProvision({ withStack, createInterns, countRunning }) {
  const n = Number(process.env.BENCH_INTERNS ?? 2000)
  const rates = {}
  // Alternated, each on a fresh stack, twice: the machine's drift shows as the spread between runs.
  for (const runtimes of [1, 3, 1, 3]) {
    const rate = await withStack(
      async ({ key, db }) => {
        const prefix = `f${runtimes}${randomBytes(2).toString('hex')}`
        const client = new pg.Client({ connectionString: db })
        await client.connect()
        const started = performance.now()
        await createInterns(key, prefix, n)
        while ((await countRunning(client, prefix)) < n) await sleep(20)
        const seconds = (performance.now() - started) / 1000
        const { rows } = await client.query(
          `SELECT runtime_host_id AS host, count(*)::int AS n FROM interns WHERE name LIKE $1 GROUP BY 1 ORDER BY 1`,
          [`${prefix}%`],
        )
        await client.end()
        process.stderr.write(
          `  ${runtimes} host(s): ${(n / seconds).toFixed(0)} interns/s; placed ${rows.map((r) => `${r.host} ${r.n}`).join(', ')}\n`,
        )
        return n / seconds
      },
      { worker: true, runtimes },
    )
    ;(rates[runtimes] ??= []).push(rate)
  }
  const best = (xs) => Math.max(...xs)
  return [
    {
      scenario: `${n} interns, create → running, one worker, one runtime host (best of 2)`,
      metric: 'interns/s',
      value: best(rates[1]).toFixed(0),
      target: '',
    },
    {
      scenario: `${n} interns, create → running, one worker, three runtime hosts (best of 2)`,
      metric: 'interns/s',
      value: best(rates[3]).toFixed(0),
      target: '',
    },
    {
      scenario: '  placement over three hosts: three / one',
      metric: 'ratio',
      value: (best(rates[3]) / best(rates[1])).toFixed(3),
      target: '≥ 0.95',
    },
  ]
}

/** A host with BENCH_FAILOVER_INTERNS interns killed with SIGKILL: each intern's time to run again on the other host. */
export async function benchFailover({ withStack, createInterns, countRunning }) {
  const n = Number(process.env.BENCH_FAILOVER_INTERNS ?? 1000)
  return withStack(
    async ({ key, db, hosts, addHost }) => {
      const prefix = `x${randomBytes(2).toString('hex')}`
      const client = new pg.Client({ connectionString: db })
      await client.connect()
      await createInterns(key, prefix, n)
      while ((await countRunning(client, prefix)) < n) await sleep(50)
      const victim = hosts[0]
      const survivor = await addHost(1)
      const killedAt = performance.now()
      victim.child.kill('SIGKILL')
      let declaredAt
      const back = new Map()
      for (;;) {
        if (declaredAt === undefined) {
          const { rows } = await client.query(`SELECT state FROM runtime_hosts WHERE id = $1`, [victim.id])
          if (rows[0]?.state === 'dead') declaredAt = performance.now()
        }
        const { rows } = await client.query(
          `SELECT id FROM interns WHERE name LIKE $1 AND status = 'running' AND runtime_host_id = $2`,
          [`${prefix}%`, survivor.id],
        )
        const now = performance.now()
        for (const { id } of rows) if (!back.has(id)) back.set(id, now)
        if (back.size === n) break
        if (now - killedAt > 600_000) throw new Error(`only ${back.size} of ${n} interns ran again within 10 minutes`)
        await sleep(50)
      }
      await client.end()
      const sinceDeath = [...back.values()].map((t) => (t - declaredAt) / 1000)
      const sinceKill = [...back.values()].map((t) => (t - killedAt) / 1000)
      return [
        {
          scenario: `${n} interns on a runtime host killed (SIGKILL): declared dead after`,
          metric: 's',
          value: ((declaredAt - killedAt) / 1000).toFixed(2),
          target: 'FLEET_DEAD_AFTER_MS (15 s) + a reconcile (≤ 5 s)',
        },
        {
          scenario: '  each intern running on the other host, after its host was declared dead',
          metric: 'p50 / p99 / max s',
          value: `${pct(sinceDeath, 0.5).toFixed(2)} / ${pct(sinceDeath, 0.99).toFixed(2)} / ${Math.max(...sinceDeath).toFixed(2)}`,
          target: 'every one ≤ 30',
        },
        {
          scenario: '  the same, after the kill',
          metric: 'p50 / p99 s',
          value: `${pct(sinceKill, 0.5).toFixed(2)} / ${pct(sinceKill, 0.99).toFixed(2)}`,
          target: '',
        },
      ]
    },
    { worker: true, runtimes: 1 },
  )
}

/** A workspace of `mb` MiB: half source-like text, half random bytes (a build's output), in files of 256 KiB. */
function makeWorkspace(dir, mb) {
  const file = 256 * 1024
  const text = Buffer.from(
    'export function add(a: number, b: number): number {\n  return a + b // the sum\n}\n'.repeat(Math.ceil(file / 80)),
  ).subarray(0, file)
  for (let i = 0; i < (mb * 1024 * 1024) / file; i++) {
    const sub = join(dir, `dir-${i % 16}`)
    mkdirSync(sub, { recursive: true })
    writeFileSync(join(sub, `f-${i}.${i % 2 ? 'bin' : 'ts'}`), i % 2 ? randomBytes(file) : text)
  }
}

/** Snapshot (tar in the sandbox) and restore rates, and the API's store put and get per store. */
export async function benchSnapshots({ withStack, root }) {
  const mb = Number(process.env.BENCH_SNAPSHOT_MB ?? 64)
  const rounds = 3
  const { runSandboxed, sandboxUnavailable } = await import('../apps/runtime/dist/sandbox.js')
  const { takeSnapshot, restoreSnapshot } = await import('../apps/runtime/dist/workspace-snapshots.js')
  const why = sandboxUnavailable()
  if (why) return [{ scenario: 'workspace snapshots', metric: '', value: `not measured: ${why}`, target: '' }]
  const workspace = mkdtempSync(join(tmpdir(), 'roster-bench-snap-'))
  makeWorkspace(workspace, mb)
  const takes = []
  let bytes
  for (let i = 0; i < rounds; i++) {
    const t0 = performance.now()
    bytes = await takeSnapshot(runSandboxed, workspace, 4096 * 1024 * 1024)
    takes.push(performance.now() - t0)
  }
  const restores = []
  for (let i = 0; i < rounds; i++) {
    const into = mkdtempSync(join(tmpdir(), 'roster-bench-restore-'))
    const t0 = performance.now()
    await restoreSnapshot(runSandboxed, into, bytes)
    restores.push(performance.now() - t0)
  }
  const compressed = bytes.length / 1024 / 1024
  const rate = (megabytes, ms) => (megabytes / (ms / 1000)).toFixed(1)
  const rows = [
    {
      scenario: `a ${mb} MiB workspace (half text, half random) → ${compressed.toFixed(1)} MiB snapshot: tar + gzip in the sandbox (best of ${rounds})`,
      metric: 'MiB/s (workspace)',
      value: rate(mb, Math.min(...takes)),
      target: '',
    },
    {
      scenario: `  restore: gunzip + untar in the sandbox (best of ${rounds})`,
      metric: 'MiB/s (workspace)',
      value: rate(mb, Math.min(...restores)),
      target: '',
    },
  ]

  // The store, through the API's fleet door as the intern's host calls it.
  const s3dir = mkdtempSync(join(tmpdir(), 'roster-bench-s3-'))
  const s3port = await freePort()
  const s3 = spawn(
    process.execPath,
    [
      join(root, 'node_modules/s3rver/bin/s3rver.js'),
      '-d',
      s3dir,
      '-a',
      '127.0.0.1',
      '-p',
      String(s3port),
      '-s',
      '--configure-bucket',
      'snapshots',
    ],
    { stdio: 'ignore' },
  )
  try {
    for (const [store, env] of [
      ['postgres', { SNAPSHOT_STORE: 'postgres', SNAPSHOT_MAX_MB: '1024' }],
      [
        's3 (s3rver on the loopback)',
        {
          SNAPSHOT_STORE: 's3',
          SNAPSHOT_MAX_MB: '1024',
          SNAPSHOT_S3_BUCKET: 'snapshots',
          SNAPSHOT_S3_ENDPOINT: `http://127.0.0.1:${s3port}`,
          SNAPSHOT_S3_FORCE_PATH_STYLE: 'true',
          SNAPSHOT_S3_ACCESS_KEY_ID: 'S3RVER',
          SNAPSHOT_S3_SECRET_ACCESS_KEY: 'S3RVER',
        },
      ],
    ]) {
      const [put, get] = await withStack(
        async ({ key, db, base, hostAuth }) => {
          const intern = await (
            await fetch(`${base}/interns`, {
              method: 'POST',
              headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
              body: JSON.stringify({ name: 'snap', provision: true }),
            })
          ).json()
          const client = new pg.Client({ connectionString: db })
          await client.connect()
          let placed
          for (let i = 0; !placed; i++) {
            const { rows } = await client.query(
              `SELECT runtime_host_id AS host, placement_generation AS generation FROM interns WHERE id = $1 AND status = 'running'`,
              [intern.id],
            )
            placed = rows[0]
            if (i > 400) throw new Error('the intern did not run')
            await sleep(25)
          }
          await client.end()
          const auth = { ...(await hostAuth(placed.host)), 'x-roster-host': placed.host }
          const url = `${base.replace('/api/v1', '')}/internal/v1/interns/${intern.id}/snapshot`
          const puts = []
          const gets = []
          for (let i = 0; i < rounds; i++) {
            let t0 = performance.now()
            const res = await fetch(url, {
              method: 'PUT',
              headers: {
                ...auth,
                'content-type': 'application/gzip',
                'x-roster-generation': String(placed.generation),
              },
              body: bytes,
            })
            if (res.status !== 200) throw new Error(`PUT snapshot answered ${res.status}: ${await res.text()}`)
            puts.push(performance.now() - t0)
            t0 = performance.now()
            const got = await fetch(`${url}?generation=${placed.generation}`, { headers: auth })
            const body = Buffer.from(await got.arrayBuffer())
            if (!body.equals(bytes)) throw new Error('the snapshot came back different')
            gets.push(performance.now() - t0)
          }
          return [Math.min(...puts), Math.min(...gets)]
        },
        { worker: true, env },
      )
      rows.push({
        scenario: `  ${store}: kept through the API (PUT, best of ${rounds})`,
        metric: 'MiB/s (snapshot)',
        value: rate(compressed, put),
        target: '',
      })
      rows.push({
        scenario: `  ${store}: read through the API (GET, best of ${rounds})`,
        metric: 'MiB/s (snapshot)',
        value: rate(compressed, get),
        target: '',
      })
    }
  } finally {
    s3.kill('SIGTERM')
  }
  return rows
}

/**
 * Chat's first text chunk through the API with this build and with the build before the fleet
 * (BENCH_BEFORE_ROOT, a checkout built with `npm run build`), alternating stacks so the machine's
 * drift falls on both alike.
 */
export async function benchFleetChat({ withStack, startBeforeStack }) {
  const before = process.env.BENCH_BEFORE_ROOT
  if (!before)
    return [
      {
        scenario: 'chat first chunk vs the build before the fleet',
        metric: '',
        value: 'not measured: set BENCH_BEFORE_ROOT to a built checkout of it',
        target: '',
      },
    ]
  const runs = Number(process.env.BENCH_CHAT_RUNS ?? 200)
  const prompt = '[sim] say hello there from the bench'
  const measure = async ({ key, base }) => {
    const h = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
    const intern = await (
      await fetch(`${base}/interns`, {
        method: 'POST',
        headers: h,
        body: JSON.stringify({ name: 'bench-chat', provision: true }),
      })
    ).json()
    for (let i = 0; ; i++) {
      if ((await (await fetch(`${base}/interns/${intern.id}`, { headers: h })).json()).status === 'running') break
      if (i > 500) throw new Error('the intern did not run')
      await sleep(20)
    }
    const firsts = []
    for (let i = 0; i < runs + 20; i++) {
      const at = await firstText(
        `${base}/interns/${intern.id}/chat/completions`,
        {
          headers: h,
          body: JSON.stringify({ stream: true, session_id: `s-${i}`, messages: [{ role: 'user', content: prompt }] }),
        },
        (seen) => seen.includes('"content":"hello'),
      )
      if (i >= 20) firsts.push(at)
    }
    return firsts
  }
  const now = []
  const then = []
  for (let round = 0; round < 2; round++) {
    then.push(...(await startBeforeStack(before, measure)))
    now.push(...(await withStack(measure, { worker: true, gateway: true })))
  }
  return [
    {
      scenario: `chat turn, first text chunk, this build (typed protocol, fleet) (${now.length} turns over 2 stacks)`,
      metric: 'p50 / p99 ms',
      value: `${pct(now, 0.5).toFixed(2)} / ${pct(now, 0.99).toFixed(2)}`,
      target: '',
    },
    {
      scenario: `  the build before the fleet (${then.length} turns over 2 stacks, alternating)`,
      metric: 'p50 / p99 ms',
      value: `${pct(then, 0.5).toFixed(2)} / ${pct(then, 0.99).toFixed(2)}`,
      target: '',
    },
    {
      scenario: '  this build / before, p50',
      metric: 'ratio',
      value: (pct(now, 0.5) / pct(then, 0.5)).toFixed(3),
      target: '≤ 1 (no slower)',
    },
  ]
}
