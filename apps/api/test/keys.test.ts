import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OpenRouter } from '@openrouter/sdk'
import {
  BadRequestResponseError,
  ForbiddenResponseError,
  NotFoundResponseError,
  UnauthorizedResponseError,
} from '@openrouter/sdk/models/errors'
import { createWorkspace } from '@roster/shared'
import { makeTenant, useTestTenant, waitFor } from '@roster/testing'
import { buildTestApp } from './helpers.js'

// API keys through the official client (governance-contract.md §1), against two API processes that
// share Redis and cache keys for a minute: a change on one applies at once on the other.
const env = useTestTenant()
type App = Awaited<ReturnType<typeof buildTestApp>>
let one: App
let two: App
let urls: [string, string]

beforeAll(async () => {
  const cached = { AUTH_CACHE_MS: '60000', QUEUE_PREFIX: `{t-keys-${Date.now()}}` }
  one = await buildTestApp(env.t.db, cached)
  two = await buildTestApp(env.t.db, cached)
  urls = [
    `${await one.listen({ port: 0, host: '127.0.0.1' })}/api/v1`,
    `${await two.listen({ port: 0, host: '127.0.0.1' })}/api/v1`,
  ]
})
afterAll(async () => {
  await one?.closeAll()
  await two?.closeAll()
})

const client = (apiKey: string, at = 0) =>
  new OpenRouter({ apiKey, serverURL: urls[at], retryConfig: { strategy: 'none' } })
const management = () => client(env.tenant.keys.management)
const failure = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error('expected a refusal')
    },
    (e: unknown) => e,
  )
/** Raw HTTP, for what the client checks before sending or hides. */
const raw = (method: string, path: string, key: string, body?: unknown, at = 0) =>
  fetch(`${urls[at]}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  })
const keyRows = () => env.t.db.apiKey.count()

describe('API keys through @openrouter/sdk', () => {
  it('creates a key with a limit and expiry: 201, every field of the ApiKey object, the secret once', async () => {
    const expiresAt = new Date(Date.now() + 86_400_000)
    const created = await management().apiKeys.create({
      requestBody: {
        name: 'ci',
        limit: 10.5,
        limitReset: 'monthly',
        includeByokInLimit: true,
        expiresAt,
        external: { user: 'u1' },
      },
    })
    expect(created.key).toMatch(/^sk-roster-v1-/)
    expect(created.data).toMatchObject({
      name: 'ci',
      disabled: false,
      limit: 10.5,
      limitRemaining: 10.5,
      limitReset: 'monthly',
      includeByokInLimit: true,
      usage: 0,
      usageDaily: 0,
      usageWeekly: 0,
      usageMonthly: 0,
      byokUsage: 0,
      externalUser: 'u1',
      workspaceId: env.tenant.workspaceId,
    })
    expect(created.data.hash).toMatch(/^[0-9a-f]{64}$/)
    expect(created.data.label).toMatch(/^sk-roster-v1-...\.\.\..{3}$/)
    expect(created.data.label).not.toContain(created.key.slice(16, -3))
    expect(created.data.expiresAt?.toISOString()).toBe(expiresAt.toISOString())
    // The secret is kept as its digest alone.
    const row = await env.t.db.apiKey.findFirstOrThrow({ where: { name: 'ci' } })
    expect(Buffer.from(row.hash).toString('hex')).toBe(created.data.hash)
    expect(JSON.stringify(row, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))).not.toContain(created.key)

    // It works as a bootstrap user key does: the gateway's models and an intern of its own member.
    const made = client(created.key)
    expect((await raw('GET', '/models', created.key)).status).toBe(200)
    const intern = await made.interns.createIntern({ createInternRequest: { name: 'keyed-intern' } })
    expect(intern.name).toBe('keyed-intern')
    expect(created.data.creatorUserId).toBeTruthy()

    // GET /key: its own settings, as CurrentKey.
    const me = await made.apiKeys.getCurrentKeyMetadata()
    expect(me.data).toMatchObject({
      label: created.data.label,
      limit: 10.5,
      limitRemaining: 10.5,
      limitReset: 'monthly',
      isManagementKey: false,
      isProvisioningKey: false,
      isFreeTier: false,
      workspaceId: env.tenant.workspaceId,
      organizationId: env.tenant.accountId,
      creatorUserId: created.data.creatorUserId,
      rateLimit: { requests: -1 },
    })
    const mine = await management().apiKeys.getCurrentKeyMetadata()
    expect(mine.data).toMatchObject({ isManagementKey: true, isProvisioningKey: true, limit: null })
  })

  it('makes a key for a named member of the workspace, and refuses a member of another', async () => {
    const named = await management().apiKeys.create({
      requestBody: { name: 'for-member', creatorUserId: env.tenant.userId },
    })
    expect(named.data.creatorUserId).toBe(env.tenant.userId)
    const stranger = await makeTenant(env.t.db)
    const before = await keyRows()
    const err = await failure(
      management().apiKeys.create({ requestBody: { name: 'x', creatorUserId: stranger.userId } }),
    )
    expect(err).toBeInstanceOf(BadRequestResponseError)
    expect(await keyRows()).toBe(before)
  })

  it('lists the workspace’s keys (disabled ones when asked), pages by offset, and another workspace of the account by id or slug', async () => {
    const tenant = await makeTenant(env.t.db)
    const admin = client(tenant.keys.management)
    for (let i = 0; i < 3; i++) await admin.apiKeys.create({ requestBody: { name: `k${i}` } })
    const disabled = await admin.apiKeys.create({ requestBody: { name: 'off' } })
    await admin.apiKeys.update({ hash: disabled.data.hash, requestBody: { disabled: true } })

    const names = (r: { data: { name: string }[] }) => r.data.map((k) => k.name)
    // The bootstrap user key (no name) is a user key of the workspace too.
    expect(names(await admin.apiKeys.list())).toEqual(['k2', 'k1', 'k0', ''])
    expect(names(await admin.apiKeys.list({ includeDisabled: true }))).toEqual(['off', 'k2', 'k1', 'k0', ''])
    expect(names(await admin.apiKeys.list({ offset: 2 }))).toEqual(['k0', ''])
    expect(names(await admin.apiKeys.list({ offset: 100 }))).toEqual([])
    // Every kind for an admin (kind=all; never an intern's), each saying which it is.
    const all = (await (await raw('GET', '/keys?kind=all', tenant.keys.management)).json()) as {
      data: { name: string; kind: string }[]
    }
    expect(all.data.map((k) => k.kind).sort()).toEqual(['management', 'organization', 'user', 'user', 'user', 'user'])
    expect((await raw('GET', '/keys?kind=intern', tenant.keys.management)).status).toBe(400)

    const { workspace_id } = await createWorkspace(env.t.db, { accountId: tenant.accountId })
    await admin.apiKeys.create({ requestBody: { name: 'elsewhere', workspaceId: workspace_id } })
    expect(names(await admin.apiKeys.list({ workspaceId: workspace_id }))).toEqual(['elsewhere'])
    // By its slug too, as the other groups take a workspace.
    const { slug } = (await env.t.db.workspace.findUniqueOrThrow({ where: { id: workspace_id } })) as { slug: string }
    expect(names(await admin.apiKeys.list({ workspaceId: slug }))).toEqual(['elsewhere'])
    const bySlug = await admin.apiKeys.create({ requestBody: { name: 'by slug', workspaceId: slug } })
    expect(bySlug.data.workspaceId).toBe(workspace_id)
    // Another account's workspace is not this account's to list or fill.
    expect(await failure(admin.apiKeys.list({ workspaceId: env.tenant.workspaceId }))).toBeInstanceOf(
      BadRequestResponseError,
    )
    expect(
      await failure(admin.apiKeys.create({ requestBody: { name: 'x', workspaceId: env.tenant.workspaceId } })),
    ).toBeInstanceOf(BadRequestResponseError)
  })

  it('says when each key was last used, written at most once a minute however busy the key', async () => {
    const made = await management().apiKeys.create({ requestBody: { name: 'used' } })
    const lastUsed = async () =>
      (await env.t.db.apiKey.findFirstOrThrow({ where: { name: 'used', revokedAt: null } })).lastUsedAt
    expect(await lastUsed()).toBeNull()
    expect((await raw('GET', '/key', made.key)).status).toBe(200)
    await waitFor(async () => (await lastUsed()) !== null, { what: 'the use noted' })
    const first = await lastUsed()
    for (let i = 0; i < 5; i++) expect((await raw('GET', '/key', made.key)).status).toBe(200)
    expect(await lastUsed()).toEqual(first)
    const listed = (await (await raw('GET', '/keys?q=used', env.tenant.keys.management)).json()) as {
      data: { name: string; last_used_at: string | null }[]
    }
    expect(listed.data.find((k) => k.name === 'used')!.last_used_at).toBe(first!.toISOString())
  })

  it('applies a change at once on every process: disabled, enabled, limit cleared; deleted for good', async () => {
    const created = await management().apiKeys.create({ requestBody: { name: 'toggle', limit: 5 } })
    const { hash } = created.data
    // Both processes have it cached.
    for (const at of [0, 1]) expect((await raw('GET', '/key', created.key, undefined, at)).status).toBe(200)

    const off = await management().apiKeys.update({ hash, requestBody: { disabled: true } })
    expect(off.data.disabled).toBe(true)
    expect(off.data.updatedAt).not.toBeNull()
    // Refused on this process at once, and on the other as soon as its event arrives (not after its minute of cache).
    expect((await raw('GET', '/key', created.key, undefined, 0)).status).toBe(401)
    await waitFor(async () => (await raw('GET', '/key', created.key, undefined, 1)).status === 401, {
      timeoutMs: 5_000,
      intervalMs: 20,
      what: 'the other process refusing the disabled key',
    })

    const on = await management().apiKeys.update({
      hash,
      requestBody: { disabled: false, limit: null, limitReset: null },
    })
    expect(on.data).toMatchObject({
      disabled: false,
      limit: null,
      limitRemaining: null,
      limitReset: null,
      name: 'toggle',
    })
    for (const at of [0, 1]) expect((await raw('GET', '/key', created.key, undefined, at)).status).toBe(200)

    expect(await management().apiKeys.delete({ hash })).toEqual({ deleted: true })
    expect((await raw('GET', '/key', created.key, undefined, 0)).status).toBe(401)
    await waitFor(async () => (await raw('GET', '/key', created.key, undefined, 1)).status === 401, {
      timeoutMs: 5_000,
      intervalMs: 20,
      what: 'the other process refusing the deleted key',
    })
    expect(await failure(management().apiKeys.get({ hash }))).toBeInstanceOf(NotFoundResponseError)
    expect(await failure(management().apiKeys.delete({ hash }))).toBeInstanceOf(NotFoundResponseError)
  })

  it('stops a key at its expiry, even where it is cached', async () => {
    const created = await management().apiKeys.create({
      requestBody: { name: 'brief', expiresAt: new Date(Date.now() + 1_500) },
    })
    expect((await raw('GET', '/key', created.key)).status).toBe(200)
    await waitFor(async () => (await raw('GET', '/key', created.key)).status === 401, {
      timeoutMs: 5_000,
      intervalMs: 50,
      what: 'the expired key refused',
    })
  })

  it('answers keys of another account, and ids that are no key, 404; a user key 403 on create and 401 elsewhere', async () => {
    const stranger = await makeTenant(env.t.db)
    const theirs = await client(stranger.keys.management).apiKeys.create({ requestBody: { name: 'theirs' } })
    const admin = management()
    for (const hash of [theirs.data.hash, '0'.repeat(64), 'not-a-hash', 'a/b', '../keys'])
      expect(await failure(admin.apiKeys.get({ hash }))).toBeInstanceOf(NotFoundResponseError)
    expect(
      await failure(admin.apiKeys.update({ hash: theirs.data.hash, requestBody: { disabled: true } })),
    ).toBeInstanceOf(NotFoundResponseError)
    expect(await failure(admin.apiKeys.delete({ hash: theirs.data.hash }))).toBeInstanceOf(NotFoundResponseError)
    expect((await client(theirs.key).apiKeys.getCurrentKeyMetadata()).data.limit).toBeNull()

    const user = client(env.tenant.keys.user)
    expect(await failure(user.apiKeys.create({ requestBody: { name: 'x' } }))).toBeInstanceOf(ForbiddenResponseError)
    expect(await failure(user.apiKeys.list())).toBeInstanceOf(UnauthorizedResponseError)
    expect(await failure(user.apiKeys.get({ hash: theirs.data.hash }))).toBeInstanceOf(UnauthorizedResponseError)
    expect(await failure(client('sk-roster-v1-nope').apiKeys.getCurrentKeyMetadata())).toBeInstanceOf(
      UnauthorizedResponseError,
    )
  })

  it('refuses a management key on every door with 403 before reading the body; an inference key goes on', async () => {
    const body = { model: 'roster-sim/chat', input: 'hi', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }
    for (const path of ['/responses', '/responses/compact', '/chat/completions', '/messages']) {
      const res = await raw('POST', path, env.tenant.keys.management, body)
      const refusal = await res.json()
      expect(res.status, path).toBe(403)
      expect(JSON.stringify(refusal), path).toContain('management key cannot make model calls')
      // An inference key passes the gate (this catalogue serves no model, so it is the model that is refused).
      expect((await raw('POST', path, env.tenant.keys.user, body)).status, path).not.toBe(403)
    }
  })

  it('refuses unfriendly bodies with 400 in the standard envelope, creating and changing nothing', async () => {
    const target = await management().apiKeys.create({ requestBody: { name: 'steady', limit: 1 } })
    const soon = new Date(Date.now() + 3_600_000).toISOString()
    const creates: unknown[] = [
      {},
      { name: '' },
      { name: '   ' },
      { name: 'x'.repeat(201) },
      { name: 'x', limit: -1 },
      { name: 'x', limit: 'NaN' },
      { name: 'x', limit: 1e308 },
      { name: 'x', limit: 1_000_000_001 },
      { name: 'x', limit_reset: 'yearly' },
      { name: 'x', expires_at: '2020-01-01T00:00:00Z' },
      { name: 'x', expires_at: soon.slice(0, 19) },
      { name: 'x', expires_at: soon.slice(0, 16) + 'Z' },
      { name: 'x', expires_at: '2030-02-30T00:00:00Z' },
      { name: 'x', external: { user: 'u', api_key: 'short' } },
      { name: 'x', workspace_id: 'not-a-uuid' },
      { name: 'x', creator_user_id: 'not-a-uuid' },
      { name: 'x', is_management_key: true },
      { name: 'x\u0000y' },
      '{"name": "x"',
      '[]',
    ]
    const before = await keyRows()
    for (const body of creates) {
      const res = await raw('POST', '/keys', env.tenant.keys.management, body)
      const text = await res.text()
      expect(res.status, `${JSON.stringify(body)}: ${text}`).toBe(400)
      expect(JSON.parse(text).error).toMatchObject({ code: 400, message: expect.any(String) })
    }
    expect(await keyRows()).toBe(before)

    const updates: unknown[] = [
      { limit: -5 },
      { disabled: 'yes' },
      { name: '' },
      { expires_at: soon },
      { limit_reset: 'hourly' },
    ]
    for (const body of updates) {
      const res = await raw('PATCH', `/keys/${target.data.hash}`, env.tenant.keys.management, body)
      expect(res.status, JSON.stringify(body)).toBe(400)
    }
    expect((await management().apiKeys.get({ hash: target.data.hash })).data).toMatchObject({
      name: 'steady',
      limit: 1,
      disabled: false,
    })
    // A body far past a key's size is refused before it is read.
    expect((await raw('POST', '/keys', env.tenant.keys.management, { name: 'x'.repeat(100_000) })).status).toBe(413)
  })
})
