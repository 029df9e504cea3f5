import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Redis } from 'ioredis'
import {
  apiClient,
  filesUnder,
  redisUrl,
  STACK_MASTER_KEY,
  startStack,
  waitFor,
  type Stack,
  useTestTenant,
} from '@roster/testing'
import { LocalVault } from '@roster/shared/vault'

const env = useTestTenant()

beforeAll(async () => {
  // Test instrumentation in the real database: a trigger records every state an intern passes through.
  await env.t.db.$executeRawUnsafe(`
    CREATE TABLE intern_history (seq bigserial PRIMARY KEY, intern_id uuid, status text, progress jsonb, hostname text)`)
  await env.t.db.$executeRawUnsafe(`
    CREATE FUNCTION record_intern() RETURNS trigger AS $$
    BEGIN
      INSERT INTO intern_history (intern_id, status, progress, hostname) VALUES (NEW.id, NEW.status, NEW.progress, NEW.hostname);
      RETURN NEW;
    END $$ LANGUAGE plpgsql`)
  await env.t.db.$executeRawUnsafe(`
    CREATE TRIGGER intern_history AFTER INSERT OR UPDATE ON interns FOR EACH ROW EXECUTE FUNCTION record_intern()`)
})

async function history(internId: string) {
  return env.t.db.$queryRaw<{ status: string; progress: any; hostname: string | null }[]>`
    SELECT status, progress, hostname FROM intern_history WHERE intern_id = ${internId}::uuid ORDER BY seq`
}

describe('provisioning', () => {
  let stack: Stack
  beforeAll(async () => {
    stack = await startStack({ databaseUrl: env.t.url, env: { INTERNS_DOMAIN: 'interns.test' } })
  })
  afterAll(async () => stack?.stop())

  it('walks queued → each step as provisioning with progress → running with a hostname', async () => {
    const api = apiClient(stack.apiUrl, env.tenant.keys.user)
    const created = await api.createIntern({ name: 'walker', instructions: 'Be brief.', provision: true })
    expect(created.status).toBe(201)
    expect(created.body.status).toBe('queued')
    const id = created.body.id
    await waitFor(async () => (await api.getIntern(id)).body.status === 'running', { what: 'intern running' })

    const final = (await api.getIntern(id)).body
    expect(final).toMatchObject({ status: 'running', progress: null, last_failure_message: null })
    expect(final.hostname).toMatch(/^walker-[0-9a-f]{8}\.interns\.test$/)

    const states = await history(id)
    expect(states[0]).toMatchObject({ status: 'queued', progress: null })
    // Collapse consecutive rows of one step (the hostname reservation is a write of its own).
    const provisioning = states.filter((s) => s.status === 'provisioning')
    const steps = provisioning
      .map((s) => s.progress)
      .filter((p, i, all) => i === 0 || p.step_number !== all[i - 1].step_number)
    expect(steps.map((p) => p.step_number)).toEqual([1, 2, 3, 4, 5])
    expect(steps[2].step_label).toBe('Placing the intern on a runtime host and writing its configuration')
    const firstWithHostname = provisioning.find((s) => s.hostname)
    expect(firstWithHostname?.progress.step_number).toBe(2)
    for (const p of steps) {
      expect(p.total_steps).toBe(5)
      expect(p.step_label).toMatch(/\w/)
    }
    expect(states.at(-1)).toMatchObject({ status: 'running', progress: null })

    // Real, observable work: the runtime host serves the intern on its hostname.
    const health = await fetch(`${stack.runtimeUrl}/healthz`, { headers: { 'x-forwarded-host': final.hostname } })
    expect(health.status).toBe(200)
    expect(await health.json()).toMatchObject({ status: 'ok', intern: id })
    const hosted = await (await stack.runtimeFetch(`/v1/interns/${id}`)).json()
    expect(hosted).toMatchObject({ running: true, starts: 1, configWrites: 1, hostname: final.hostname })

    // The runtime got the intern's own API key, sealed into its vault as Roster's own secret: the
    // key works as the intern, for its own intern and nothing else.
    expect(
      await env.t.db.vaultSecret.count({ where: { vaultId: final.vault_id, name: 'intern_api_key', system: true } }),
    ).toBe(1)
    const vault = new LocalVault({ masterKey: Buffer.from(STACK_MASTER_KEY, 'hex'), lockTimeoutMs: 1_000 })
    const token = await vault.ensureSecret(env.t.db, final.vault_id, 'intern_api_key', () => {
      throw new Error('the key should exist')
    })
    expect(token).toMatch(/^sk-roster-v1-/)
    // The host holds it in memory only: nothing under its data directory says it.
    expect(filesUnder(stack.runtimes[0]!.dataDir).some((f) => readFileSync(f).includes(token))).toBe(false)
    const asIntern = apiClient(stack.apiUrl, token)
    expect((await asIntern.getIntern(id)).status).toBe(200)
    const other = (await api.createIntern({ name: 'bystander' })).body
    expect((await asIntern.getIntern(other.id)).status).toBe(404)
    const key = await env.t.db.apiKey.findMany({ where: { internId: id } })
    expect(key.map((k) => k.kind)).toEqual(['intern'])
    // Its vault listing through the vault API shows none of Roster's own secrets.
    const listed = await fetch(`${stack.apiUrl}/vault/interns/${id}/secrets`, {
      headers: { authorization: `Bearer ${token}` },
    })
    expect(await listed.json()).toEqual({ data: [], has_more: false })
  })

  it('moves to a longer hostname when the first candidate is taken', async () => {
    const api = apiClient(stack.apiUrl, env.tenant.keys.user)
    const squatter = (await api.createIntern({ name: 'squatter' })).body
    const clash = (await api.createIntern({ name: 'clash' })).body
    const compact = clash.id.replaceAll('-', '')
    await env.t.db.intern.update({
      where: { id: squatter.id },
      data: { hostname: `clash-${compact.slice(0, 8)}.interns.test` },
    })
    // What a provision call does (its route comes with the lifecycle operations): queue a run.
    await env.t.db.$transaction([
      env.t.db.intern.update({ where: { id: clash.id }, data: { status: 'queued', provisionGeneration: 1 } }),
      env.t.db.outboxMessage.create({
        data: {
          kind: 'intern.provision',
          jobId: `intern.provision.${clash.id}.1`,
          payload: { internId: clash.id, generation: 1 },
        },
      }),
    ])
    await waitFor(async () => (await api.getIntern(clash.id)).body.status === 'running', {
      what: 'clashing intern running',
    })
    expect((await api.getIntern(clash.id)).body.hostname).toBe(`clash-${compact.slice(0, 16)}.interns.test`)
  })

  it('keeps every queue key under the hash-tag prefix (one Redis Cluster slot)', async () => {
    const redis = new Redis(redisUrl())
    try {
      const keys = await redis.keys(`${stack.env.QUEUE_PREFIX}:*`)
      expect(keys.length).toBeGreaterThan(0)
      expect(keys.some((k) => k.startsWith(`${stack.env.QUEUE_PREFIX}:interns:`))).toBe(true)
      expect(stack.env.QUEUE_PREFIX).toMatch(/^\{[^{}]+\}$/)
    } finally {
      redis.disconnect()
    }
  })

  it('leaves a provision:false intern stopped, untouched by the worker', async () => {
    const api = apiClient(stack.apiUrl, env.tenant.keys.user)
    const created = await api.createIntern({ name: 'sleeper' })
    // Created with no job for the worker (below): nothing can move it.
    const now = (await api.getIntern(created.body.id)).body
    expect(now).toMatchObject({ status: 'stopped', progress: null, hostname: null })
    expect(
      await env.t.db.outboxMessage.count({ where: { payload: { path: ['internId'], equals: created.body.id } } }),
    ).toBe(0)
  })
})

describe('provisioning that cannot succeed', () => {
  it('ends failed with a readable last_failure_message after its retries', async () => {
    // The only runtime host says it is reached at an address where nothing listens.
    const stack = await startStack({
      databaseUrl: env.t.url,
      runtimeEnv: { RUNTIME_ADVERTISE_URL: 'http://127.0.0.1:9' },
      workerEnv: { PROVISION_ATTEMPTS: '3', PROVISION_BACKOFF_MS: '50' },
    })
    try {
      const api = apiClient(stack.apiUrl, env.tenant.keys.user)
      const created = await api.createIntern({ name: 'doomed', provision: true })
      await waitFor(async () => (await api.getIntern(created.body.id)).body.status === 'failed', {
        timeoutMs: 20_000,
        what: 'intern failed',
      })
      const failed = (await api.getIntern(created.body.id)).body
      expect(failed.progress).toBeNull()
      expect(failed.last_failure_message).toMatch(
        /step 3 of 5 \(Placing the intern on a runtime host and writing its configuration\) after 3 attempt\(s\)/,
      )
      expect(failed.last_failure_message).toMatch(/unreachable/)
      expect(failed.last_failure_message).not.toMatch(/token|sk-roster/)
    } finally {
      await stack.stop()
    }
  })
})

describe('a provisioning run that loses its intern after starting the runtime', () => {
  // A runtime host drops an intern the fleet no longer places there at its next heartbeat's answer
  // (every 2 s by default), which would stop the runtime before the run does (and, racing the run,
  // made the first test below flaky: a dropped intern is not hosted at all). With heartbeats a
  // minute apart, only the run can stop it within the test.
  const NO_HEARTBEAT_IN_TIME = { FLEET_HEARTBEAT_MS: '60000', FLEET_DEAD_AFTER_MS: '600000' }
  // The hosts of the tests before (their processes gone) would look alive that long: the record
  // says they are dead, so that interns are placed on this test's host.
  const earlierHostsDead = () => env.t.db.runtimeHost.updateMany({ data: { state: 'dead' } })
  /** What the runtime host says of the intern: how often it was started, whether it runs. */
  const hostedOn = async (stack: Stack, id: string) =>
    (await (await stack.runtimeFetch(`/v1/interns/${id}`)).json()) as { starts: number; running: boolean }

  // The defect issue 48 found: the run stopped what it started only `if (stepsDone >= 5)`, from when
  // there were six steps; with five, a run that lost its intern after the start step left the
  // runtime running (the reconciler's sweep, off here, hid it).
  it('stops the runtime it started', async () => {
    await earlierHostsDead()
    const stack = await startStack({
      databaseUrl: env.t.url,
      env: NO_HEARTBEAT_IN_TIME,
      workerEnv: { RECONCILE_INTERVAL_MS: '600000' },
    })
    try {
      // The intern is suspended (status stopped, a newer generation) in the same breath as its run
      // records the start step: the run starts the runtime, then finds its intern gone.
      await env.t.db.$executeRawUnsafe(`
        CREATE FUNCTION lose_after_start() RETURNS trigger AS $$
        BEGIN
          IF NEW.name = 'lost-after-start' AND NEW.progress->>'step_label' = 'Starting the runtime'
             AND (OLD.progress IS NULL OR OLD.progress->>'step_label' <> 'Starting the runtime') THEN
            UPDATE interns SET status = 'stopped', progress = NULL, provision_generation = provision_generation + 1
            WHERE id = NEW.id;
          END IF;
          RETURN NULL;
        END $$ LANGUAGE plpgsql`)
      await env.t.db.$executeRawUnsafe(`
        CREATE TRIGGER lose_after_start AFTER UPDATE ON interns FOR EACH ROW EXECUTE FUNCTION lose_after_start()`)
      const api = apiClient(stack.apiUrl, env.tenant.keys.user)
      const { id } = (await api.createIntern({ name: 'lost-after-start', provision: true })).body
      // The run got as far as starting it.
      await waitFor(async () => (await hostedOn(stack, id)).starts >= 1, {
        what: 'the runtime started by the run',
      })
      expect((await api.getIntern(id)).body.status).toBe('stopped')
      await waitFor(async () => (await hostedOn(stack, id)).running === false, {
        timeoutMs: 10_000,
        what: 'the run that lost its intern to stop the runtime it started',
      })
    } finally {
      await env.t.db.$executeRawUnsafe('DROP TRIGGER IF EXISTS lose_after_start ON interns')
      await env.t.db.$executeRawUnsafe('DROP FUNCTION IF EXISTS lose_after_start')
      await stack.stop()
    }
  })

  // Found by a full run under load: an attempt that started the runtime and then failed (a slow
  // answer, a lost connection) is retried; the retry finds its intern suspended meanwhile at its
  // first step, and stopped only what it had started itself, so the runtime an earlier attempt
  // started ran on (the reconciler's sweep, off here, hid it).
  it('stops the runtime an earlier attempt started, when a retry finds its intern gone', async () => {
    await earlierHostsDead()
    const stack = await startStack({
      databaseUrl: env.t.url,
      env: NO_HEARTBEAT_IN_TIME,
      workerEnv: { RECONCILE_INTERVAL_MS: '600000', PROVISION_BACKOFF_MS: '3000' },
    })
    try {
      // The first attempt fails once the runtime is started (its next progress update errs, once).
      await env.t.db.$executeRawUnsafe('CREATE SEQUENCE fail_after_start')
      await env.t.db.$executeRawUnsafe(`
        CREATE FUNCTION fail_after_start() RETURNS trigger AS $$
        BEGIN
          IF NEW.name = 'retried-start' AND NEW.progress->>'step_label' = 'Checking the runtime health'
             AND nextval('fail_after_start') = 1 THEN
            RAISE EXCEPTION 'the first attempt fails after starting the runtime';
          END IF;
          RETURN NEW;
        END $$ LANGUAGE plpgsql`)
      await env.t.db.$executeRawUnsafe(`
        CREATE TRIGGER fail_after_start BEFORE UPDATE ON interns FOR EACH ROW EXECUTE FUNCTION fail_after_start()`)
      const api = apiClient(stack.apiUrl, env.tenant.keys.user)
      const { id } = (await api.createIntern({ name: 'retried-start', provision: true })).body
      await waitFor(
        async () =>
          (await env.t.db.$queryRawUnsafe<{ is_called: boolean }[]>('SELECT is_called FROM fail_after_start'))[0]!
            .is_called,
        { what: 'the first attempt to fail after starting the runtime' },
      )
      expect((await hostedOn(stack, id)).running).toBe(true)
      // Suspended while the retry waits (as the trigger of the test above does: no suspend job of its own).
      await env.t.db.$executeRawUnsafe(
        `UPDATE interns SET status = 'stopped', progress = NULL, provision_generation = provision_generation + 1 WHERE id = $1::uuid`,
        id,
      )
      await waitFor(async () => (await hostedOn(stack, id)).running === false, {
        timeoutMs: 15_000,
        what: 'the retry to stop the runtime the first attempt started',
      })
    } finally {
      await env.t.db.$executeRawUnsafe('DROP TRIGGER IF EXISTS fail_after_start ON interns')
      await env.t.db.$executeRawUnsafe('DROP FUNCTION IF EXISTS fail_after_start')
      await env.t.db.$executeRawUnsafe('DROP SEQUENCE IF EXISTS fail_after_start')
      await stack.stop()
    }
  })
})
