import { describe, expect, it } from 'vitest'
import { apiClient, startStack, useTestTenant, waitFor } from '@roster/testing'

// "running" means the runtime runs: when it vanishes, the reconciler notices within a bounded time.
const env = useTestTenant()

const statuses = async (ids: string[]) => (await env.t.db.intern.findMany({ where: { id: { in: ids } } })).map((i) => i.status)

describe('a runtime host that is killed', () => {
  it('has its running interns restored once it is back', async () => {
    const stack = await startStack({ databaseUrl: env.t.url, workerEnv: { RECONCILE_INTERVAL_MS: '500', PROVISION_BACKOFF_MS: '200' } })
    try {
      const api = apiClient(stack.apiUrl, env.tenant.keys.user)
      const ids = await Promise.all(['keep-a', 'keep-b', 'keep-c'].map(async (name) => (await api.createIntern({ name, provision: true })).body.id as string))
      await waitFor(async () => (await statuses(ids)).every((s) => s === 'running'), { what: 'all running' })
      await new Promise((r) => setTimeout(r, 2_100)) // past the grace a fresh intern gets

      await stack.runtime.kill('SIGKILL')
      stack.runtime.start()
      await stack.runtime.waitForOutput(/listening/)
      // The restarted host knows the configurations but runs nothing until the reconciler acts.
      await waitFor(async () => (await statuses(ids)).some((s) => s !== 'running'), { timeoutMs: 10_000, what: 'loss noticed' })
      await waitFor(async () => (await statuses(ids)).every((s) => s === 'running'), { timeoutMs: 20_000, what: 'all running again' })
      const hosted = (await (await stack.runtimeFetch('/v1/interns')).json()).data as { id: string; running: boolean }[]
      expect(ids.every((id) => hosted.find((h) => h.id === id)?.running)).toBe(true)
    } finally {
      await stack.stop()
    }
  })

  it('ends its interns failed, with a reason, when it stays away', async () => {
    const stack = await startStack({
      databaseUrl: env.t.url,
      workerEnv: { RECONCILE_INTERVAL_MS: '500', PROVISION_ATTEMPTS: '2', PROVISION_BACKOFF_MS: '100', HEALTH_TIMEOUT_MS: '300' },
    })
    try {
      const api = apiClient(stack.apiUrl, env.tenant.keys.user)
      const id = (await api.createIntern({ name: 'orphan', provision: true })).body.id as string
      await waitFor(async () => (await statuses([id]))[0] === 'running', { what: 'running' })
      await new Promise((r) => setTimeout(r, 2_100))
      await stack.runtime.kill('SIGKILL')
      await waitFor(async () => (await statuses([id]))[0] === 'failed', { timeoutMs: 20_000, what: 'failed' })
      const failed = (await api.getIntern(id)).body
      expect(failed.last_failure_message).toMatch(/unreachable|did not report healthy/)
      expect(failed.progress).toBeNull()
    } finally {
      await stack.stop()
    }
  })
})
