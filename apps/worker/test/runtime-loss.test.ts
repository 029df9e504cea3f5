import { describe, expect, it } from 'vitest'
import { apiClient, startStack, useTestTenant, waitFor } from '@roster/testing'

// "running" means the runtime runs: when it vanishes, the reconciler notices within a bounded time.
const env = useTestTenant()

const statuses = async (ids: string[]) =>
  (await env.t.db.intern.findMany({ where: { id: { in: ids } } })).map((i) => i.status)

describe('a runtime host that is killed', () => {
  it('has its running interns restored once it is back', async () => {
    const stack = await startStack({
      databaseUrl: env.t.url,
      workerEnv: { RECONCILE_INTERVAL_MS: '500', PROVISION_BACKOFF_MS: '200' },
    })
    try {
      const api = apiClient(stack.apiUrl, env.tenant.keys.user)
      const ids = await Promise.all(
        ['keep-a', 'keep-b', 'keep-c'].map(
          async (name) => (await api.createIntern({ name, provision: true })).body.id as string,
        ),
      )
      await waitFor(async () => (await statuses(ids)).every((s) => s === 'running'), { what: 'all running' })
      // Past the grace a fresh intern gets (the reconciler looks only at interns unchanged for 2 s).
      await waitFor(
        async () =>
          (
            await env.t.db.$queryRaw<{ n: number }[]>`
              SELECT count(*)::int AS n FROM interns WHERE id = ANY(${ids}::uuid[]) AND updated_at < now() - interval '2 seconds'`
          )[0]!.n === ids.length,
        { what: 'the interns past their grace' },
      )

      await stack.runtime.kill('SIGKILL')
      stack.runtime.start()
      await stack.runtime.waitForOutput(/listening/)
      // The restarted host knows the configurations but runs nothing until the reconciler acts.
      await waitFor(async () => (await statuses(ids)).some((s) => s !== 'running'), {
        timeoutMs: 10_000,
        what: 'loss noticed',
      })
      await waitFor(async () => (await statuses(ids)).every((s) => s === 'running'), {
        timeoutMs: 20_000,
        what: 'all running again',
      })
      const hosted = (await (await stack.runtimeFetch('/v1/interns')).json()).data as { id: string; running: boolean }[]
      expect(ids.every((id) => hosted.find((h) => h.id === id)?.running)).toBe(true)
    } finally {
      await stack.stop()
    }
  })

  it('has its interns wait in provisioning, saying why, while no host is live, and run again when one joins', async () => {
    const fleet = { FLEET_DEAD_AFTER_MS: '3000', FLEET_HEARTBEAT_MS: '300' }
    const stack = await startStack({
      databaseUrl: env.t.url,
      env: fleet,
      workerEnv: {
        RECONCILE_INTERVAL_MS: '500',
        PROVISION_ATTEMPTS: '2',
        PROVISION_BACKOFF_MS: '100',
        HEALTH_TIMEOUT_MS: '300',
      },
    })
    try {
      const api = apiClient(stack.apiUrl, env.tenant.keys.user)
      const id = (await api.createIntern({ name: 'orphan', provision: true })).body.id as string
      await waitFor(async () => (await statuses([id]))[0] === 'running', { what: 'running' })
      await stack.runtime.kill('SIGKILL')
      // Declared dead past the deadline; the intern is placed again, and with no live host it waits, saying so (never failed for that).
      await waitFor(
        async () =>
          /Waiting for a runtime host with room: no live runtime host/.test(
            (await api.getIntern(id)).body.progress?.step_label ?? '',
          ),
        { timeoutMs: 20_000, what: 'the wait said' },
      )
      const waiting = (await api.getIntern(id)).body
      expect(waiting).toMatchObject({ status: 'provisioning', last_failure_message: null })
      // Not a wait for anything: a window in which it must not fail (its attempts run every 100 ms).
      await new Promise((r) => setTimeout(r, 1_000))
      expect((await statuses([id]))[0]).toBe('provisioning')
      // A host joins: the intern goes on by itself.
      stack.runtime.start()
      await stack.runtime.waitForOutput(/joined the fleet/)
      await waitFor(async () => (await statuses([id]))[0] === 'running', { timeoutMs: 20_000, what: 'running again' })
    } finally {
      await stack.stop()
    }
  })
})
