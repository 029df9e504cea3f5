import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { OpenRouter } from '@openrouter/sdk'
import OpenAI from 'openai'
import pg from 'pg'
import type { StartedPostgreSqlContainer } from '@testcontainers/postgresql'
import { composeCommand, containerTestsProblem, repoRoot, waitFor } from '@roster/testing'
import { startRoster, type StartedRoster } from '../src/index.js'
import { buildImage, CONTAINER_TEST_IMAGES, image } from './image.js'

// Roster in containers, for real: the image built from the Dockerfile (its base image a build
// argument: ROSTER_NODE_IMAGE, the official node:20 image by default), the compose file brought up
// and down, and the testcontainers package a user's suite would call. Other images are settings
// too (ROSTER_POSTGRES_IMAGE, ROSTER_REDIS_IMAGE; on machines without a registry, local stand-ins).
const problem = await containerTestsProblem(CONTAINER_TEST_IMAGES)
if (problem) console.warn(`Roster's container tests cannot run here: ${problem}`)

const run = (cmd: string, args: string[], env: Record<string, string> = {}, timeoutMs = 600_000) => {
  const r = spawnSync(cmd, args, {
    cwd: repoRoot,
    encoding: 'utf8',
    env: { ...process.env, ...env },
    timeout: timeoutMs,
    maxBuffer: 64 * 1024 * 1024,
  })
  return { ok: r.status === 0, out: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` }
}
const json = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' })

async function untilRunning(baseUrl: string, key: string, id: string) {
  await waitFor(
    async () =>
      ((await (await fetch(`${baseUrl}/interns/${id}`, { headers: json(key) })).json()) as { status: string })
        .status === 'running',
    {
      timeoutMs: 60_000,
      intervalMs: 250,
      what: `intern ${id} to run`,
    },
  )
}

/** One chat turn that runs a shell command (by default `id -u; ls /`); the text the intern answered. */
async function chatRunningShell(baseUrl: string, key: string, id: string, command = 'id -u; ls /') {
  const res = await fetch(`${baseUrl}/interns/${id}/chat/completions`, {
    method: 'POST',
    headers: json(key),
    body: JSON.stringify({
      stream: true,
      messages: [{ role: 'user', content: `[sim] call shell ${JSON.stringify({ command })}\n[sim] say {{result}}` }],
    }),
  })
  expect(res.status).toBe(200)
  const chunks = (await res.text())
    .split('\n\n')
    .filter((e) => e.startsWith('data: {'))
    .map((e) => JSON.parse(e.slice(6)))
  return chunks.map((c) => c.choices?.[0]?.delta?.content ?? '').join('')
}

/** What Postgres logs when a process it adopted died badly: it ends every session and recovers. */
const CRASH_RECOVERY = 'terminating any other active server processes'
/** An orphan in a container that exits 2 a moment later (a health probe whose shell Docker killed leaves one). */
const ORPHAN_EXITING_2 = ['sh', '-c', '(sleep 1; exit 2) & exit 0']

/**
 * Leaves an orphan exiting 2 in the container (by `exec`), and checks a session opened before it
 * lives on: were the postmaster the container's PID 1, it would adopt the orphan and end every
 * session for a crash recovery.
 */
async function survivesAnOrphan(databaseUrl: string, exec: (command: string[]) => Promise<unknown>) {
  const session = new pg.Client({ connectionString: databaseUrl })
  session.on('error', () => {})
  await session.connect()
  try {
    const pid = (await session.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid
    await exec(ORPHAN_EXITING_2)
    await new Promise((r) => setTimeout(r, 3_000))
    expect((await session.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid).toBe(pid)
  } finally {
    await session.end().catch(() => {})
  }
}

describe.skipIf(problem)('Roster in containers', () => {
  it("keeps the tests' own Postgres (the global setup's container) through an orphan exiting badly", async () => {
    const port = new URL(process.env.DATABASE_URL!).port
    const id = run('docker', ['ps', '-q', '--filter', `publish=${port}`]).out.trim()
    expect(id, `no container publishes the tests' Postgres port ${port}`).toMatch(/^[0-9a-f]+$/)
    await survivesAnOrphan(process.env.DATABASE_URL!, async (command) =>
      expect(run('docker', ['exec', id, ...command]).ok).toBe(true),
    )
    expect(run('docker', ['logs', id]).out).not.toContain(CRASH_RECOVERY)
  })

  beforeAll(() => buildImage(), 900_000)

  it('builds one image for every process, from its base image argument, running as a user of its own, with the tools an agent reaches for', () => {
    const inside = run('docker', [
      'run',
      '--rm',
      image,
      'sh',
      '-c',
      'node --version; id -u; ls apps/api/dist/main.js apps/worker/dist/main.js apps/runtime/dist/main.js prisma/migrate.mjs; for t in bwrap git curl python3 jq rg cc make; do command -v $t >/dev/null || echo missing $t; done',
    ])
    expect(inside.ok, inside.out).toBe(true)
    const [node, uid] = inside.out.trim().split('\n')
    expect(node).toMatch(/^v20\./)
    expect(uid).toBe('10001')
    // The runtime host's tools (docs/containers.md lists them), every one there.
    expect(inside.out).not.toContain('missing')
  })

  it('comes up with compose (two runtime hosts), provisions interns on both that run sandboxed commands with the tools an agent needs, and leaves nothing after down -v', async () => {
    const compose = composeCommand()
    if (!compose) throw new Error('neither `docker compose` (v2) nor `docker-compose` (v1) is installed')
    const project = `rostertest${randomBytes(4).toString('hex')}`
    const port = 20_000 + Math.floor(Math.random() * 20_000)
    const env = {
      VAULT_MASTER_KEY: randomBytes(32).toString('hex'),
      RUNTIME_TOKEN: randomBytes(32).toString('hex'),
      ROSTER_PORT: String(port),
      ROSTER_IMAGE: image,
    }
    const c = (...args: string[]) => run(compose.cmd, [...compose.args, '-p', project, ...args], env, 300_000)
    /** One statement through psql in a service of the stack (its output unaligned, tuples only). */
    const psql = (service: string, sql: string) =>
      c('exec', '-T', service, 'psql', '-U', 'postgres', '-d', 'roster', '-tAc', sql)
    const labelled = (kind: 'ps -a' | 'volume ls' | 'network ls') =>
      run('docker', [...kind.split(' '), '-q', '--filter', `label=com.docker.compose.project=${project}`]).out.trim()
    try {
      const up = compose.v2 ? c('up', '--wait') : c('up', '-d')
      expect(up.ok, up.out.slice(-3000)).toBe(true)
      // An orphan exiting badly in Postgres's container, adopted by Docker's init, not the postmaster
      // (else Postgres would end every session to recover, the API's among them: checked at the end).
      expect(c('exec', '-T', 'postgres', ...ORPHAN_EXITING_2).ok).toBe(true)
      const baseUrl = `http://127.0.0.1:${port}/api/v1`
      await waitFor(
        async () => (await fetch(baseUrl.replace('/api/v1', '/ready')).catch(() => undefined))?.status === 200,
        { timeoutMs: 120_000, intervalMs: 500, what: 'the API in compose to be ready' },
      )

      const boot = c('exec', '-T', 'api', 'node', 'apps/cli/dist/main.js', 'bootstrap', '--json')
      expect(boot.ok, boot.out).toBe(true)
      const { keys } = JSON.parse(boot.out.slice(boot.out.indexOf('{'))) as { keys: { user: string } }
      const client = new OpenRouter({ apiKey: keys.user, serverURL: baseUrl, retryConfig: { strategy: 'none' } })
      // Two interns on two empty hosts: the least loaded takes each, so one is on each host.
      const interns = [
        await client.interns.createIntern({ createInternRequest: { name: 'composed-1', provision: true } }),
      ]
      await untilRunning(baseUrl, keys.user, interns[0]!.id)
      interns.push(await client.interns.createIntern({ createInternRequest: { name: 'composed-2', provision: true } }))
      await untilRunning(baseUrl, keys.user, interns[1]!.id)
      const fleet = c('exec', '-T', 'api', 'node', 'apps/cli/dist/main.js', 'runtime', 'list', '--json')
      expect(fleet.ok, fleet.out).toBe(true)
      const { hosts } = JSON.parse(fleet.out.slice(fleet.out.indexOf('{'))) as {
        hosts: { id: string; state: string; interns: number }[]
      }
      expect(hosts.map((h) => [h.id, h.state, h.interns])).toEqual([
        ['runtime-1', 'live', 1],
        ['runtime-2', 'live', 1],
      ])
      // The replica (DATABASE_READ_URL) follows the primary: a hot standby that has the interns too.
      await waitFor(
        async () =>
          psql('postgres-replica', 'SELECT pg_is_in_recovery()::text || count(*) FROM interns').out.trim() === 'true2',
        { timeoutMs: 30_000, intervalMs: 500, what: 'the replica to have both interns' },
      )
      const read = await fetch(`${baseUrl}/generations`, { headers: { authorization: `Bearer ${keys.user}` } })
      expect(read.status).toBe(200)
      const placed = psql('postgres', `SELECT id FROM interns WHERE runtime_host_id = 'runtime-2'`)
      expect(placed.ok, placed.out).toBe(true)
      const second = placed.out.trim()
      expect(interns.map((i) => i.id)).toContain(second)

      const said = await chatRunningShell(baseUrl, keys.user, second)
      // The command ran as the image's user, in the sandbox (its root holds a workspace and the system, nothing else).
      expect(said).toContain('10001')
      expect(said).toContain('workspace')
      expect(said).not.toContain('app')
      // The tools an agent reaches for, in its sandbox: a repository, a Python script written, run and committed.
      const script = [
        'cd /workspace && git init -q -b main demo && cd demo',
        `printf 'import json\\nprint(json.dumps({"sum": sum(range(10))}))\\n' > sum.py`,
        'python3 sum.py | jq -r .sum',
        'git add sum.py && git -c user.name=Intern -c user.email=intern@example.invalid commit -qm "Add sum.py" && git log --oneline | wc -l',
        'rg -c json sum.py; printf "int main(void){return 7;}" > t.c && cc t.c -o t && (./t; echo "c:$?"); make --version | head -1; curl --version | head -1',
      ].join(' && ')
      const said2 = await chatRunningShell(baseUrl, keys.user, second, script)
      const { exit_code, stdout: tools } = JSON.parse(said2) as { exit_code: number; stdout: string }
      expect(exit_code, said2).toBe(0)
      expect(tools).toMatch(/^45$/m)
      expect(tools).toMatch(/^1$/m) // one commit
      expect(tools).toMatch(/^2$/m) // rg: two lines with json
      expect(tools).toContain('c:7')
      expect(tools).toMatch(/GNU Make/)
      expect(tools).toMatch(/^curl /m)
      expect(c('logs', 'postgres').out).not.toContain(CRASH_RECOVERY)
    } finally {
      const down = c('down', '-v', '--remove-orphans')
      expect(down.ok, down.out).toBe(true)
    }
    expect(labelled('ps -a')).toBe('')
    expect(labelled('volume ls')).toBe('')
    expect(labelled('network ls')).toBe('')
  }, 600_000)

  describe('the testcontainers package (what a user suite does)', () => {
    let roster: StartedRoster
    beforeAll(async () => {
      roster = await startRoster({ image })
    }, 300_000)
    afterAll(async () => {
      await roster?.stop()
    })

    it('creates an intern through the official client, which reaches running and answers a chat', async () => {
      const client = new OpenRouter({ apiKey: roster.keys.user, serverURL: roster.baseUrl })
      const intern = await client.interns.createIntern({
        createInternRequest: { name: 'from-a-user-suite', provision: true },
      })
      await untilRunning(roster.baseUrl, roster.keys.user, intern.id)
      expect(await chatRunningShell(roster.baseUrl, roster.keys.user, intern.id)).toContain('workspace')
    })

    it('serves the gateway to the openai client', async () => {
      const openai = new OpenAI({ apiKey: roster.keys.user, baseURL: roster.baseUrl })
      const response = await openai.responses.create({ model: 'roster-sim/chat', input: 'Say hello.' })
      expect(response.status).toBe('completed')
      expect(response.output_text.length).toBeGreaterThan(0)
    })

    it("gives each bootstrap a tenant of its own: another's intern is not found", async () => {
      const mine = await new OpenRouter({ apiKey: roster.keys.user, serverURL: roster.baseUrl }).interns.createIntern({
        createInternRequest: { name: 'private' },
      })
      const other = await roster.bootstrap()
      const res = await fetch(`${roster.baseUrl}/interns/${mine.id}`, { headers: json(other.keys.user) })
      expect(res.status).toBe(404)
    })

    it('keeps its Postgres through an orphan exiting badly in its container', async () => {
      const postgres = roster.containers.postgres as StartedPostgreSqlContainer
      await survivesAnOrphan(postgres.getConnectionUri(), (command) => postgres.exec(command))
      expect(run('docker', ['logs', postgres.getId()]).out).not.toContain(CRASH_RECOVERY)
    })

    it('stops every container it started', async () => {
      const ids = Object.values(roster.containers).map((c) => c.getId())
      await roster.stop()
      for (const id of ids) expect(run('docker', ['ps', '-q', '--filter', `id=${id}`]).out.trim()).toBe('')
    })
  })
})
