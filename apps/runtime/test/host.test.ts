import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import { simulatorCatalogue } from '@roster/gateway'
import { hostCredential, hostCredentialKey } from '@roster/shared/fleet'
import {
  apiClient,
  catalogueFile,
  filesUnder,
  lacking,
  processCommandLines,
  runtimeCredential,
  STACK_MASTER_KEY,
  startStack,
  useTestTenant,
  waitFor,
  type Stack,
} from '@roster/testing'
import { readFileSync } from 'node:fs'

// A runtime host of the fleet, through its own control API: it obeys only the credential the fleet
// gave it (not the fleet's join credential, not another host's, not its previous epoch's), answers
// on an intern's hostname only that intern's health, keeps no key at rest, and ends its interns'
// runs at once when it shuts down.
const env = useTestTenant()
let sim: Simulator
let stack: Stack
let internId = ''
let hostname = ''

beforeAll(async () => {
  sim = await startSimulator({ replyTokens: 4 })
  stack = await startStack({
    databaseUrl: env.t.url,
    runtimes: 2,
    env: { MODEL_CATALOGUE: catalogueFile(simulatorCatalogue(sim.url)), INTERN_DEFAULT_MODEL: 'roster-sim/chat' },
  })
  const api = apiClient(stack.apiUrl, env.tenant.keys.user)
  internId = (await api.createIntern({ name: 'hosted', instructions: 'be kind', provision: true })).body.id
  await waitFor(async () => (await api.getIntern(internId)).body.status === 'running', { what: 'the intern to run' })
  hostname = (await api.getIntern(internId)).body.hostname
})
afterAll(async () => {
  await stack?.stop()
  await sim?.close()
})

/** The host the intern is placed on (index into stack.runtimes), and the other. */
async function hosts() {
  const [row] = await env.t.db.$queryRaw<
    { runtime_host_id: string }[]
  >`SELECT runtime_host_id FROM interns WHERE id = ${internId}::uuid`
  const mine = stack.runtimes.findIndex((r) => r.id === row!.runtime_host_id)
  return { mine, other: 1 - mine }
}

describe('a runtime host', () => {
  it("obeys only its own fleet credential: without it, with the fleet's join credential, another host's or an old epoch's, every control call is refused", async () => {
    const { mine, other } = await hosts()
    const at = stack.runtimes[mine]!
    const right = await runtimeCredential(env.t.url, at.id)
    const key = hostCredentialKey(Buffer.from(STACK_MASTER_KEY, 'hex'))
    const [{ epoch }] = await env.t.db.$queryRaw<
      [{ epoch: number }]
    >`SELECT epoch FROM runtime_hosts WHERE id = ${at.id}`
    const wrong: Record<string, string>[] = [
      {},
      { authorization: `Bearer ${stack.env.RUNTIME_TOKEN}` },
      { authorization: `Bearer ${right}x` },
      { authorization: `Bearer ${right.slice(0, -1)}` },
      { authorization: right },
      { authorization: `Bearer ${await runtimeCredential(env.t.url, stack.runtimes[other]!.id)}` },
      { authorization: `Bearer ${hostCredential(key, at.id, epoch + 1)}` },
      ...(epoch > 1 ? [{ authorization: `Bearer ${hostCredential(key, at.id, epoch - 1)}` }] : []),
      { authorization: '' },
    ]
    const calls = [
      {
        method: 'PUT',
        path: `/v1/interns/${internId}`,
        body: JSON.stringify({
          hostname: 'y.interns.test',
          name: 'y',
          instructions: null,
          model: null,
          token: 't',
          generation: 99,
        }),
      },
      { method: 'POST', path: `/v1/interns/${internId}/stop` },
      { method: 'POST', path: `/v1/interns/${internId}/archive` },
      { method: 'DELETE', path: `/v1/interns/${internId}` },
      { method: 'GET', path: `/v1/interns/${internId}` },
      { method: 'GET', path: '/v1/interns' },
      { method: 'GET', path: '/v1/nowhere' },
    ]
    for (const call of calls) {
      for (const headers of wrong) {
        const res = await fetch(`${at.url}${call.path}`, {
          method: call.method,
          headers: { ...headers, 'content-type': 'application/json' },
          body: call.body,
        })
        expect(res.status, `${call.method} ${call.path} with ${JSON.stringify(headers)}`).toBe(401)
        expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/)
      }
    }
    // Nothing the refused calls asked for happened: the intern still runs, configured once.
    const hosted = await (await stack.runtimeFetch(`/v1/interns/${internId}`, {}, mine)).json()
    expect(hosted).toMatchObject({ running: true, configWrites: 1 })
    // The host's own health needs no credential.
    expect(await (await fetch(`${at.url}/health`)).json()).toEqual({ status: 'ok', joined: true })
    // Ready (for a rollout): joined, in touch with the fleet, not draining.
    const ready = await fetch(`${at.url}/ready`)
    expect([ready.status, await ready.json()]).toEqual([
      200,
      { ready: true, joined: true, in_touch: true, draining: false },
    ])
  })

  it("answers on an intern's hostname only its health: not the control API, not its configuration", async () => {
    const { mine } = await hosts()
    const at = stack.runtimes[mine]!
    const credential = await runtimeCredential(env.t.url, at.id)
    const as = (headers: Record<string, string> = {}) => ({ 'x-forwarded-host': hostname, ...headers })
    const health = await fetch(`${at.url}/healthz`, { headers: as() })
    expect(health.status).toBe(200)
    expect(Object.keys(await health.json()).sort()).toEqual(['intern', 'started_at', 'status'])
    for (const path of ['/', '/v1/interns', `/v1/interns/${internId}`, '/health', '/anything']) {
      // Even with the credential: the intern's hostname is not the host's control surface.
      const res = await fetch(`${at.url}${path}`, { headers: as({ authorization: `Bearer ${credential}` }) })
      expect(res.status, path).toBe(404)
      expect(await res.text()).not.toMatch(/be kind|sk-roster/)
    }
    const stop = await fetch(`${at.url}/v1/interns/${internId}/stop`, {
      method: 'POST',
      headers: as({ authorization: `Bearer ${credential}` }),
    })
    expect(stop.status).toBe(404)
    expect((await fetch(`${at.url}/healthz`, { headers: as() })).status).toBe(200)
  })

  it('keeps no key, and no master key, at rest or in its environment', async () => {
    for (const at of stack.runtimes) {
      expect(Object.keys(at.env)).not.toContain('VAULT_MASTER_KEY')
      expect(Object.keys(at.env)).not.toContain('DATABASE_URL')
      const environ = readFileSync(`/proc/${at.process.child!.pid}/environ`, 'utf8')
      expect(environ).not.toContain(STACK_MASTER_KEY)
      expect(environ).not.toMatch(/DATABASE_URL=|VAULT_MASTER_KEY=/)
      for (const file of filesUnder(at.dataDir)) expect(readFileSync(file, 'utf8'), file).not.toMatch(/sk-roster-v1-/)
    }
  })
})

const noSandbox = await lacking(['bubblewrap'], "the runtime host's shutdown test (it runs a command)")

describe.skipIf(noSandbox)('a runtime host shutting down', () => {
  it("ends its interns' runs (commands killed, each client told) and does not wait on their connections", async () => {
    const { mine } = await hosts()
    const at = stack.runtimes[mine]!
    const marker = `roster-shutdown-${process.pid}-${Date.now()}`
    const res = await fetch(`${stack.apiUrl}/interns/${internId}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        stream: true,
        messages: [{ role: 'user', content: `[sim] call shell {"command":"(exec -a ${marker} sleep 30)"}` }],
      }),
    })
    expect(res.status).toBe(200)
    const text = res.text()
    const running = () => processCommandLines().some((l) => l.startsWith(marker))
    await waitFor(running, { timeoutMs: 10_000, what: 'the command to run' })
    // Before, the close waited for the turn (here 30 s), then for the connection's keep-alive (72 s).
    const started = performance.now()
    expect(await at.process.kill('SIGTERM')).toBe(0)
    expect(performance.now() - started).toBeLessThan(5_000)
    expect(running()).toBe(false)
    const chunks = (await text)
      .split('\n\n')
      .filter((e) => e.startsWith('data: {'))
      .map((e) => JSON.parse(e.slice(6)))
    expect(chunks.at(-2)).toMatchObject({
      error: {
        code: 410,
        message: expect.stringMatching(/host is shutting down.*session is kept/),
        metadata: { reason: 'run_ended' },
      },
    })
  })
})
