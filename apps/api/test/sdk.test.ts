import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OpenRouter } from '@openrouter/sdk'
import { InternLifecycleError } from '@openrouter/sdk/models/errors'
import { startStack, useTestTenant, waitFor, type Stack } from '@roster/testing'

// The official client, unchanged, against the real processes. Retries off: a 5xx would otherwise be
// retried for up to an hour.
const env = useTestTenant()
let stack: Stack
let client: OpenRouter

beforeAll(async () => {
  stack = await startStack({ databaseUrl: env.t.url })
  client = new OpenRouter({ apiKey: env.tenant.keys.user, serverURL: stack.apiUrl, retryConfig: { strategy: 'none' } })
})
afterAll(async () => stack?.stop())

describe('@openrouter/sdk against Roster', () => {
  it('creates an intern and polls it until running', async () => {
    const created = await client.interns.createIntern({
      idempotencyKey: 'sdk-create-1',
      createInternRequest: { name: 'sdk-helper', instructions: 'Be brief.', provision: true },
    })
    expect(created).toMatchObject({ name: 'sdk-helper', status: 'queued', instructions: 'Be brief.', progress: null })

    const seen = new Set<string>()
    await waitFor(
      async () => {
        const now = await client.interns.getIntern({ internId: created.id })
        seen.add(now.status)
        return now.status === 'running'
      },
      { intervalMs: 5, what: 'intern running through the SDK' },
    )
    const running = await client.interns.getIntern({ internId: created.id })
    expect(running.hostname).toMatch(/^sdk-helper-/)
    expect(running.progress).toBeNull()
    expect(running.vaultId).toBe(created.vaultId)
    expect(seen.has('running')).toBe(true)
  })

  it('replays a create with the same Idempotency-Key (the SDK accepts 200 as well as 201)', async () => {
    const request = { idempotencyKey: 'sdk-replay-1', createInternRequest: { name: 'sdk-replay' } }
    const first = await client.interns.createIntern(request)
    const again = await client.interns.createIntern(request)
    expect(again.id).toBe(first.id)
    expect(again.status).toBe('stopped')
  })

  it('surfaces our errors as the typed InternLifecycleError with reason and retryable', async () => {
    await client.interns.createIntern({ idempotencyKey: 'sdk-dup-1', createInternRequest: { name: 'sdk-dup' } })
    const err = await client.interns
      .createIntern({ idempotencyKey: 'sdk-dup-2', createInternRequest: { name: 'sdk-dup' } })
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(InternLifecycleError)
    expect((err as InternLifecycleError).statusCode).toBe(409)
    expect((err as InternLifecycleError).error.metadata).toEqual({ reason: 'name_taken', retryable: false })

    const org = new OpenRouter({
      apiKey: env.tenant.keys.organization,
      serverURL: stack.apiUrl,
      retryConfig: { strategy: 'none' },
    })
    const forbidden = await org.interns
      .createIntern({ createInternRequest: { name: 'sdk-org' } })
      .catch((e: unknown) => e)
    expect((forbidden as InternLifecycleError).error.metadata?.reason).toBe('no_acting_user')

    const missing = await client.interns
      .getIntern({ internId: '00000000-0000-4000-8000-000000000000' })
      .catch((e: unknown) => e)
    expect(missing).toBeInstanceOf(InternLifecycleError)
    expect((missing as InternLifecycleError).statusCode).toBe(404)
  })
})
