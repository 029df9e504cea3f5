import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import { simulatorCatalogue } from '@roster/gateway'
import { signRequest } from '@roster/shared'
import { catalogueFile, startSlowService, startStack, waitFor, type Stack, useTestTenant } from '@roster/testing'

// Turns no one typed when the intern's runtime host dies (issue 61), as chat's do: the turn it was
// running is kept as interrupted, never run again (what it did stands), and the intern's work goes
// on on its new host: the next turn runs there. Two runtime hosts; a host silent for 3 s is dead.
const env = useTestTenant()
let sim: Simulator
let stack: Stack
// A service that answers after `?ms=` and counts each `?mark=`: a step that takes a while, run once.
let slow: Awaited<ReturnType<typeof startSlowService>>
let slowPort = 0
let hits = new Map<string, number>()

beforeAll(async () => {
  slow = await startSlowService()
  slowPort = slow.port
  hits = slow.hits
  sim = await startSimulator({ replyTokens: 3 })
  stack = await startStack({
    databaseUrl: env.t.url,
    runtimes: 2,
    env: {
      MODEL_CATALOGUE: catalogueFile(simulatorCatalogue(sim.url)),
      INTERN_DEFAULT_MODEL: 'roster-sim/chat',
      FLEET_DEAD_AFTER_MS: '3000',
      FLEET_HEARTBEAT_MS: '300',
      EGRESS_PRIVATE_NETWORKS: 'allow',
      EGRESS_HOSTS: 'slow.test=127.0.0.1',
    },
    workerEnv: { RECONCILE_INTERVAL_MS: '500', PROVISION_BACKOFF_MS: '200', JOB_LOCK_MS: '2000' },
  })
}, 90_000)
afterAll(async () => {
  await stack?.stop()
  await sim?.close()
  slow?.close()
})

async function call(method: string, path: string, body?: unknown) {
  const res = await fetch(`${stack.apiUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${env.tenant.keys.user}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : undefined }
}
const hostOf = async (id: string) => (await env.t.db.intern.findUniqueOrThrow({ where: { id } })).runtimeHostId
const statusOf = async (id: string) => (await env.t.db.intern.findUniqueOrThrow({ where: { id } })).status

describe('a turn no one typed whose intern’s host is killed', () => {
  it('is kept as interrupted, never run again; the next turn runs on the intern’s new host', async () => {
    const id = (await call('POST', '/interns', { name: 'nomad', provision: true })).body.id
    await waitFor(async () => (await statusOf(id)) === 'running', { timeoutMs: 30_000, what: 'the intern to run' })
    const trigger = (
      await call('POST', `/interns/${id}/triggers`, {
        name: 'long',
        prompt: `[sim] call http_request {"url":"http://slow.test:${slowPort}/?ms=60000&mark=cut"}\n[sim] say finished`,
        approval_mode: 'self-drive',
      })
    ).body
    const body = '{}'
    const { timestamp, signature } = signRequest('v1', trigger.secret, body)
    const res = await fetch(trigger.url, {
      method: 'POST',
      headers: { 'x-roster-request-timestamp': timestamp, 'x-roster-signature': signature },
      body,
    })
    expect(res.status).toBe(202)
    const turnId = ((await res.json()) as { turn_id: string }).turn_id
    await waitFor(() => hits.get('cut') === 1, { timeoutMs: 20_000, what: 'the turn to be midway' })

    const first = await hostOf(id)
    await stack.runtimes.find((r) => r.id === first)!.process.kill('SIGKILL')
    await waitFor(async () => (await hostOf(id)) !== first && (await statusOf(id)) === 'running', {
      timeoutMs: 40_000,
      what: 'the intern running on the other host',
    })
    await waitFor(async () => (await call('GET', `/interns/${id}/turns/${turnId}`)).body.state === 'interrupted', {
      timeoutMs: 30_000,
      what: 'the cut turn kept as interrupted',
    })
    const cut = (await call('GET', `/interns/${id}/turns/${turnId}`)).body
    expect(cut.reason).toMatch(/not run again/)
    // Its step ran once: it was not started again on the new host.
    expect(hits.get('cut')).toBe(1)

    // The intern's standing work goes on where it runs now.
    const schedule = (
      await call('POST', `/interns/${id}/schedules`, {
        name: 'after',
        cron: '0 0 1 1 *',
        prompt: '[sim] say still working',
        approval_mode: 'self-drive',
      })
    ).body
    const run = await call('POST', `/interns/${id}/schedules/${schedule.id}/run`)
    expect(run.status).toBe(202)
    await waitFor(async () => (await call('GET', `/interns/${id}/turns/${run.body.turn_id}`)).body.state === 'done', {
      timeoutMs: 30_000,
      what: 'the next turn done',
    })
    expect((await call('GET', `/interns/${id}/turns/${run.body.turn_id}`)).body.output).toBe('still working')
  }, 150_000)
})
