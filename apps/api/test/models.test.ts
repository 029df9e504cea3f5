import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { simulatorCatalogue } from '@roster/gateway'
import { OpenRouter } from '@openrouter/sdk'
import { useTestTenant } from '@roster/testing'
import { auth, buildTestApp } from './helpers.js'

const env = useTestTenant()
let sut: Awaited<ReturnType<typeof buildTestApp>>
beforeAll(async () => {
  sut = await buildTestApp(env.t.db, {}, simulatorCatalogue('http://127.0.0.1:9'))
})
afterAll(async () => sut?.closeAll())

describe('GET /api/v1/models', () => {
  it('lists the catalogue to any valid key, management keys included', async () => {
    for (const key of [env.tenant.keys.user, env.tenant.keys.organization, env.tenant.keys.management]) {
      const res = await sut.inject({ method: 'GET', url: '/api/v1/models', headers: auth(key) })
      expect(res.statusCode).toBe(200)
      const body = res.json()
      expect(body.total_count).toBe(3)
      expect(body.data.map((m: { id: string }) => m.id)).toContain('roster-sim/messages')
      expect(JSON.stringify(body)).not.toMatch(/api_key_env|base_url/)
    }
  })

  it('answers 401 in the standard error shape without a valid key', async () => {
    const res = await sut.inject({ method: 'GET', url: '/api/v1/models' })
    expect(res.statusCode).toBe(401)
    expect(res.json()).toEqual({ error: { code: 401, message: 'a valid API key is required' } })
  })
})

describe('GET /api/v1/models/{author}/{slug}/endpoints', () => {
  it('lists a model’s endpoints in the official client’s shape (the link each listed model gives)', async () => {
    const address = await sut.listen({ port: 0, host: '127.0.0.1' })
    const client = new OpenRouter({
      apiKey: env.tenant.keys.user,
      serverURL: `${address}/api/v1`,
      retryConfig: { strategy: 'none' },
    })
    const res = await client.endpoints.list({ author: 'roster-sim', slug: 'messages' })
    expect(res.data).toMatchObject({ id: 'roster-sim/messages', architecture: { inputModalities: ['text', 'image'] } })
    expect(res.data.endpoints).toHaveLength(1)
    expect(res.data.endpoints[0]).toMatchObject({
      providerName: 'upstream-sim',
      contextLength: 128_000,
      pricing: { prompt: '0.000001', completion: '0.000002' },
      supportsImplicitCaching: true,
    })
    const listed = (
      await sut.inject({ method: 'GET', url: '/api/v1/models', headers: auth(env.tenant.keys.user) })
    ).json()
    const link = listed.data.find((m: { id: string }) => m.id === 'roster-sim/messages').links.details
    const followed = await sut.inject({ method: 'GET', url: link, headers: auth(env.tenant.keys.user) })
    expect(followed.statusCode).toBe(200)
    expect(JSON.stringify(followed.json())).not.toMatch(/api_key_env|base_url|127\.0\.0\.1/)
    const missing = await sut.inject({
      method: 'GET',
      url: '/api/v1/models/nobody/none/endpoints',
      headers: auth(env.tenant.keys.user),
    })
    expect(missing.statusCode).toBe(404)
  })
})
