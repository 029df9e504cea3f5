import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { Intern, InternLifecycleError } from '@roster/shared'
import { type Tenant, useTestTenant } from '@roster/testing'
import { buildTestApp } from './helpers.js'

const env = useTestTenant()
let sut: Awaited<ReturnType<typeof buildTestApp>>

beforeAll(async () => {
  sut = await buildTestApp(env.t.db, { INTERN_LIMIT_PER_MEMBER: '100000', REGIONAL_HOSTS: 'eu.roster.test' })
})
afterAll(async () => {
  await sut?.closeAll()
})

const printable = (max: number) =>
  fc.string({ unit: fc.constantFrom(...'abcXYZ019 -_./:;=,"\'{}[]'.split('')), maxLength: max })
const nameLike = fc.oneof(fc.stringMatching(/^[a-z][a-z0-9]{0,6}(-[a-z0-9]{1,4})?$/), fc.string({ maxLength: 20 }))
const bodyLike = () =>
  fc.oneof(
    fc
      .record(
        {
          name: nameLike,
          description: fc.option(fc.string({ maxLength: 30 })),
          instructions: fc.option(fc.string({ maxLength: 30 })),
          provision: fc.oneof(fc.boolean(), fc.constant('true'), fc.integer()),
          vault_id: fc.oneof(fc.uuid(), fc.string({ maxLength: 10 })),
          workspace_id: fc.oneof(fc.constant(env.tenant.workspaceId), fc.uuid(), fc.constant(null)),
          extra: fc.jsonValue(),
        },
        { requiredKeys: [] },
      )
      .map((b) => JSON.stringify(b)),
    fc.jsonValue().map((v) => JSON.stringify(v)),
    fc.string({ maxLength: 60 }),
  )
const headersLike = fc.record(
  {
    'content-type': fc.constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'text/plain',
      'application/xml',
      '',
    ),
    'idempotency-key': printable(300),
    authorization: fc.constantFrom('user', 'organization', 'management', 'Bearer nope', 'Basic x', ''),
    host: fc.constantFrom('localhost', 'eu.roster.test', 'EU.ROSTER.TEST:443'),
  },
  { requiredKeys: [] },
)

describe('POST /api/v1/interns under random input', () => {
  it('never answers 5xx, and every answer has its documented shape', async () => {
    await fc.assert(
      fc.asyncProperty(bodyLike(), headersLike, async (payload, rawHeaders) => {
        const headers: Record<string, string> = {}
        for (const [k, v] of Object.entries(rawHeaders)) {
          if (v === '' && k !== 'idempotency-key') continue
          headers[k] =
            k === 'authorization' && v in env.tenant.keys ? `Bearer ${env.tenant.keys[v as keyof Tenant['keys']]}` : v
        }
        const res = await sut.inject({ method: 'POST', url: '/api/v1/interns', headers, payload })
        expect(res.statusCode).toBeLessThan(500)
        expect(String(res.headers['content-type'])).toMatch(/^application\/json/)
        const body = res.json()
        if (res.statusCode >= 400) InternLifecycleError.parse(body)
        else Intern.strict().parse(body)
      }),
      { numRuns: 400 },
    )
  })
})
