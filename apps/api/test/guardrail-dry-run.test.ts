import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Catalogue } from '@roster/gateway'
import { useTestTenant } from '@roster/testing'
import { buildTestApp, simEndpoint, simModel } from './helpers.js'

// The guardrail dry run (issue 47): would this request pass the guardrails on a key, and which rule
// decides, answered by the engine's own setup with no model called and nothing spent.
const env = useTestTenant()
let app: Awaited<ReturnType<typeof buildTestApp>>
let base: string
const NOWHERE = 'http://127.0.0.1:9' // never called: a dry run reaches no provider

beforeAll(async () => {
  const catalogue: Catalogue = {
    models: [
      simModel('sim/chat', [simEndpoint(NOWHERE, 'openai-chat')]),
      simModel('sim/other', [simEndpoint(NOWHERE, 'openai-chat')]),
    ],
  }
  app = await buildTestApp(env.t.db, {}, catalogue)
  base = `${await app.listen({ port: 0, host: '127.0.0.1' })}/api/v1`
})
afterAll(async () => {
  await app?.closeAll()
})

const post = async (key: string, path: string, body: object) => {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  return { status: res.status, body: (await res.json()) as any }
}

describe('a guardrail dry run', () => {
  it('names the guardrail and rule that refuse a request, and what a passing one meets, calling no model', async () => {
    const admin = env.tenant.keys.management
    const key = await post(admin, '/keys', { name: 'dry-run subject' })
    expect(key.status).toBe(201)
    const hash = key.body.data.hash as string
    const g = await post(admin, '/guardrails', {
      name: 'careful',
      allowed_models: ['sim/chat'],
      content_filters: [
        { pattern: 'secret-project', action: 'block', label: 'project name' },
        { pattern: '\\d{4}-\\d{4}', action: 'redact', label: '[card]' },
      ],
    })
    expect(g.status, JSON.stringify(g.body)).toBe(201)
    const assigned = await post(admin, `/guardrails/${g.body.data.id}/assignments/keys`, { key_hashes: [hash] })
    expect(assigned.status).toBe(200)

    // As the key itself: a block filter decides.
    const blocked = await post(key.body.key, '/guardrails/dry-run', {
      request: { model: 'sim/chat', input: 'tell me about secret-project' },
    })
    expect(blocked.status).toBe(200)
    expect(blocked.body).toMatchObject({
      allowed: false,
      status: 403,
      guardrails: [{ name: 'careful' }],
      matches: [{ guardrail: 'careful', filter: 'project name', action: 'block' }],
    })
    expect(blocked.body.reason).toMatch(/careful.*project name/)

    // A model the guardrail does not allow.
    const model = await post(key.body.key, '/guardrails/dry-run', { request: { model: 'sim/other', input: 'hi' } })
    expect(model.body).toMatchObject({ allowed: false, status: 403 })
    expect(model.body.reason).toContain('careful')

    // Allowed, with the redaction it would get and where it would go; asked by the management key for that key.
    const passes = await post(admin, '/guardrails/dry-run', {
      key_hash: hash,
      request: { model: 'sim/chat', input: 'my card is 1234-5678' },
    })
    expect(passes.body).toMatchObject({
      allowed: true,
      redacted: true,
      matches: [{ guardrail: 'careful', filter: '[card]', action: 'redact' }],
      endpoints: [{ model: 'sim/chat', provider: 'upstream-sim' }],
    })
    // Nothing was spent or recorded.
    expect(await env.t.db.generation.count()).toBe(0)
  })

  it('refuses another key to a member key, an unknown key, and a request that is not one', async () => {
    const user = env.tenant.keys.user
    expect(
      (
        await post(user, '/guardrails/dry-run', {
          key_hash: 'a'.repeat(64),
          request: { model: 'sim/chat', input: 'x' },
        })
      ).status,
    ).toBe(403)
    expect(
      (
        await post(env.tenant.keys.management, '/guardrails/dry-run', {
          key_hash: 'a'.repeat(64),
          request: { model: 'sim/chat', input: 'x' },
        })
      ).status,
    ).toBe(404)
    expect((await post(user, '/guardrails/dry-run', { request: { input: 5 } })).status).toBe(400)
    expect((await post(user, '/guardrails/dry-run', { nope: true })).status).toBe(400)
    // What a real request would meet otherwise is answered the same way: an unknown preset or model.
    const preset = await post(user, '/guardrails/dry-run', { request: { model: '@preset/nope', input: 'x' } })
    expect(preset.body).toMatchObject({ allowed: false, status: 404 })
    expect(preset.body.reason).toContain('no preset nope')
    // No guardrail on the member's key: allowed, with the endpoints.
    const free = await post(user, '/guardrails/dry-run', { request: { model: 'sim/other', input: 'hi' } })
    expect(free.body).toMatchObject({ allowed: true, guardrails: [], matches: [] })
  })
})
