import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { simulatorCatalogue, type CatalogueModel } from '@roster/gateway'
import { OpenRouter } from '@openrouter/sdk'
import { NotFoundResponseError, UnauthorizedResponseError } from '@openrouter/sdk/models/errors'
import { useTestTenant } from '@roster/testing'
import { auth, buildTestApp, simEndpoint, simModel } from './helpers.js'

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
    // The gateway's envelope, its canonical type named (the intern lifecycle's 401 alone has no metadata).
    expect(res.json()).toEqual({
      error: { code: 401, message: 'a valid API key is required', metadata: { error_type: 'authentication' } },
    })
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

describe('the model directory through @openrouter/sdk (models, count, get, listForUser, providers, zdr endpoints)', () => {
  let directory: Awaited<ReturnType<typeof buildTestApp>>
  let client: OpenRouter
  const cheap = { input: '0.0000001', output: '0.0000002' }
  const dear = { input: '0.00001', output: '0.00003', reasoning: '0.00004', request: '0.001', image: '0.002' }
  const model = (id: string, extra: Partial<CatalogueModel> = {}): CatalogueModel => ({
    ...simModel(id, [simEndpoint('http://127.0.0.1:9')]),
    ...extra,
  })
  beforeAll(async () => {
    directory = await buildTestApp(
      env.t.db,
      {},
      {
        models: [
          model('acme/small', {
            pricing: cheap,
            context_length: 8_000,
            created: 100,
            capabilities: { tools: false, reasoning: false, images: false, caching: false },
          }),
          model('acme/large', { pricing: dear, context_length: 200_000, created: 300 }),
          model('other/mid', {
            created: 200,
            endpoints: [simEndpoint('http://127.0.0.1:9', 'openai-chat', { provider: 'private-vllm', zdr: true })],
          }),
        ],
      },
    )
    const address = await directory.listen({ port: 0, host: '127.0.0.1' })
    client = new OpenRouter({
      apiKey: env.tenant.keys.user,
      serverURL: `${address}/api/v1`,
      retryConfig: { strategy: 'none' },
    })
  })
  afterAll(async () => directory?.closeAll())
  const ids = (r: { result: { data: { id: string }[] } }) => r.result.data.map((m) => m.id)

  it('lists, filters, sorts and pages the models as the client asks; prices as decimal strings', async () => {
    const all = await client.models.list()
    expect(ids(all)).toEqual(['acme/small', 'acme/large', 'other/mid'])
    expect(all.result.totalCount).toBe(3)
    expect(all.result.data[1]!.pricing).toMatchObject({
      prompt: '0.00001',
      completion: '0.00003',
      internalReasoning: '0.00004',
      request: '0.001',
      image: '0.002',
    })
    expect(ids(await client.models.list({ sort: 'newest' }))).toEqual(['acme/large', 'other/mid', 'acme/small'])
    expect(ids(await client.models.list({ sort: 'pricing-low-to-high' }))[0]).toBe('acme/small')
    expect(ids(await client.models.list({ supportedParameters: 'tools' }))).toEqual(['acme/large', 'other/mid'])
    expect(ids(await client.models.list({ context: 100_000 }))).toEqual(['acme/large'])
    expect(ids(await client.models.list({ maxPrice: 1 }))).toEqual(['acme/small', 'other/mid'])
    expect(ids(await client.models.list({ providers: 'private-vllm' }))).toEqual(['other/mid'])
    expect(ids(await client.models.list({ q: 'LARGE' }))).toEqual(['acme/large'])
    expect(ids(await client.models.list({ zdr: 'true' }))).toEqual(['other/mid'])
    expect(ids(await client.models.list({ outputModalities: 'image' }))).toEqual([])
    // No model has benchmark data: a minimum on it selects none.
    expect(ids(await client.models.list({ minIntelligenceIndex: 10 }))).toEqual([])

    // The client's iterator walks the pages (limit 1) and stops at the empty one past the end.
    const seen: string[] = []
    for await (const page of await client.models.list({ limit: 1 })) seen.push(...ids(page))
    expect(seen).toEqual(['acme/small', 'acme/large', 'other/mid'])
  })

  it('counts, gets one model (a variant suffix names the same model), lists for the key, and lists providers and zdr endpoints', async () => {
    expect((await client.models.count()).data.count).toBe(3)
    expect((await client.models.count({ outputModalities: 'audio' })).data.count).toBe(0)
    expect((await client.models.get({ author: 'acme', slug: 'large' })).data.id).toBe('acme/large')
    expect((await client.models.get({ author: 'acme', slug: 'large:free' })).data.id).toBe('acme/large')
    expect(await client.models.get({ author: 'acme', slug: 'none' }).catch((e: unknown) => e)).toBeInstanceOf(
      NotFoundResponseError,
    )
    const mine = await client.models.listForUser({ bearer: env.tenant.keys.user })
    expect(ids(mine)).toEqual(['acme/small', 'acme/large', 'other/mid'])
    // Called without its bearer argument, the client sends no key: 401.
    expect(await client.models.listForUser({ bearer: '' }).catch((e: unknown) => e)).toBeInstanceOf(
      UnauthorizedResponseError,
    )
    expect((await client.providers.list()).data.map((p) => p.name)).toEqual(['private-vllm', 'upstream-sim'])
    const zdr = await client.endpoints.listZdrEndpoints()
    expect(zdr.data.map((e) => e.providerName)).toEqual(['private-vllm'])
  })

  it('refuses an order it cannot give, and odd paging, with 400; the whole list is one serialisation', async () => {
    for (const query of [
      'sort=throughput-high-to-low',
      'limit=0',
      'limit=1001',
      'offset=-1',
      'context=abc',
      'min_price=NaN',
    ]) {
      const res = await directory.inject({
        method: 'GET',
        url: `/api/v1/models?${query}`,
        headers: auth(env.tenant.keys.user),
      })
      expect(res.statusCode, query).toBe(400)
      expect(res.json().error.code).toBe(400)
    }
  })
})
