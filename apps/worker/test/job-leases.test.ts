import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { join } from 'node:path'
import pg from 'pg'
import pino from 'pino'
import { pruneJobLeases, takeJobLease } from '@roster/shared/repositories'
import { repoRoot, useTestTenant, waitFor } from '@roster/testing'
import { JobLeases } from '../src/job-leases.js'

// A job's run holds its lease while it goes (apps/worker/src/job-leases.ts), over the real
// database: a second run of the job waits while the first's worker lives and renews it, takes it
// at once when that worker is killed (its beacon session ends with it), or once the lease lapses
// (a worker hung for good), and a run never lets go of a lease another run took after its own lapsed.
const env = useTestTenant()
const keepers: JobLeases[] = []
const sessions: pg.Client[] = []
afterEach(async () => {
  for (const k of keepers.splice(0)) await k.stop()
})
afterAll(async () => {
  for (const s of sessions) await s.end()
})

/** A worker's lease keeper (a job's lock of `lockMs`: its lease twice that), and what it warned. */
async function worker(lockMs: number) {
  const warned: string[] = []
  const log = pino({ level: 'warn' }, { write: (line: string) => void warned.push(JSON.parse(line).msg) })
  const leases = new JobLeases(env.t.db, env.t.url, lockMs, log)
  keepers.push(leases)
  await leases.start()
  return { leases, warned }
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const leaseOf = (jobId: string) => env.t.db.jobLease.findUnique({ where: { jobId } })

describe('job leases', () => {
  it('one run holds a job: another is told how long, and takes it once the first lets go', async () => {
    const a = await worker(30_000)
    const b = await worker(30_000)
    const job = `test.${randomUUID()}`
    expect(await a.leases.take(job, 'a:1')).toEqual({ taken: true })
    expect((await leaseOf(job))?.sessionPid).toEqual(expect.any(Number))
    const held = await b.leases.take(job, 'b:1')
    expect('heldForMs' in held && held.heldForMs).toBeGreaterThan(59_000)
    expect('heldForMs' in held && held.heldForMs).toBeLessThanOrEqual(60_000)
    // Another job is not held by it.
    expect(await b.leases.take(`test.${randomUUID()}`, 'b:2')).toEqual({ taken: true })
    await a.leases.release(job, 'a:1')
    expect(await b.leases.take(job, 'b:1')).toEqual({ taken: true })
  })

  it('a run that goes on past its lease keeps it while its worker lives (renewed)', async () => {
    const a = await worker(200)
    const b = await worker(200)
    const job = `test.${randomUUID()}`
    expect(await a.leases.take(job, 'a:1')).toEqual({ taken: true })
    // Three leases' worth of time, renewed every 50 ms: still held.
    await sleep(1_200)
    expect(await b.leases.take(job, 'b:1')).toHaveProperty('heldForMs')
  })

  it('a killed worker’s lease is taken at once, long before it would lapse', async () => {
    const job = `test.${randomUUID()}`
    // A worker process of its own (the built keeper), its lease a minute long, then SIGKILLed.
    const script = `
      import pino from 'pino'
      import { createDb } from '@roster/shared'
      import { JobLeases } from '${join(repoRoot, 'apps/worker/dist/job-leases.js')}'
      const leases = new JobLeases(createDb({ url: process.env.DATABASE_URL, poolSize: 1 }), process.env.DATABASE_URL, 30000, pino({ level: 'silent' }))
      await leases.start()
      console.log(JSON.stringify(await leases.take(${JSON.stringify(job)}, 'dying:1')))
      setInterval(() => {}, 1000)`
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      cwd: join(repoRoot, 'apps/worker'),
      env: { ...process.env, DATABASE_URL: env.t.url },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (out += d))
    try {
      await waitFor(() => out.includes('{"taken":true}'), { timeoutMs: 20_000, what: `the worker's lease: ${out}` })
      const b = await worker(30_000)
      expect(await b.leases.take(job, 'b:1')).toHaveProperty('heldForMs')
      const killedAt = Date.now()
      child.kill('SIGKILL')
      await waitFor(async () => 'taken' in (await b.leases.take(job, 'b:1')), {
        timeoutMs: 10_000,
        what: 'the killed worker’s lease to be taken',
      })
      // Its lease had a minute left.
      expect(Date.now() - killedAt).toBeLessThan(10_000)
    } finally {
      child.kill('SIGKILL')
    }
  })

  it('a worker hung for good (its session open, no renewals) gives its job up when the lease lapses', async () => {
    const hung = new pg.Client({ connectionString: env.t.url })
    sessions.push(hung)
    await hung.connect()
    const { rows } = await hung.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')
    const job = `test.${randomUUID()}`
    expect(await takeJobLease(env.t.db, job, 'hung:1', rows[0]!.pid, 400)).toEqual({ taken: true })
    const b = await worker(30_000)
    expect(await b.leases.take(job, 'b:1')).toHaveProperty('heldForMs')
    await sleep(600)
    expect(await b.leases.take(job, 'b:1')).toEqual({ taken: true })
  })

  it('a run whose lease lapsed lets go of nothing another run took, and says it lost it', async () => {
    const hung = new pg.Client({ connectionString: env.t.url })
    sessions.push(hung)
    await hung.connect()
    const { rows } = await hung.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')
    const a = await worker(30_000)
    const job = `test.${randomUUID()}`
    expect(await takeJobLease(env.t.db, job, 'a:1', rows[0]!.pid, 200)).toEqual({ taken: true })
    await sleep(400)
    expect(await a.leases.take(job, 'b:1')).toEqual({ taken: true })
    // The first run ends and lets go of its lease: the second's stays.
    await a.leases.release(job, 'a:1')
    expect(await leaseOf(job)).toMatchObject({ holder: 'b:1' })
    // A keeper whose lease another run took finds it gone when it renews, and says so.
    const c = await worker(200)
    const job2 = `test.${randomUUID()}`
    expect(await c.leases.take(job2, 'c:1')).toEqual({ taken: true })
    await env.t.db.$executeRaw`UPDATE job_leases SET holder = 'd:1' WHERE job_id = ${job2}`
    await sleep(300)
    expect(c.warned).toContain(
      'a job’s lease lapsed while it ran (this worker stalled past it): another run may take it',
    )
  })

  it('many runs of one job at once: exactly one takes it', async () => {
    const many = await Promise.all(Array.from({ length: 20 }, () => worker(30_000)))
    const job = `test.${randomUUID()}`
    const taken = await Promise.all(many.map((k, i) => k.leases.take(job, `w${i}:1`)))
    expect(taken.filter((t) => 'taken' in t)).toHaveLength(1)
  })

  it('leases of dead runs whose job never came back are swept a day after they lapsed', async () => {
    const old = `test.${randomUUID()}`
    const recent = `test.${randomUUID()}`
    await env.t.db.$executeRaw`INSERT INTO job_leases (job_id, holder, held_until) VALUES
      (${old}, 'x:1', now() - interval '25 hours'), (${recent}, 'x:2', now() - interval '1 hour')`
    await pruneJobLeases(env.t.db)
    const left = await env.t.db.jobLease.findMany({ where: { jobId: { in: [old, recent] } } })
    expect(left.map((l) => l.jobId)).toEqual([recent])
  })
})
