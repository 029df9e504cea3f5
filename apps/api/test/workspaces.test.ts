import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OpenRouter } from '@openrouter/sdk'
import {
  BadRequestResponseError,
  ForbiddenResponseError,
  NotFoundResponseError,
  UnauthorizedResponseError,
} from '@openrouter/sdk/models/errors'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import type { Catalogue } from '@roster/gateway'
import { createUser, createApiKey } from '@roster/shared'
import { makeTenant, makeUserKey, useTestTenant, waitFor } from '@roster/testing'
import type { GenerationDrain } from '../../worker/src/generation-drain.js'
import { buildTestApp, startDrain, simEndpoint, simModel } from './helpers.js'
import type { CreateWorkspaceRequest, WorkspaceBudgetInterval } from '@openrouter/sdk/models'

// Workspaces through the official client (governance-contract.md §2): their settings, members and
// budgets, each operation with the statuses the client knows; a budget refuses the workspace's
// inference once spent (402), a change applies at once though API processes cache keys for a
// minute, and a disabled server tool is refused (403).
const env = useTestTenant()
const prefix = `{t-ws-${Date.now()}}`
let sim: Simulator
let slow: Simulator
let app: Awaited<ReturnType<typeof buildTestApp>>
let other: Awaited<ReturnType<typeof buildTestApp>>
let drain: GenerationDrain
let base: string
let otherBase: string

beforeAll(async () => {
  sim = await startSimulator({ replyTokens: 6 })
  slow = await startSimulator({ replyTokens: 40, tokensPerSecond: 40 })
  const catalogue: Catalogue = {
    models: [
      simModel('sim/chat', [simEndpoint(sim.url, 'openai-chat')]),
      simModel('sim/slow', [simEndpoint(slow.url, 'openai-chat')]),
      simModel('sim/search', [simEndpoint(sim.url, 'openai-responses', { web_search: true })]),
    ],
  }
  // Two API processes that trust a cached key for a minute: changes must reach both through events.
  const settings = { QUEUE_PREFIX: prefix, AUTH_CACHE_MS: '60000' }
  app = await buildTestApp(env.t.db, settings, catalogue)
  other = await buildTestApp(env.t.db, settings, catalogue)
  base = `${await app.listen({ port: 0, host: '127.0.0.1' })}/api/v1`
  otherBase = `${await other.listen({ port: 0, host: '127.0.0.1' })}/api/v1`
  drain = startDrain(env.t.db, env.t.url, prefix)
})
afterAll(async () => {
  await drain?.stop()
  await app?.closeAll()
  await other?.closeAll()
  await Promise.all([sim?.close(), slow?.close()])
})

const sdk = (key: string, url = base) =>
  new OpenRouter({ apiKey: key, serverURL: url, retryConfig: { strategy: 'none' } })
const fails = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  )
const chat = async (key: string, url = base, extra: object = {}) => {
  const res = await fetch(`${url}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'sim/chat', messages: [{ role: 'user', content: 'hi' }], ...extra }),
  })
  return { status: res.status, text: await res.text() }
}

describe('workspaces', () => {
  it('creates, lists, reads (by id or slug), changes and deletes a workspace', async () => {
    const t = await makeTenant(env.t.db)
    const admin = sdk(t.keys.management)
    const made = await admin.workspaces.create({
      createWorkspaceRequest: {
        name: 'Research',
        slug: 'research',
        description: 'the lab',
        defaultTextModel: 'sim/chat',
        ioLoggingSamplingRate: 0.5,
        disabledServerTools: ['openrouter:web_fetch'],
      },
    })
    expect(made.data).toMatchObject({
      name: 'Research',
      slug: 'research',
      description: 'the lab',
      defaultTextModel: 'sim/chat',
      defaultImageModel: null,
      ioLoggingSamplingRate: 0.5,
      isObservabilityIoLoggingEnabled: false,
      disabledServerTools: ['openrouter:web_fetch'],
      includeByokInBudgets: false,
      updatedAt: null,
    })
    expect(made.data.defaultGuardrailId).toMatch(/^[0-9a-f-]{36}$/)
    const id = made.data.id
    expect((await admin.workspaces.get({ id: 'research' })).data.id).toBe(id)
    expect((await admin.workspaces.get({ id })).data.slug).toBe('research')
    const list = await admin.workspaces.list()
    expect(list.result.totalCount).toBe(2)
    // The default workspace first.
    expect(list.result.data.map((w) => w.slug)).toEqual(['default', 'research'])
    const page = await admin.workspaces.list({ limit: 1, offset: 1 })
    expect(page.result.data.map((w) => w.slug)).toEqual(['research'])
    expect((await admin.workspaces.list({ limit: 1, offset: 5 })).result.data).toEqual([])

    const changed = await admin.workspaces.update({
      id: 'research',
      updateWorkspaceRequest: { name: 'Lab', description: null, disabledServerTools: [] },
    })
    expect(changed.data).toMatchObject({ name: 'Lab', slug: 'research', description: null, disabledServerTools: null })
    expect(changed.data.updatedAt).not.toBeNull()

    // A member whose own workspace it is holds a key elsewhere: deleting the workspace would delete it.
    const { user_id } = await createUser(env.t.db, { workspaceId: id })
    const elsewhere = await admin.apiKeys.create({ requestBody: { name: 'held elsewhere', creatorUserId: user_id } })
    expect(await fails(admin.workspaces.delete({ id }))).toBeInstanceOf(BadRequestResponseError)
    expect((await chat(elsewhere.key)).status).toBe(200)
    await admin.apiKeys.delete({ hash: elsewhere.data.hash })
    expect(await admin.workspaces.delete({ id })).toEqual({ deleted: true })
    expect(await fails(admin.workspaces.get({ id }))).toBeInstanceOf(NotFoundResponseError)
  })

  it('refuses bad input, other accounts and other keys, changing nothing', async () => {
    const t = await makeTenant(env.t.db)
    const admin = sdk(t.keys.management)
    await admin.workspaces.create({ createWorkspaceRequest: { name: 'One', slug: 'one' } })
    for (const body of [
      { name: 'Two', slug: 'one' }, // taken
      { name: 'Two', slug: 'Not-Lower' },
      { name: 'Two', slug: 'double--hyphen' },
      { name: 'Two', slug: '-lead' },
      { name: '', slug: 'two' },
      { name: 'Two', slug: 'two', defaultTextModel: 'no/such-model' },
      { name: 'Two', slug: 'two', ioLoggingSamplingRate: 2 },
      { name: 'Two', slug: 'two', disabledServerTools: ['openrouter:teleport'] },
    ])
      expect(
        // Refused by the server: some of these the client's types would not let through.
        await fails(admin.workspaces.create({ createWorkspaceRequest: body as CreateWorkspaceRequest })),
        JSON.stringify(body),
      ).toBeInstanceOf(BadRequestResponseError)
    // Raw HTTP for what the client would not send: unknown fields, broken JSON.
    for (const raw of ['{"name":"x","slug":"x","color":"red"}', '{"name":', '[]'])
      expect(
        (
          await fetch(`${base}/workspaces`, {
            method: 'POST',
            headers: { authorization: `Bearer ${t.keys.management}`, 'content-type': 'application/json' },
            body: raw,
          })
        ).status,
      ).toBe(400)
    expect((await admin.workspaces.list()).result.totalCount).toBe(2)
    // Another account's workspace is none; other keys may not manage workspaces.
    const stranger = await makeTenant(env.t.db)
    expect(await fails(sdk(stranger.keys.management).workspaces.get({ id: 'one' }))).toBeInstanceOf(
      NotFoundResponseError,
    )
    expect(await fails(sdk(t.keys.user).workspaces.list())).toBeInstanceOf(UnauthorizedResponseError)
    expect(
      await fails(sdk(t.keys.user).workspaces.create({ createWorkspaceRequest: { name: 'x', slug: 'x' } })),
    ).toBeInstanceOf(ForbiddenResponseError)
    // The default workspace needs confirmation, and one with active keys cannot go.
    const ownId = (await admin.workspaces.get({ id: 'default' })).data.id
    expect(await fails(admin.workspaces.delete({ id: ownId }))).toBeInstanceOf(BadRequestResponseError)
    expect(await fails(admin.workspaces.delete({ id: ownId, confirmDefaultWorkspaceDeletion: true }))).toBeInstanceOf(
      BadRequestResponseError,
    )
    expect((await admin.workspaces.get({ id: 'default' })).data.id).toBe(ownId)
  })

  it('lists, adds and removes members; a member with active keys stays', async () => {
    const t = await makeTenant(env.t.db)
    const admin = sdk(t.keys.management)
    const lab = (await admin.workspaces.create({ createWorkspaceRequest: { name: 'Lab', slug: 'lab' } })).data
    // The default workspace holds every member of the account.
    const all = await admin.workspaces.listMembers({ id: 'default' })
    expect(all.result.data.map((m) => m.userId)).toContain(t.userId)
    expect((await admin.workspaces.listMembers({ id: 'lab' })).result.totalCount).toBe(0)
    const added = await admin.workspaces.bulkAddMembers({
      id: 'lab',
      bulkAddWorkspaceMembersRequest: { userIds: [t.userId, t.userId] },
    })
    expect(added.addedCount).toBe(1)
    expect(added.data[0]).toMatchObject({ workspaceId: lab.id, userId: t.userId, role: 'member' })
    expect(
      (await admin.workspaces.bulkAddMembers({ id: 'lab', bulkAddWorkspaceMembersRequest: { userIds: [t.userId] } }))
        .addedCount,
    ).toBe(0)
    expect((await admin.workspaces.listMembers({ id: 'lab' })).result.data.map((m) => m.userId)).toEqual([t.userId])
    // A member of the workspace can be a key's creator there.
    const key = await admin.apiKeys.create({
      requestBody: { name: 'lab key', workspaceId: lab.id, creatorUserId: t.userId },
    })
    expect(
      await fails(
        admin.workspaces.bulkRemoveMembers({ id: 'lab', bulkRemoveWorkspaceMembersRequest: { userIds: [t.userId] } }),
      ),
    ).toBeInstanceOf(BadRequestResponseError)
    await admin.apiKeys.delete({ hash: key.data.hash })
    expect(
      (
        await admin.workspaces.bulkRemoveMembers({
          id: 'lab',
          bulkRemoveWorkspaceMembersRequest: { userIds: [t.userId] },
        })
      ).removedCount,
    ).toBe(1)
    // Strangers are not the account's to add.
    const stranger = await makeTenant(env.t.db)
    for (const userIds of [[stranger.userId], ['not-a-uuid']])
      expect(
        await fails(admin.workspaces.bulkAddMembers({ id: 'lab', bulkAddWorkspaceMembersRequest: { userIds } })),
      ).toBeInstanceOf(BadRequestResponseError)
  })
})

describe('budgets', () => {
  it('sets, reads, lists and deletes budgets, limits strictly decreasing as the interval narrows', async () => {
    const t = await makeTenant(env.t.db)
    const admin = sdk(t.keys.management)
    const set = await admin.workspaces.setBudget({
      workspaceRef: 'default',
      interval: 'monthly',
      upsertWorkspaceBudgetRequest: { limitUsd: 100, includeByokInBudgets: true },
    })
    expect(set.data).toMatchObject({ limitUsd: 100, resetInterval: 'monthly' })
    expect(set.includeByokInBudgets).toBe(true)
    await admin.workspaces.setBudget({
      workspaceRef: 'default',
      interval: 'lifetime',
      upsertWorkspaceBudgetRequest: { limitUsd: 1000 },
    })
    const lifetime = await admin.workspaces.getBudget({ workspaceRef: 'default', interval: 'lifetime' })
    expect(lifetime.data.resetInterval).toBeNull()
    expect(lifetime.includeByokInBudgets).toBe(true)
    for (const [interval, limitUsd] of [
      ['weekly', 100], // not below monthly
      ['monthly', 1000], // not below lifetime
      ['daily', 0],
      ['yearly', 5],
    ] as const)
      expect(
        await fails(
          admin.workspaces.setBudget({
            workspaceRef: 'default',
            interval: interval as WorkspaceBudgetInterval,
            upsertWorkspaceBudgetRequest: { limitUsd },
          }),
        ),
        `${interval} ${limitUsd}`,
      ).toBeInstanceOf(BadRequestResponseError)
    const list = await admin.workspaces.listBudgets({ workspaceRef: 'default' })
    expect(list.data.map((b) => [b.resetInterval, b.limitUsd])).toEqual([
      ['monthly', 100],
      [null, 1000],
    ])
    expect(await fails(admin.workspaces.getBudget({ workspaceRef: 'default', interval: 'daily' }))).toBeInstanceOf(
      NotFoundResponseError,
    )
    expect(await admin.workspaces.deleteBudget({ workspaceRef: 'default', interval: 'monthly' })).toEqual({
      deleted: true,
    })
    expect(await admin.workspaces.deleteBudget({ workspaceRef: 'default', interval: 'monthly' })).toEqual({
      deleted: true,
    })
    expect((await admin.workspaces.listBudgets({ workspaceRef: 'default' })).data).toHaveLength(1)
    expect(await fails(sdk(t.keys.user).workspaces.listBudgets({ workspaceRef: 'default' }))).toBeInstanceOf(
      UnauthorizedResponseError,
    )
  })

  it('refuses the workspace’s inference once its budget is spent (402, every key, both processes); a raised budget applies at once', async () => {
    const t = await makeTenant(env.t.db)
    const admin = sdk(t.keys.management)
    const second = await makeUserKey(env.t.db, t.workspaceId)
    // Both processes have the keys cached (for a minute) before the budget exists.
    for (const url of [base, otherBase])
      for (const key of [t.keys.user, second.key]) expect((await chat(key, url)).status).toBe(200)
    await admin.workspaces.setBudget({
      workspaceRef: 'default',
      interval: 'daily',
      upsertWorkspaceBudgetRequest: { limitUsd: 0.000001 },
    })
    // What was spent reaches the ledger, then every key of the workspace is refused on both processes.
    await waitFor(async () => (await chat(t.keys.user, otherBase)).status === 402, {
      timeoutMs: 10_000,
      what: 'the budget to refuse',
    })
    for (const url of [base, otherBase])
      for (const key of [t.keys.user, second.key]) {
        const refused = await chat(key, url)
        expect(refused.status, refused.text).toBe(402)
        expect(refused.text).toMatch(/workspace has reached its daily budget/)
      }
    // Another workspace of the account is not bound by it.
    const lab = (await admin.workspaces.create({ createWorkspaceRequest: { name: 'Lab', slug: 'lab' } })).data
    const { user_id } = await createUser(env.t.db, { workspaceId: lab.id })
    const labKey = (await createApiKey(env.t.db, { kind: 'user', workspaceId: lab.id, userId: user_id })).key
    expect((await chat(labKey)).status).toBe(200)
    // Raised: at once, on both.
    await admin.workspaces.setBudget({
      workspaceRef: 'default',
      interval: 'daily',
      upsertWorkspaceBudgetRequest: { limitUsd: 50 },
    })
    for (const url of [base, otherBase]) expect((await chat(t.keys.user, url)).status).toBe(200)
  })
})

describe('a budget reached mid-stream', () => {
  it('lets the streams already admitted finish whole, and refuses the next request', async () => {
    const t = await makeTenant(env.t.db)
    const first = await chat(t.keys.user)
    expect(first.status).toBe(200)
    // Spent, and in the ledger, before the stream starts: the budget refuses as soon as it is set.
    const firstId = `resp_${/"id":"chatcmpl-([^"]+)"/.exec(first.text)![1]!}`
    await waitFor(async () => (await env.t.db.generation.count({ where: { id: firstId } })) === 1, {
      timeoutMs: 10_000,
      what: 'the first call in the ledger',
    })
    // A second of streaming, admitted before the budget exists.
    const streaming = chat(t.keys.user, otherBase, { model: 'sim/slow', stream: true }).then((r) => ({
      ...r,
      endedAt: performance.now(),
    }))
    await sdk(t.keys.management).workspaces.setBudget({
      workspaceRef: 'default',
      interval: 'lifetime',
      upsertWorkspaceBudgetRequest: { limitUsd: 0.000001 },
    })
    await waitFor(async () => (await chat(t.keys.user)).status === 402, { timeoutMs: 10_000, what: 'the refusal' })
    const refusedAt = performance.now()
    const done = await streaming
    // Refused while the admitted stream was still going.
    expect(refusedAt).toBeLessThan(done.endedAt)
    expect(done.status).toBe(200)
    expect(done.text.trimEnd().endsWith('data: [DONE]')).toBe(true)
    expect(done.text).toContain('"finish_reason":"stop"')
    // And it was accounted, as any other: the workspace's spend holds it.
    const id = /"id":"chatcmpl-([^"]+)"/.exec(done.text)![1]!
    await waitFor(async () => (await env.t.db.generation.count({ where: { id: `resp_${id}` } })) === 1, {
      timeoutMs: 10_000,
      what: 'the stream’s generation',
    })
  })
})

describe('private logging by key', () => {
  it('keeps the content of the keys io_logging_api_key_ids names (by the number GET /keys shows), and only theirs', async () => {
    const t = await makeTenant(env.t.db)
    const admin = sdk(t.keys.management)
    const kept = await admin.apiKeys.create({ requestBody: { name: 'kept' } })
    const notKept = await admin.apiKeys.create({ requestBody: { name: 'not kept' } })
    const listed = (await (
      await fetch(`${base}/keys`, { headers: { authorization: `Bearer ${t.keys.management}` } })
    ).json()) as { data: { hash: string; number: number }[] }
    const number = listed.data.find((k) => k.hash === kept.data.hash)!.number
    expect(number).toEqual(expect.any(Number))
    await admin.workspaces.update({
      id: 'default',
      updateWorkspaceRequest: { isObservabilityIoLoggingEnabled: true, ioLoggingApiKeyIds: [number] },
    })
    const ids: Record<string, string> = {}
    for (const [name, key] of [
      ['kept', kept.key],
      ['not kept', notKept.key],
    ] as const) {
      const res = await chat(key, otherBase)
      ids[name] = (JSON.parse(res.text) as { id: string }).id.replace('chatcmpl-', 'resp_')
    }
    await waitFor(async () => (await env.t.db.generation.count({ where: { id: { in: Object.values(ids) } } })) === 2, {
      timeoutMs: 10_000,
      what: 'both generations',
    })
    expect(await env.t.db.generationContent.count({ where: { requestId: ids.kept } })).toBe(1)
    expect(await env.t.db.generationContent.count({ where: { requestId: ids['not kept'] } })).toBe(0)
  })
})

describe('disabled server tools', () => {
  it('refuses a request naming a server tool its workspace disabled (403), at once on both processes', async () => {
    const t = await makeTenant(env.t.db)
    const tools = { tools: [{ type: 'openrouter:datetime' }] }
    for (const url of [base, otherBase]) expect((await chat(t.keys.user, url, tools)).status).toBe(200)
    await sdk(t.keys.management).workspaces.update({
      id: 'default',
      updateWorkspaceRequest: { disabledServerTools: ['openrouter:datetime'] },
    })
    for (const url of [base, otherBase]) {
      const refused = await chat(t.keys.user, url, tools)
      expect(refused.status, refused.text).toBe(403)
      expect(refused.text).toMatch(/openrouter:datetime is disabled in this workspace/)
      expect((await chat(t.keys.user, url)).status).toBe(200)
    }
  })

  it("disabling openrouter:web_search leaves a provider's own web search out too, with a warning", async () => {
    const t = await makeTenant(env.t.db)
    const search = () =>
      fetch(`${base}/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.keys.user}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sim/search', input: 'hi', tools: [{ type: 'web_search' }] }),
      })
    const sentTools = () => (sim.stats.lastBody['/v1/responses'] as { tools?: unknown }).tools
    const offered = await search()
    expect(offered.status).toBe(200)
    expect(offered.headers.get('warning')).toBeNull()
    expect(sentTools()).toEqual([{ type: 'web_search' }])
    await sdk(t.keys.management).workspaces.update({
      id: 'default',
      updateWorkspaceRequest: { disabledServerTools: ['openrouter:web_search'] },
    })
    const left = await search()
    expect(left.status).toBe(200)
    expect(left.headers.get('warning')).toMatch(/web_search, as web search is disabled in this workspace/)
    expect(sentTools()).toBeUndefined()
  })
})
