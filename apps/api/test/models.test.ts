import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { simulatorCatalogue } from '@roster/gateway'
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
