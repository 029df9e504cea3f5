import { describe, expect, it } from 'vitest'
import { mkdtempSync, writeFileSync, readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomUUID } from 'node:crypto'
import { RuntimeConfig } from '@roster/shared'
import { lacking, processCommandLines, waitFor } from '@roster/testing'
import { startSimulator } from '@roster/upstream-sim'
import { buildRuntimeHost } from './host.js'

const TOKEN = 'runtime-test-credential-0123456789abcdef'
const config = (dir: string, more: Record<string, string> = {}) => RuntimeConfig.parse({ HOST: '127.0.0.1', PORT: '0', RUNTIME_DATA_DIR: dir, RUNTIME_TOKEN: TOKEN, LOG_LEVEL: 'silent', ...more })
const auth = { authorization: `Bearer ${TOKEN}` }
const spec = (hostname: string) => ({ hostname, name: 'w', instructions: 'be kind', model: 'acme/secret-model', token: 'intern-key' })

// The shutdown test runs a shell command: in its sandbox.
const noSandbox = await lacking(['bubblewrap'], "the runtime host's shutdown test (it runs a command)")

describe('the runtime host', () => {
  it('boots past a torn configuration file (a crash mid-write) and keeps the readable ones', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'runtime-'))
    const good = randomUUID()
    writeFileSync(join(dir, `${good}.json`), JSON.stringify({ hostname: 'good.interns.test', name: 'good', instructions: null, model: null, token: 't' }))
    writeFileSync(join(dir, `${randomUUID()}.json`), '{"hostname":"torn.inte')
    const sut = await buildRuntimeHost(config(dir), { logger: false })
    await sut.ready()
    try {
      const hosted = (await sut.inject({ method: 'GET', url: '/v1/interns', headers: auth })).json().data
      expect(hosted.map((h: { id: string }) => h.id)).toEqual([good])
    } finally {
      await sut.close()
    }
  })

  it('writes configurations whole: no temporary file is left beside them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'runtime-'))
    const sut = await buildRuntimeHost(config(dir), { logger: false })
    try {
      const id = randomUUID()
      const res = await sut.inject({
        method: 'PUT',
        url: `/v1/interns/${id}`,
        headers: auth,
        payload: { hostname: 'w.interns.test', name: 'w', instructions: null, model: null, token: 't' },
      })
      expect(res.json()).toEqual({ written: true })
      expect(readdirSync(dir)).toEqual([`${id}.json`])
    } finally {
      await sut.close()
    }
  })

  it.skipIf(noSandbox)("shutting down, ends its interns' runs (commands killed, each client told) and does not wait on their connections", async () => {
    // The intern's model is the simulator's own /responses, so a turn runs here without an API.
    const sim = await startSimulator({ replyTokens: 4 })
    const dir = mkdtempSync(join(tmpdir(), 'runtime-'))
    const sut = await buildRuntimeHost(config(dir, { ROSTER_API_URL: `${sim.url}/v1`, INTERN_DEFAULT_MODEL: 'sim' }), { logger: false })
    try {
      const base = await sut.listen({ host: '127.0.0.1', port: 0 })
      const id = randomUUID()
      const json = { ...auth, 'content-type': 'application/json' }
      await fetch(`${base}/v1/interns/${id}`, { method: 'PUT', headers: json, body: JSON.stringify({ ...spec('s.interns.test'), model: null }) })
      await fetch(`${base}/v1/interns/${id}/start`, { method: 'POST', headers: auth })
      const marker = `roster-shutdown-${process.pid}-${Date.now()}`
      const res = await fetch(`${base}/v1/interns/${id}/chat`, { method: 'POST', headers: json, body: JSON.stringify({ message: `[sim] call shell {"command":"(exec -a ${marker} sleep 30)"}` }) })
      expect(res.status).toBe(200)
      const text = res.text()
      const running = () => processCommandLines().some((l) => l.startsWith(marker))
      await waitFor(running, { timeoutMs: 10_000, what: 'the command to run' })
      // Before, the close waited for the turn (here 30 s), then for the connection's keep-alive (72 s).
      const closing = sut.close().then(() => 'closed')
      expect(await Promise.race([closing, new Promise((r) => setTimeout(r, 5_000, 'still closing'))])).toBe('closed')
      expect(running()).toBe(false)
      const events = (await text).split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => JSON.parse(e.slice(6)))
      expect(events.at(-1)).toEqual({ type: 'ended', message: expect.stringMatching(/host is shutting down.*session is kept/) })
    } finally {
      await sut.close()
      await sim.close()
    }
  })

  it("obeys only the workers' credential: every control call without it, or with another, is refused", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'runtime-'))
    const sut = await buildRuntimeHost(config(dir), { logger: false })
    try {
      const id = randomUUID()
      expect((await sut.inject({ method: 'PUT', url: `/v1/interns/${id}`, headers: auth, payload: spec('x.interns.test') })).statusCode).toBe(200)
      const calls = [
        { method: 'PUT' as const, url: `/v1/interns/${randomUUID()}`, payload: spec('y.interns.test') },
        { method: 'POST' as const, url: `/v1/interns/${id}/start` },
        { method: 'POST' as const, url: `/v1/interns/${id}/stop` },
        { method: 'POST' as const, url: `/v1/interns/${id}/archive` },
        { method: 'DELETE' as const, url: `/v1/interns/${id}` },
        { method: 'GET' as const, url: `/v1/interns/${id}` },
        { method: 'GET' as const, url: '/v1/interns' },
        { method: 'GET' as const, url: '/v1/nowhere' },
      ]
      const wrong = [{}, { authorization: `Bearer ${TOKEN}x` }, { authorization: `Bearer ${TOKEN.slice(0, -1)}` }, { authorization: TOKEN }, { authorization: `Basic ${TOKEN}` }, { authorization: '' }]
      for (const call of calls) {
        for (const headers of wrong) {
          const res = await sut.inject({ ...call, headers })
          expect(res.statusCode, `${call.method} ${call.url} with ${JSON.stringify(headers)}`).toBe(401)
          expect(res.headers['www-authenticate']).toMatch(/^Bearer/)
        }
      }
      // Nothing the refused calls asked for happened: one intern, configured, not running, not archived.
      const hosted = (await sut.inject({ method: 'GET', url: '/v1/interns', headers: auth })).json().data
      expect(hosted.map((h: { id: string; running: boolean }) => [h.id, h.running])).toEqual([[id, false]])
      expect(readdirSync(dir)).toEqual([`${id}.json`])
      // The host's own health needs no credential.
      expect((await sut.inject({ method: 'GET', url: '/health' })).json()).toEqual({ status: 'ok' })
    } finally {
      await sut.close()
    }
  })

  it("answers on an intern's hostname only its health: not the control API, not its configuration", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'runtime-'))
    const sut = await buildRuntimeHost(config(dir), { logger: false })
    try {
      const id = randomUUID()
      await sut.inject({ method: 'PUT', url: `/v1/interns/${id}`, headers: auth, payload: spec('i.interns.test') })
      const as = (host: string, headers: Record<string, string> = {}) => ({ 'x-forwarded-host': host, ...headers })
      expect((await sut.inject({ method: 'GET', url: '/healthz', headers: as('i.interns.test') })).statusCode).toBe(503)
      await sut.inject({ method: 'POST', url: `/v1/interns/${id}/start`, headers: auth })
      const health = await sut.inject({ method: 'GET', url: '/healthz', headers: as('i.interns.test') })
      expect(health.statusCode).toBe(200)
      expect(Object.keys(health.json()).sort()).toEqual(['intern', 'started_at', 'status'])
      for (const url of ['/', '/v1/interns', `/v1/interns/${id}`, '/health', '/anything']) {
        // Even with the credential: the intern's hostname is not the host's control surface.
        const res = await sut.inject({ method: 'GET', url, headers: as('i.interns.test', auth) })
        expect(res.statusCode, url).toBe(404)
        expect(res.body).not.toMatch(/secret-model|be kind|intern-key/)
      }
      const stop = await sut.inject({ method: 'POST', url: `/v1/interns/${id}/stop`, headers: as('i.interns.test', auth) })
      expect(stop.statusCode).toBe(404)
      expect((await sut.inject({ method: 'GET', url: '/healthz', headers: as('i.interns.test') })).statusCode).toBe(200)
    } finally {
      await sut.close()
    }
  })
})
