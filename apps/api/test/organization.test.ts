import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OpenRouter } from '@openrouter/sdk'
import { UnauthorizedResponseError } from '@openrouter/sdk/models/errors'
import { bootstrap, createUser } from '@roster/shared'
import { makeTenant, useTestTenant } from '@roster/testing'
import { buildTestApp } from './helpers.js'

// The organization's members through the official client (governance-contract.md §12): every
// member of the account's workspaces, as the operator described them, paged; no other account's.
const env = useTestTenant()
let app: Awaited<ReturnType<typeof buildTestApp>>
let base: string

beforeAll(async () => {
  app = await buildTestApp(env.t.db)
  base = `${await app.listen({ port: 0, host: '127.0.0.1' })}/api/v1`
})
afterAll(async () => {
  await app?.closeAll()
})

const sdk = (key: string) => new OpenRouter({ apiKey: key, serverURL: base, retryConfig: { strategy: 'none' } })

describe('organization members', () => {
  it('lists every member of the account, with the profile the operator gave, paged', async () => {
    const boot = await bootstrap(env.t.db)
    const admin = sdk(boot.keys.management)
    const lab = await admin.workspaces.create({ createWorkspaceRequest: { name: 'Lab', slug: 'lab' } })
    const { user_id: grace } = await createUser(env.t.db, {
      workspaceId: lab.data.id,
      email: 'grace@example.com',
      firstName: 'Grace',
      lastName: 'Hopper',
    })
    await makeTenant(env.t.db) // another account's members are not listed
    const all = await admin.organization.listMembers()
    expect(all.result.totalCount).toBe(2)
    expect(all.result.data).toEqual([
      { id: boot.user_id, email: '', firstName: null, lastName: null, role: 'org:admin' },
      { id: grace, email: 'grace@example.com', firstName: 'Grace', lastName: 'Hopper', role: 'org:member' },
    ])
    const page = await admin.organization.listMembers({ limit: 1, offset: 1 })
    expect(page.result.data.map((m) => m.id)).toEqual([grace])
    expect((await admin.organization.listMembers({ limit: 1, offset: 9 })).result.data).toEqual([])
    await expect(sdk(boot.keys.user).organization.listMembers()).rejects.toBeInstanceOf(UnauthorizedResponseError)
  })
})
