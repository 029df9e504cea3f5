import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import { simulatorCatalogue } from '@roster/gateway'
import {
  apiClient,
  catalogueFile,
  filesUnder,
  lacking,
  processCommandLines,
  runtimeCredential,
  STACK_MASTER_KEY,
  startStack,
  waitFor,
  type Stack,
  useTestTenant,
} from '@roster/testing'
import { runAdminCaptured } from '@roster/cli'

// The fleet of runtime hosts, as real processes over real Postgres and Redis: placement across
// hosts, a host killed mid-turn (its interns run elsewhere with their sessions and files), a host
// paused past its deadline and resumed (it answers for none of its old interns), a drain under chat
// load, and what a host without the fleet's credential can do.
const env = useTestTenant()
let sim: Simulator
let catalogue: string
const many = { INTERN_LIMIT_PER_MEMBER: '100000' }
/** Quick deaths, for tests that wait for one. */
const quick = { FLEET_DEAD_AFTER_MS: '3000', FLEET_HEARTBEAT_MS: '300' }
const quickWorkers = { RECONCILE_INTERVAL_MS: '500', PROVISION_BACKOFF_MS: '200', WORKER_CONCURRENCY: '10' }

beforeAll(async () => {
  sim = await startSimulator({ replyTokens: 4 })
  catalogue = catalogueFile(simulatorCatalogue(sim.url))
})
afterAll(async () => {
  await sim?.close()
})

/**
 * A fleet on the file's database. Stopping it forgets its interns and hosts: the next test's workers
 * would otherwise find every earlier intern on a dead host and move them all onto the new fleet.
 */
async function fleetStack(
  runtimes: number,
  extra: {
    env?: Record<string, string>
    workerEnv?: Record<string, string>
    runtimeEnv?: Record<string, string>
    workers?: number
  } = {},
): Promise<Stack> {
  const stack = await startStack({
    databaseUrl: env.t.url,
    runtimes,
    workers: extra.workers ?? 1,
    env: { ...many, MODEL_CATALOGUE: catalogue, INTERN_DEFAULT_MODEL: 'roster-sim/chat', ...extra.env },
    workerEnv: { ...quickWorkers, ...extra.workerEnv },
    runtimeEnv: extra.runtimeEnv,
  })
  const stop = stack.stop.bind(stack)
  stack.stop = async () => {
    await stop()
    await env.t.db.$executeRaw`DELETE FROM interns`
    await env.t.db.$executeRaw`DELETE FROM runtime_hosts`
  }
  return stack
}

/** The admin CLI on the file's database, run in this process (its own test starts it as a process). */
const admin = (...args: string[]) => runAdminCaptured(args, { ...process.env, DATABASE_URL: env.t.url })

async function createMany(stack: Stack, prefix: string, n: number, parallel = 8): Promise<string[]> {
  const api = apiClient(stack.apiUrl, env.tenant.keys.user)
  const ids: string[] = []
  for (let i = 0; i < n; i += parallel) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(parallel, n - i) }, (_, j) =>
        api.createIntern({ name: `${prefix}-${i + j}`, provision: true }),
      ),
    )
    for (const res of batch) {
      expect(res.status).toBe(201)
      ids.push(res.body.id)
    }
  }
  return ids
}

const rows = (ids: string[]) =>
  env.t.db.$queryRaw<{ id: string; status: string; runtime_host_id: string | null; placement_generation: number }[]>`
    SELECT id::text, status::text, runtime_host_id, placement_generation FROM interns WHERE id = ANY(${ids}::uuid[])`
const allRunning = async (ids: string[]) => (await rows(ids)).every((r) => r.status === 'running')

interface Turn {
  status: number
  text: string
  session?: string
  error?: { code: number; message: string; metadata?: { reason?: string } }
  body: string
}

/** One chat turn through the API, read to its end. */
async function chat(stack: Stack, id: string, content: string, session?: string): Promise<Turn> {
  const res = await fetch(`${stack.apiUrl}/interns/${id}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' },
    body: JSON.stringify({ stream: true, session_id: session, messages: [{ role: 'user', content }] }),
  })
  const body = await res.text()
  if (res.status !== 200) return { status: res.status, text: '', body }
  const chunks = body
    .split('\n\n')
    .filter((e) => e.startsWith('data: {'))
    .map((e) => JSON.parse(e.slice(6)))
  return {
    status: 200,
    text: chunks.map((c) => c.choices?.[0]?.delta?.content ?? '').join(''),
    session: chunks.at(-1)?.session_id,
    error: chunks.find((c) => c.error)?.error,
    body,
  }
}

/** What each host runs now (its own word), by host id. */
/**
 * Requests waiting unread in a listener's sockets on `port`: established connections (accepted or
 * still in the accept queue) whose receive queue holds bytes, as `ss` (iproute2) reports them.
 */
function queuedRequests(port: string): number {
  const out = spawnSync('ss', ['-tnH', 'state', 'established', `( sport = :${port} )`], { encoding: 'utf8' })
  if (out.status !== 0) throw new Error(`ss (iproute2) failed: ${out.stderr || out.error?.message}`)
  return out.stdout.split('\n').filter((line) => Number(line.trim().split(/\s+/)[0]) > 0).length
}

async function hostedBy(stack: Stack, databaseUrl = env.t.url) {
  const out = new Map<string, { id: string; running: boolean; generation: number }[]>()
  for (const [i, host] of stack.runtimes.entries()) {
    if (!host.process.running) continue
    const res = await fetch(`${host.url}/v1/interns`, {
      headers: { authorization: `Bearer ${await runtimeCredential(databaseUrl, host.id)}` },
    })
    if (res.status === 200)
      out.set(host.id, ((await res.json()) as { data: { id: string; running: boolean; generation: number }[] }).data)
    else out.set(host.id, [])
    void i
  }
  return out
}

/** Each intern runs on exactly the host the record places it on, under its generation, and on no other. */
async function expectEachOnItsOwnHost(stack: Stack, ids: string[]) {
  const hosted = await hostedBy(stack)
  for (const row of await rows(ids)) {
    const where = [...hosted.entries()]
      .filter(([, list]) => list.some((h) => h.id === row.id && h.running))
      .map(([host]) => host)
    expect(where, `intern ${row.id}`).toEqual([row.runtime_host_id])
    expect(hosted.get(row.runtime_host_id!)!.find((h) => h.id === row.id)!.generation).toBe(row.placement_generation)
  }
}

describe('three runtime hosts and 300 interns', () => {
  it('places them within ±10 % of even, each chat reaches its own host, and `runtime list` shows the fleet', async () => {
    const stack = await fleetStack(3, { workers: 2 })
    try {
      const ids = await createMany(stack, 'spread', 300)
      await waitFor(() => allRunning(ids), { timeoutMs: 90_000, intervalMs: 250, what: 'all 300 running' })
      const placed = await rows(ids)
      const perHost = new Map<string, number>()
      for (const r of placed) perHost.set(r.runtime_host_id!, (perHost.get(r.runtime_host_id!) ?? 0) + 1)
      expect([...perHost.keys()].sort()).toEqual(stack.runtimes.map((r) => r.id).sort())
      for (const n of perHost.values()) expect(Math.abs(n - 100)).toBeLessThanOrEqual(10)
      await expectEachOnItsOwnHost(stack, ids)

      // Each intern's chat runs on its host: its session is kept there, and on no other host. Ten
      // interns of each host chat (a turn costs the suite far more than a placement; the routing of a
      // chat is the same for every intern of a host), eight at a time: one key's share of a loaded API
      // (KEY_CONCURRENCY_UNDER_LOAD).
      const talkers = stack.runtimes.flatMap((host) => placed.filter((r) => r.runtime_host_id === host.id).slice(0, 10))
      expect(talkers).toHaveLength(30)
      for (let i = 0; i < talkers.length; i += 8) {
        const batch = talkers.slice(i, i + 8)
        const turns = await Promise.all(batch.map((r) => chat(stack, r.id, `[sim] say hello from ${r.id}`)))
        for (const [j, turn] of turns.entries()) {
          expect(turn.status, turn.body.slice(0, 300)).toBe(200)
          expect(turn.text, turn.body.slice(-600)).toBe(`hello from ${batch[j]!.id}`)
        }
      }
      for (const r of placed) {
        for (const host of stack.runtimes) {
          expect(existsSync(join(host.dataDir, 'interns', r.id, 'sessions')), `${r.id} on ${host.id}`).toBe(
            host.id === r.runtime_host_id && talkers.includes(r),
          )
        }
      }

      const listed = await admin('runtime', 'list', '--json')
      expect(listed.code, listed.stderr).toBe(0)
      const { hosts } = JSON.parse(listed.stdout) as {
        hosts: { id: string; state: string; interns: number; capacity: number; free: number; address: string }[]
      }
      expect(hosts.map((h) => h.id)).toEqual(stack.runtimes.map((r) => r.id).sort())
      for (const h of hosts) {
        expect(h).toMatchObject({
          state: 'live',
          interns: perHost.get(h.id),
          capacity: 10_000,
          free: 10_000 - perHost.get(h.id)!,
        })
        expect(h.address).toBe(stack.runtimes.find((r) => r.id === h.id)!.url)
      }
      const table = await admin('runtime', 'list')
      expect(table.stdout.split('\n')[0]).toMatch(/^id\s+state\s+interns\s+free\s+capacity\s+address/)
      for (const h of hosts) expect(table.stdout).toMatch(new RegExp(`^${h.id}\\s+live\\s+${h.interns}\\s`, 'm'))
    } finally {
      await stack.stop()
    }
  }, 240_000)
})

const noSandbox = await lacking(['bubblewrap'], 'the fleet tests that run shell commands and snapshot workspaces')

describe.skipIf(noSandbox)('a runtime host killed while its interns are mid-turn', () => {
  it('has every one of them running on another host within 30 s of its death, continuing its session with its history and its files', async () => {
    const stack = await fleetStack(3, { env: quick })
    try {
      const ids = await createMany(stack, 'failover', 9)
      await waitFor(() => allRunning(ids), { timeoutMs: 30_000, what: 'all running' })
      // A completed turn each: a file written in the workspace, a reply in the session.
      const sessions = new Map<string, string>()
      await Promise.all(
        ids.map(async (id, n) => {
          const turn = await chat(
            stack,
            id,
            `[sim] call shell {"command":"echo kept-${n} > kept.txt"}\n[sim] say remembered-${n}`,
            `ses-${n}`,
          )
          expect(turn.status, turn.body.slice(0, 300)).toBe(200)
          expect(turn.text, turn.body.slice(-600)).toBe(`remembered-${n}`)
          sessions.set(id, turn.session!)
        }),
      )
      const before = await rows(ids)
      const counts = new Map<string, number>()
      for (const r of before) counts.set(r.runtime_host_id!, (counts.get(r.runtime_host_id!) ?? 0) + 1)
      const victimId = [...counts.entries()].sort((a, b) => b[1] - a[1])[0]![0]
      const victim = stack.runtimes.find((r) => r.id === victimId)!
      const victims = before.filter((r) => r.runtime_host_id === victimId).map((r) => r.id)
      expect(victims.length).toBeGreaterThan(0)

      // Mid-turn: each of the victim's interns runs a long command when its host is killed.
      const marker = `roster-failover-${process.pid}-${Date.now()}`
      const midTurn = victims.map((id) =>
        chat(
          stack,
          id,
          `[sim] call shell {"command":"echo unfinished > unfinished.txt; (exec -a ${marker} sleep 60)"}\n[sim] say never`,
          sessions.get(id),
        ),
      )
      await waitFor(() => processCommandLines().filter((l) => l.startsWith(marker)).length === victims.length, {
        timeoutMs: 15_000,
        what: 'every mid-turn command to run',
      })
      await victim.process.kill('SIGKILL')
      for (const turn of await Promise.all(midTurn)) {
        expect(turn.status).toBe(200)
        expect(turn.error?.metadata?.reason).toBe('stream_severed')
      }

      // No operator action: the record declares the host dead, and its interns run elsewhere.
      await waitFor(
        async () =>
          (await env.t.db.$queryRaw<{ state: string }[]>`SELECT state FROM runtime_hosts WHERE id = ${victimId}`)[0]
            ?.state === 'dead',
        { timeoutMs: 15_000, intervalMs: 100, what: 'the death to be declared' },
      )
      const declared = Date.now()
      const movedIn = new Map<string, number>()
      await waitFor(
        async () => {
          for (const r of await rows(victims))
            if (r.status === 'running' && r.runtime_host_id !== victimId && !movedIn.has(r.id))
              movedIn.set(r.id, Date.now() - declared)
          return movedIn.size === victims.length
        },
        { timeoutMs: 30_000, intervalMs: 100, what: "every one of the dead host's interns to run on another host" },
      )
      for (const ms of movedIn.values()) expect(ms).toBeLessThan(30_000)
      // None lost, none duplicated: each of the nine on exactly its own (live) host.
      expect(await allRunning(ids)).toBe(true)
      await expectEachOnItsOwnHost(stack, ids)

      // Each continues its session on its new host: the model is sent the whole history, and the files of completed turns are there.
      for (const id of victims) {
        const n = ids.indexOf(id)
        const turn = await chat(
          stack,
          id,
          `[sim] call shell {"command":"cat kept.txt"}\n[sim] say {{result}}`,
          sessions.get(id),
        )
        expect(turn.status, turn.body.slice(0, 300)).toBe(200)
        expect(turn.session).toBe(sessions.get(id))
        expect(turn.text).toContain(`kept-${n}`)
        const sent = JSON.stringify(sim.stats.lastBody['/v1/chat/completions'])
        expect(sent).toContain(`remembered-${n}`)
        expect(sent).toContain(`echo kept-${n} > kept.txt`)
      }
      // The session's items are kept once each (no duplicate from the move).
      const dupes = await env.t.db.$queryRaw<{ n: number }[]>`
        SELECT count(*)::int AS n FROM (SELECT intern_id, session_id, item FROM session_entries WHERE intern_id = ANY(${victims}::uuid[]) GROUP BY 1, 2, 3 HAVING count(*) > 1) d`
      expect(dupes[0]!.n).toBe(0)
    } finally {
      await stack.stop()
    }
  }, 180_000)
})

describe.skipIf(noSandbox)('a runtime host paused past its deadline and resumed', () => {
  it('stops its stale interns and never answers a chat, health check or command for them; no intern runs on two hosts at once', async () => {
    const stack = await fleetStack(2, { env: quick })
    try {
      const ids = await createMany(stack, 'fenced', 6)
      await waitFor(() => allRunning(ids), { timeoutMs: 30_000, what: 'all running' })
      for (const id of ids) expect((await chat(stack, id, '[sim] say before')).status).toBe(200)
      const before = await rows(ids)
      // The host with the more interns is paused (the other takes them).
      const paused = stack.runtimes
        .map((r) => ({ r, n: before.filter((b) => b.runtime_host_id === r.id).length }))
        .sort((a, b) => b.n - a.n)[0]!.r
      const other = stack.runtimes.find((r) => r !== paused)!
      const stale = before.filter((r) => r.runtime_host_id === paused.id)
      expect(stale.length).toBeGreaterThan(0)
      const credential = await runtimeCredential(env.t.url, paused.id)
      const hostnames = new Map(
        (await env.t.db.intern.findMany({ where: { id: { in: stale.map((s) => s.id) } } })).map((i) => [
          i.id,
          i.hostname!,
        ]),
      )

      paused.process.child!.kill('SIGSTOP')
      try {
        await waitFor(
          async () =>
            (await rows(stale.map((s) => s.id))).every((r) => r.status === 'running' && r.runtime_host_id === other.id),
          {
            timeoutMs: 30_000,
            intervalMs: 100,
            what: 'the paused host’s interns to run on the other host',
          },
        ).catch(async (err) => {
          const now = await env.t.db
            .$queryRaw`SELECT i.id::text, i.status::text, i.runtime_host_id, i.placement_generation, i.progress, i.last_failure_message, h.state, h.heartbeat_at FROM interns i LEFT JOIN runtime_hosts h ON h.id = i.runtime_host_id WHERE i.id = ANY(${stale.map((s) => s.id)}::uuid[])`
          throw new Error(`${err.message}: ${JSON.stringify(now)}\nworker: ${stack.workers[0]!.output.slice(-3000)}`)
        })
        // Calls sent while it is paused wait in its socket's backlog: they are answered first on waking.
        const probes = stale.flatMap((s) => [
          fetch(`${paused.url}/v1/interns/${s.id}/chat`, {
            method: 'POST',
            headers: {
              authorization: `Bearer ${credential}`,
              'content-type': 'application/json',
              'x-roster-placement': String(s.placement_generation),
            },
            body: JSON.stringify({ message: '[sim] say stale' }),
          }),
          fetch(`${paused.url}/healthz`, { headers: { 'x-forwarded-host': hostnames.get(s.id)! } }),
          fetch(`${paused.url}/v1/interns/${s.id}/start`, {
            method: 'POST',
            headers: { authorization: `Bearer ${credential}`, 'x-roster-placement': String(s.placement_generation) },
          }),
        ])
        // Woken only once every probe is in its sockets, unread (the kernel holds them while it is stopped).
        await waitFor(() => queuedRequests(new URL(paused.url).port) >= probes.length, {
          timeoutMs: 10_000,
          intervalMs: 20,
          what: 'the probes queued in the paused host’s sockets',
        })
        paused.process.child!.kill('SIGCONT')
        for (const res of await Promise.all(probes)) {
          const text = await res.text()
          expect(res.status, `${res.url}: ${text}`).not.toBe(200)
          expect(text).not.toMatch(/"status":"ok"|stale/)
        }
      } finally {
        paused.process.child!.kill('SIGCONT')
      }
      // It learns that it was declared dead: it drops them and joins again as a new epoch.
      await paused.process.waitForOutput(/declared this host dead/, 10_000)
      await waitFor(async () => ((await hostedBy(stack)).get(paused.id) ?? ['?']).length === 0, {
        timeoutMs: 10_000,
        what: 'the stale interns gone from the resumed host',
      })
      for (const s of stale) {
        const health = await fetch(`${paused.url}/healthz`, { headers: { 'x-forwarded-host': hostnames.get(s.id)! } })
        expect(health.status).not.toBe(200)
        // The intern answers from its new host, once.
        const turn = await chat(stack, s.id, '[sim] say after')
        expect([turn.status, turn.text]).toEqual([200, 'after'])
      }
      await expectEachOnItsOwnHost(stack, ids)
    } finally {
      await stack.stop()
    }
  }, 120_000)
})

describe.skipIf(noSandbox)('draining a runtime host under chat load', () => {
  it('fails no turn and loses no file; `runtime drain` moves every intern off it', async () => {
    const stack = await fleetStack(2, { env: quick, runtimeEnv: { RUNTIME_DRAIN_TURN_GRACE_MS: '20000' } })
    try {
      const ids = await createMany(stack, 'drained', 6)
      await waitFor(() => allRunning(ids), { timeoutMs: 30_000, what: 'all running' })
      const drained = stack.runtimes[0]!
      const onIt = (await rows(ids)).filter((r) => r.runtime_host_id === drained.id).map((r) => r.id)
      expect(onIt.length).toBeGreaterThan(0)

      // Each intern takes turns back to back, each writing a file of its own, until the drain is over.
      let loading = true
      const written = new Map<string, string[]>(ids.map((id) => [id, []]))
      const failures: string[] = []
      const load = ids.map(async (id, n) => {
        for (let k = 0; loading; k++) {
          const file = `turn-${n}-${k}.txt`
          const turn = await chat(
            stack,
            id,
            `[sim] call shell {"command":"sleep 0.3; echo ${k} > ${file}"}\n[sim] say wrote ${file}`,
            `load-${n}`,
          )
          if (turn.status !== 200 || turn.error || turn.text !== `wrote ${file}`)
            failures.push(`${id} turn ${k}: ${turn.status} ${turn.body.slice(0, 300)}`)
          else written.get(id)!.push(file)
        }
      })
      // Turns done before the drain, during it (those the drain waits for or that wait for the move), and after it.
      await waitFor(() => ids.every((id) => written.get(id)!.length >= 1), {
        timeoutMs: 30_000,
        what: 'a turn of each intern before the drain',
      })
      const drain = await admin('runtime', 'drain', drained.id, '--json')
      expect(drain.code, drain.stderr).toBe(0)
      expect(JSON.parse(drain.stdout)).toEqual({ host: drained.id, state: 'draining' })
      // It says it is not ready (a rollout waits on that) once it has heard it drains.
      await waitFor(async () => (await fetch(`${drained.url}/ready`)).status === 503, {
        timeoutMs: 5_000,
        what: 'the draining host to say it is not ready',
      })
      await waitFor(
        async () =>
          (await rows(onIt)).every((r) => r.status === 'running' && r.runtime_host_id === stack.runtimes[1]!.id),
        {
          timeoutMs: 60_000,
          intervalMs: 200,
          what: "the drained host's interns to run on the other host",
        },
      )
      const atMove = new Map(onIt.map((id) => [id, written.get(id)!.length]))
      await waitFor(() => onIt.every((id) => written.get(id)!.length > atMove.get(id)! + 1), {
        timeoutMs: 30_000,
        what: 'turns of each moved intern on its new host',
      })
      loading = false
      await Promise.all(load)
      expect(failures).toEqual([])

      // Every file every turn wrote is there (the ones written on the drained host came with the snapshot).
      for (const id of ids) {
        const turn = await chat(stack, id, `[sim] call shell {"command":"ls"}\n[sim] say {{result}}`)
        for (const file of written.get(id)!) expect(turn.text, id).toContain(file)
      }
      const listed = JSON.parse((await admin('runtime', 'list', '--json')).stdout) as {
        hosts: { id: string; state: string; interns: number }[]
      }
      expect(listed.hosts.find((h) => h.id === drained.id)).toMatchObject({ state: 'drained', interns: 0 })
      // A drained host takes no new intern.
      const more = await createMany(stack, 'after-drain', 2)
      await waitFor(() => allRunning(more), { timeoutMs: 30_000, what: 'new interns running' })
      expect((await rows(more)).every((r) => r.runtime_host_id === stack.runtimes[1]!.id)).toBe(true)
      // Draining twice, or a host that is not there, is refused with a reason.
      const again = await admin('runtime', 'drain', drained.id)
      expect([again.code, again.stderr]).toEqual([
        1,
        expect.stringMatching(/is (draining|drained): only a live host can be drained/),
      ])
      const unknown = await admin('runtime', 'drain', 'no-such-host')
      expect([unknown.code, unknown.stderr]).toEqual([1, expect.stringMatching(/no runtime host no-such-host/)])
      expect((await admin('runtime', 'drain')).code).toBe(2)
    } finally {
      await stack.stop()
    }
  }, 180_000)
})

describe.skipIf(noSandbox)('workspace snapshots in an S3-compatible store', () => {
  it('carry an intern’s files to its next host when its host drains', async () => {
    const { default: S3rver } = await import('s3rver')
    const { createServer } = await import('node:net')
    const port = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as { port: number }
        server.close(() => resolve(port))
      })
    })
    const { mkdtempSync } = await import('node:fs')
    const { tmpdir } = await import('node:os')
    const s3 = new S3rver({
      port,
      address: '127.0.0.1',
      silent: true,
      directory: mkdtempSync(join(tmpdir(), 'roster-s3-')),
      configureBuckets: [{ name: 'snapshots', configs: [] }],
    })
    await s3.run()
    const stack = await fleetStack(2, {
      env: {
        ...quick,
        SNAPSHOT_STORE: 's3',
        SNAPSHOT_S3_BUCKET: 'snapshots',
        SNAPSHOT_S3_ENDPOINT: `http://127.0.0.1:${port}`,
        SNAPSHOT_S3_FORCE_PATH_STYLE: 'true',
        SNAPSHOT_S3_ACCESS_KEY_ID: 'S3RVER',
        SNAPSHOT_S3_SECRET_ACCESS_KEY: 'S3RVER',
      },
    })
    try {
      const [id] = await createMany(stack, 'in-s3', 1)
      await waitFor(() => allRunning([id!]), { timeoutMs: 30_000, what: 'running' })
      const wrote = await chat(
        stack,
        id!,
        '[sim] call shell {"command":"mkdir -p src && echo answer=42 > src/main.txt"}\n[sim] say done',
      )
      expect(wrote.status).toBe(200)
      const [row] = await rows([id!])
      const [snapshot] = await env.t.db.$queryRaw<
        { store: string; key: string | null; bytes: Buffer | null }[]
      >`SELECT store, key, bytes FROM workspace_snapshots WHERE intern_id = ${id}::uuid`
      expect(snapshot).toMatchObject({ store: 's3', key: expect.stringContaining(id!), bytes: null })
      expect((await admin('runtime', 'drain', row!.runtime_host_id!)).code).toBe(0)
      await waitFor(
        async () => (await rows([id!]))[0]!.runtime_host_id !== row!.runtime_host_id && (await allRunning([id!])),
        { timeoutMs: 60_000, intervalMs: 200, what: 'the intern on the other host' },
      )
      const read = await chat(stack, id!, '[sim] call shell {"command":"cat src/main.txt"}\n[sim] say {{result}}')
      expect(read.text).toMatch(/answer=42/)
      // Deleted: its archive names its latest snapshot's object, which is kept (not swept as garbage).
      const [latest] = await env.t.db.$queryRaw<
        { key: string }[]
      >`SELECT key FROM workspace_snapshots WHERE intern_id = ${id}::uuid`
      expect(
        (
          await fetch(`${stack.apiUrl}/interns/${id}`, {
            method: 'DELETE',
            headers: { authorization: `Bearer ${env.tenant.keys.user}` },
          })
        ).status,
      ).toBe(202)
      await waitFor(async () => (await rows([id!])).length === 0, { timeoutMs: 30_000, what: 'the intern to be gone' })
      const archives = await env.t.db.$queryRaw<
        { store: string; key: string; bytes: Buffer | null }[]
      >`SELECT store, key, bytes FROM workspace_archives WHERE intern_id = ${id}::uuid`
      expect(archives).toEqual([{ store: 's3', key: latest!.key, bytes: null }])
      expect(await env.t.db.$queryRaw`SELECT key FROM snapshot_garbage WHERE key = ${latest!.key}`).toEqual([])
    } finally {
      await stack.stop()
      await s3.close()
    }
  }, 120_000)
})

describe('the fleet’s door', () => {
  let stack: Stack
  beforeAll(async () => {
    // Snapshots of at most 1 MiB here, to see the refusal past it.
    stack = await fleetStack(1, { env: { SNAPSHOT_MAX_MB: '1' } })
  })
  afterAll(async () => stack?.stop())
  const join = (body: unknown, token?: string) =>
    fetch(`${stack.apiUrl.replace('/api/v1', '')}/internal/v1/fleet/join`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    })
  const beat = (headers: Record<string, string>, body: string) =>
    fetch(`${stack.apiUrl.replace('/api/v1', '')}/internal/v1/fleet/heartbeat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    })

  it('refuses a host without the fleet credential: it cannot join, and no intern is placed on it', async () => {
    for (const token of [
      undefined,
      '',
      'x'.repeat(64),
      `${stack.env.RUNTIME_TOKEN}x`,
      stack.env.RUNTIME_TOKEN!.slice(1),
      STACK_MASTER_KEY,
    ]) {
      const res = await join({ id: 'intruder', address: 'http://127.0.0.1:9', capacity: 100_000 }, token)
      expect(res.status).toBe(401)
      expect(await res.json()).toMatchObject({ error: 'unauthorized' })
    }
    expect(await env.t.db.$queryRaw`SELECT id FROM runtime_hosts WHERE id = 'intruder'`).toEqual([])
    const ids = await createMany(stack, 'no-intruder', 3)
    await waitFor(() => allRunning(ids), { timeoutMs: 30_000, what: 'all running' })
    expect((await rows(ids)).every((r) => r.runtime_host_id === stack.runtimes[0]!.id)).toBe(true)
  })

  it("refuses a host announcing a live host's id at another address, or a live host's address under another id", async () => {
    const live = stack.runtimes[0]!
    const token = stack.env.RUNTIME_TOKEN!
    const [before] = await env.t.db.$queryRaw<
      { epoch: number; address: string }[]
    >`SELECT epoch, address FROM runtime_hosts WHERE id = ${live.id}`
    const sameId = await join({ id: live.id, address: 'http://127.0.0.1:9', capacity: 10 }, token)
    expect([sameId.status, ((await sameId.json()) as { error: string }).error]).toEqual([409, 'conflict'])
    const sameAddress = await join({ id: 'impostor', address: live.url, capacity: 10 }, token)
    expect([sameAddress.status, ((await sameAddress.json()) as { error: string }).error]).toEqual([409, 'conflict'])
    const [after] = await env.t.db.$queryRaw<
      { epoch: number; address: string }[]
    >`SELECT epoch, address FROM runtime_hosts WHERE id = ${live.id}`
    expect(after).toEqual(before)
    // The live host still obeys its own credential and runs its interns.
    expect(
      (
        await fetch(`${live.url}/v1/interns`, {
          headers: { authorization: `Bearer ${await runtimeCredential(env.t.url, live.id)}` },
        })
      ).status,
    ).toBe(200)
  })

  it('answers odd join and heartbeat bodies with 400 or 401, changing nothing', async () => {
    const token = stack.env.RUNTIME_TOKEN!
    const host = stack.runtimes[0]!
    const credential = await runtimeCredential(env.t.url, host.id)
    const [before] = await env.t.db.$queryRaw<
      object[]
    >`SELECT id, address, capacity, state, epoch FROM runtime_hosts WHERE id = ${host.id}`
    for (const body of [
      '',
      'null',
      '[]',
      '{"id":1}',
      '{"id":"UPPER","address":"http://x","capacity":1}',
      '{"id":"ok","address":"not a url","capacity":1}',
      '{"id":"ok","address":"http://x","capacity":-1}',
      '{"id":"ok","address":"http://x","capacity":1e12}',
      '{'.repeat(5000),
      `{"id":"${'a'.repeat(300)}","address":"http://x","capacity":1}`,
    ]) {
      const res = await join(body, token)
      expect(res.status, body.slice(0, 60)).toBe(400)
    }
    for (const body of [
      '',
      'null',
      '{"running":"all"}',
      '{"running":[{"id":"not-a-uuid","generation":1}]}',
      '{"drained":"yes"}',
      '{'.repeat(5000),
    ]) {
      const res = await beat({ 'x-roster-host': host.id, authorization: `Bearer ${credential}` }, body)
      expect(res.status, body.slice(0, 60)).toBe(400)
    }
    // A heartbeat for a host by someone without its credential (another's, the join token, none).
    for (const headers of [
      { 'x-roster-host': host.id },
      { 'x-roster-host': host.id, authorization: `Bearer ${token}` },
      { 'x-roster-host': 'nobody', authorization: `Bearer ${credential}` },
      { authorization: `Bearer ${credential}` },
    ] as Record<string, string>[]) {
      const res = await beat(headers, '{"running":[]}')
      expect(res.status).toBe(401)
    }
    const [after] = await env.t.db.$queryRaw<
      object[]
    >`SELECT id, address, capacity, state, epoch FROM runtime_hosts WHERE id = ${host.id}`
    expect(after).toEqual(before)
  })

  it("refuses a host's calls about an intern placed on another host (a second host claiming it)", async () => {
    // A second host joins properly, then asks for what belongs to an intern on the first.
    const token = stack.env.RUNTIME_TOKEN!
    const joined = await join({ id: 'claimant', address: 'http://127.0.0.1:10', capacity: 1 }, token)
    expect(joined.status).toBe(200)
    const { token: own } = (await joined.json()) as { token: string }
    const [intern] = await rows(await createMany(stack, 'claimed', 1))
    await waitFor(() => allRunning([intern!.id]), { what: 'running' })
    const [row] = await rows([intern!.id])
    expect(row!.runtime_host_id).toBe(stack.runtimes[0]!.id)
    const base = `${stack.apiUrl.replace('/api/v1', '')}/internal/v1/interns/${row!.id}`
    const as = { 'x-roster-host': 'claimant', authorization: `Bearer ${own}` }
    for (const [method, path, body, type] of [
      ['GET', `/sessions/s1?generation=${row!.placement_generation}`],
      [
        'POST',
        '/sessions/s1/entries',
        JSON.stringify({
          generation: row!.placement_generation,
          from: 0,
          items: [{ type: 'message', role: 'user', content: 'injected' }],
        }),
      ],
      ['GET', `/snapshot?generation=${row!.placement_generation}`],
      ['PUT', '/snapshot', new Uint8Array(Buffer.from('x')), 'application/gzip'],
      [
        'POST',
        `/egress?generation=${row!.placement_generation}`,
        JSON.stringify({ method: 'GET', url: 'https://api.example.test/', headers: {} }),
      ],
    ] as [string, string, (string | Uint8Array<ArrayBuffer>)?, string?][]) {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: {
          ...as,
          'content-type': type ?? 'application/json',
          'x-roster-generation': String(row!.placement_generation),
        },
        body,
      })
      expect(res.status, `${method} ${path}`).toBe(409)
      expect(((await res.json()) as { error: string }).error).toBe('placement_stale')
    }
    expect(
      await env.t.db
        .$queryRaw`SELECT 1 FROM session_entries WHERE intern_id = ${row!.id}::uuid AND item::text LIKE '%injected%'`,
    ).toEqual([])
    // A snapshot past SNAPSHOT_MAX_MB is refused before its bytes are read, saying what to do.
    const huge = await fetch(`${base}/snapshot`, {
      method: 'PUT',
      headers: { ...as, 'content-type': 'application/gzip', 'x-roster-generation': String(row!.placement_generation) },
      body: Buffer.alloc(2 * 1024 * 1024),
    })
    expect(huge.status).toBe(413)
    expect(await huge.json()).toEqual({
      error: 'snapshot_too_large',
      message: expect.stringMatching(/at most 1 MiB compressed \(SNAPSHOT_MAX_MB\); this one is 2\.0 MiB/),
    })
    // Its heartbeat is answered with its own placements only: none.
    const beatRes = await beat(as, '{"running":[]}')
    expect(await beatRes.json()).toEqual({ state: 'live', placements: [] })
    // The claimant never beats again: declared dead in time, with nothing to move.
    await env.t.db.$executeRaw`DELETE FROM runtime_hosts WHERE id = 'claimant'`
  })

  it("keeps the host's environment, data directory and logs free of the master key and of every secret", async () => {
    const host = stack.runtimes[0]!
    const api = apiClient(stack.apiUrl, env.tenant.keys.user)
    const id = (await api.createIntern({ name: 'secretive', provision: true })).body.id as string
    await waitFor(() => allRunning([id]), { what: 'running' })
    const secret = `sv-${Date.now()}-never-on-a-host`
    const stored = await fetch(`${stack.apiUrl}/vault/interns/${id}/secrets/api_token`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' },
      body: JSON.stringify({ value: secret, hosts: ['api.example.test'] }),
    })
    expect(stored.status).toBe(200)
    // The intern sends a request with the secret: the API fills it in (the host sees only the placeholder).
    await chat(
      stack,
      id,
      '[sim] call http_request {"method":"GET","url":"https://api.example.test/","headers":{"authorization":"Bearer {{secret:api_token}}"}}\n[sim] say {{result}}',
    )
    const environ = readFileSync(`/proc/${host.process.child!.pid}/environ`, 'utf8')
    for (const needle of [STACK_MASTER_KEY, secret, 'DATABASE_URL=', 'VAULT_MASTER_KEY='])
      expect(environ).not.toContain(needle)
    for (const file of filesUnder(host.dataDir)) {
      const text = readFileSync(file).toString('latin1')
      expect(text, file).not.toContain(secret)
      expect(text, file).not.toContain(STACK_MASTER_KEY)
      expect(text, file).not.toMatch(/sk-roster-v1-/)
    }
    expect(host.process.output).not.toContain(secret)
    expect(host.process.output).not.toContain(STACK_MASTER_KEY)
    expect(host.process.output).not.toMatch(/sk-roster-v1-/)
  })
})
