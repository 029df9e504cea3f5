import { describe, expect, it } from 'vitest'
import { apiClient, freePort, makeTenant, NodeProcess, repoRoot, startStack, useTestTenant } from '@roster/testing'
import { join } from 'node:path'

const env = useTestTenant()

describe('the processes', () => {
  it('log JSON lines with request ids and never a key or the master key; stop cleanly on SIGTERM', async () => {
    const tenant = await makeTenant(env.t.db)
    const healthPort = await freePort()
    const stack = await startStack({
      databaseUrl: env.t.url,
      env: { LOG_LEVEL: 'debug' },
      workerEnv: { HEALTH_PORT: String(healthPort) },
    })
    try {
      const workerReady = await fetch(`http://127.0.0.1:${healthPort}/ready`)
      expect(workerReady.status).toBe(200)
      expect(await workerReady.json()).toEqual({ status: 'ready', postgres: 'ok', redis: 'ok' })

      const res = await fetch(`${stack.apiUrl}/interns`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${tenant.keys.user}`,
          'content-type': 'application/json',
          'x-request-id': 'trace-me-1',
        },
        body: JSON.stringify({ name: 'logged', provision: true }),
      })
      expect(res.status).toBe(201)
      const api = apiClient(stack.apiUrl, tenant.keys.user)
      const { body } = await api.getIntern((await res.json()).id)
      expect(body.name).toBe('logged')

      await stack.api.waitForOutput(/"reqId":"trace-me-1"/, 5_000)
      const lines = stack.api.output
        .trim()
        .split('\n')
        .filter((l) => l.startsWith('{'))
      expect(lines.length).toBeGreaterThan(2)
      for (const line of lines) JSON.parse(line)
      for (const p of [stack.api, stack.runtime, ...stack.workers]) {
        expect(p.output).not.toContain(tenant.keys.user)
        expect(p.output).not.toContain(stack.env.VAULT_MASTER_KEY)
      }
    } finally {
      const codes = await Promise.all([
        stack.api.kill('SIGTERM'),
        stack.workers[0]!.kill('SIGTERM'),
        stack.runtime.kill('SIGTERM'),
      ])
      expect(codes).toEqual([0, 0, 0])
    }
  })

  it('refuse to start with a bad setting, naming the variable', async () => {
    const api = new NodeProcess('api', join(repoRoot, 'apps/api/dist/main.js'), {
      PORT: 'eighty',
      DATABASE_URL: 'mysql://nope',
    }).start()
    const worker = new NodeProcess('worker', join(repoRoot, 'apps/worker/dist/main.js'), {
      QUEUE_PREFIX: 'no-braces',
    }).start()
    await Promise.all([api.waitForOutput(/invalid configuration/), worker.waitForOutput(/invalid configuration/)])
    expect(await api.exited()).toBe(78)
    expect(api.output).toMatch(/PORT/)
    expect(api.output).toMatch(/DATABASE_URL/)
    expect(worker.output).toMatch(/QUEUE_PREFIX/)

    const catalogue = new NodeProcess('api', join(repoRoot, 'apps/api/dist/main.js'), {
      MODEL_CATALOGUE: '/nonexistent/models.json',
      PORT: '0',
    }).start()
    await catalogue.waitForOutput(/model catalogue .* cannot be read/)
    expect(await catalogue.exited()).toBe(78)
  })
})
