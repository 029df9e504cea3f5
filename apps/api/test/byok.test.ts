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
import { createApiKey, createUser } from '@roster/shared'
import { makeTenant, useTestTenant, waitFor } from '@roster/testing'
import type { GenerationDrain } from '../../worker/src/generation-drain.js'
import { buildTestApp, simEndpoint, simModel, startDrain } from './helpers.js'
import type { BYOKProviderSlug } from '@openrouter/sdk/models'

/** A provider slug of our catalogue's, which the SDK's open enum does not list: sent as it is. */
const slug = (name: string) => name as BYOKProviderSlug

// Bring your own key through the official client (governance-contract.md §11): a workspace's own
// provider credential reaches the provider (the simulator records each credential it got) before
// the catalogue's shared one, in the documented order (own keys by sort order, the shared one,
// then fallback keys), byok-only and required keys take the shared one out, allow-lists hold, a
// rotation applies at once, BYOK spend counts against budgets only when they say so, and the value
// is in no response and no table.
const env = useTestTenant()
const prefix = `{t-byok-${Date.now()}}`
const SHARED = 'sk-shared-catalogue-credential-0001'
let sim: Simulator
let locked: Simulator
let app: Awaited<ReturnType<typeof buildTestApp>>
let other: Awaited<ReturnType<typeof buildTestApp>>
let drain: GenerationDrain
let base: string
let otherBase: string

beforeAll(async () => {
  sim = await startSimulator({ replyTokens: 6 })
  // Takes one credential only: the others are refused with 401.
  locked = await startSimulator({ replyTokens: 6, apiKey: 'sk-byok-good-0123456789abcdef' })
  const keyed = { api_key_env: 'SIM_SHARED_KEY' }
  const catalogue: Catalogue = {
    models: [
      simModel('sim/chat', [simEndpoint(sim.url, 'openai-chat', keyed)]),
      simModel('sim/other', [simEndpoint(sim.url, 'openai-chat', keyed)]),
      simModel('sim/claude', [simEndpoint(sim.url, 'anthropic-messages', keyed)]),
      simModel('sim/locked', [simEndpoint(locked.url, 'openai-chat', { ...keyed, provider: 'locked-sim' })]),
    ],
  }
  const settings = { QUEUE_PREFIX: prefix, AUTH_CACHE_MS: '60000' }
  const providerEnv = { SIM_SHARED_KEY: SHARED }
  app = await buildTestApp(env.t.db, settings, catalogue, providerEnv)
  other = await buildTestApp(env.t.db, settings, catalogue, providerEnv)
  base = `${await app.listen({ port: 0, host: '127.0.0.1' })}/api/v1`
  otherBase = `${await other.listen({ port: 0, host: '127.0.0.1' })}/api/v1`
  drain = startDrain(env.t.db, env.t.url, prefix)
})
afterAll(async () => {
  await drain?.stop()
  await app?.closeAll()
  await other?.closeAll()
  await Promise.all([sim?.close(), locked?.close()])
})

const sdk = (key: string, url = base) =>
  new OpenRouter({ apiKey: key, serverURL: url, retryConfig: { strategy: 'none' } })
const fails = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  )
const chat = async (key: string, model = 'sim/chat', url = base) => {
  const res = await fetch(`${url}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  })
  return { status: res.status, text: await res.text() }
}
/** The credentials the simulator got from the calls `run` made, in order. */
async function credentialsOf(s: Simulator, run: () => Promise<unknown>) {
  const from = s.stats.credentials.length
  await run()
  return s.stats.credentials.slice(from)
}

describe('bring your own key', () => {
  it('adds, lists, reads, rotates and deletes a provider key; the value is never returned nor stored in the clear', async () => {
    const t = await makeTenant(env.t.db)
    const admin = sdk(t.keys.management)
    const value = 'sk-workspace-own-credential-abcdef123456'
    const made = await admin.byok.create({
      createBYOKKeyRequest: { provider: slug('upstream-sim'), key: value, name: 'ours' },
    })
    expect(made.data).toMatchObject({
      provider: 'upstream-sim',
      name: 'ours',
      label: 'sk-…3456',
      disabled: false,
      isByokOnly: false,
      isFallback: false,
      isRequired: false,
      declaredZdr: null,
      sortOrder: 0,
      allowedApiKeyHashes: null,
      allowedModels: null,
      allowedUserIds: null,
      workspaceId: t.workspaceId,
    })
    const id = made.data.id
    const second = await admin.byok.create({
      createBYOKKeyRequest: { provider: slug('upstream-sim'), key: 'sk-second-key-0000000000' },
    })
    expect(second.data.sortOrder).toBe(1)
    const list = await admin.byok.list({ provider: slug('upstream-sim'), limit: 50, offset: 0 })
    expect(list.result.totalCount).toBe(2)
    expect((await admin.byok.list({ provider: slug('nobody') })).result.data).toEqual([])
    expect((await admin.byok.get({ id })).data.label).toBe('sk-…3456')

    const rotated = await admin.byok.update({
      id,
      updateBYOKKeyRequest: { key: 'sk-rotated-credential-zzzz9999', allowedModels: ['sim/chat:free'], name: null },
    })
    expect(rotated.data).toMatchObject({ label: 'sk-…9999', allowedModels: ['sim/chat'], name: null })

    // What the client got, and what the table holds, never carry the value.
    const responses = JSON.stringify([made, second, list.result, rotated, await admin.byok.get({ id })])
    const rows = await env.t.db.$queryRaw<{ row: string }[]>`SELECT row_to_json(b)::text AS row FROM byok_keys b`
    for (const secret of [value, 'sk-rotated-credential-zzzz9999', 'sk-second-key-0000000000']) {
      expect(responses).not.toContain(secret)
      for (const r of rows) {
        expect(r.row).not.toContain(secret)
        expect(r.row).not.toContain(Buffer.from(secret).toString('hex'))
      }
    }

    expect(await admin.byok.delete({ id })).toEqual({ deleted: true })
    expect(await fails(admin.byok.get({ id }))).toBeInstanceOf(NotFoundResponseError)
    const [gone] = await env.t.db.$queryRaw<{ sealed: Buffer | null; deleted: boolean }[]>`
      SELECT sealed, deleted_at IS NOT NULL AS deleted FROM byok_keys WHERE id = ${id}::uuid`
    expect(gone).toEqual({ sealed: null, deleted: true })
    expect((await admin.byok.list()).result.totalCount).toBe(1)
  })

  it('refuses bad bodies (400, nothing stored), other accounts’ keys (404) and other keys (401/403)', async () => {
    const t = await makeTenant(env.t.db)
    const admin = sdk(t.keys.management)
    const stranger = await makeTenant(env.t.db)
    const theirs = await sdk(stranger.keys.management).apiKeys.create({
      requestBody: { name: 'theirs', creatorUserId: stranger.userId },
    })
    const bad: object[] = [
      { provider: 'upstream-sim' },
      { provider: 'upstream-sim', key: '' },
      { provider: 'nobody-we-route-to', key: 'sk-x' },
      { provider: 'upstream-sim', key: 'sk-x', is_fallback: true, is_byok_only: true },
      { provider: 'upstream-sim', key: 'sk-x', allowed_models: ['no/such'] },
      { provider: 'upstream-sim', key: 'sk-x', allowed_api_key_hashes: ['nothex'] },
      { provider: 'upstream-sim', key: 'sk-x', allowed_api_key_hashes: [theirs.data.hash] },
      { provider: 'upstream-sim', key: 'sk-x', allowed_user_ids: [stranger.userId] },
      { provider: 'upstream-sim', key: 'sk-x', workspace_id: 'nowhere' },
      { provider: 'upstream-sim', key: 'sk-x', label: 'mine' },
      { provider: 'upstream-sim', key: 'x'.repeat(9_000) },
    ]
    for (const body of bad) {
      const res = await fetch(`${base}/byok`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.keys.management}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
      expect(res.status, JSON.stringify(body).slice(0, 200)).toBe(400)
    }
    expect((await admin.byok.list()).result.totalCount).toBe(0)

    const mine = await admin.byok.create({
      createBYOKKeyRequest: { provider: slug('upstream-sim'), key: 'sk-mine-000000000000000' },
    })
    expect(
      await fails(
        admin.byok.update({ id: mine.data.id, updateBYOKKeyRequest: { isFallback: true, isByokOnly: true } }),
      ),
    ).toBeInstanceOf(BadRequestResponseError)
    const them = sdk(stranger.keys.management)
    expect(await fails(them.byok.get({ id: mine.data.id }))).toBeInstanceOf(NotFoundResponseError)
    expect(await fails(them.byok.delete({ id: mine.data.id }))).toBeInstanceOf(NotFoundResponseError)
    expect(
      await fails(them.byok.update({ id: mine.data.id, updateBYOKKeyRequest: { key: 'sk-hijack' } })),
    ).toBeInstanceOf(NotFoundResponseError)
    const user = sdk(t.keys.user)
    expect(
      await fails(user.byok.create({ createBYOKKeyRequest: { provider: slug('upstream-sim'), key: 'sk-x' } })),
    ).toBeInstanceOf(ForbiddenResponseError)
    expect(await fails(user.byok.list())).toBeInstanceOf(UnauthorizedResponseError)
    expect((await admin.byok.get({ id: mine.data.id })).data.label).toBe('sk-…0000')
  })

  it('reaches the provider with the workspace’s own key (recorded as BYOK); other workspaces keep the shared one', async () => {
    const t = await makeTenant(env.t.db)
    const admin = sdk(t.keys.management)
    const own = 'sk-own-for-upstream-sim-7777777777'
    await admin.byok.create({ createBYOKKeyRequest: { provider: slug('upstream-sim'), key: own } })
    const neighbour = await makeTenant(env.t.db)
    for (const url of [base, otherBase])
      expect(
        await credentialsOf(sim, async () => expect((await chat(t.keys.user, 'sim/chat', url)).status).toBe(200)),
      ).toEqual([own])
    // The Anthropic door sends it as x-api-key.
    const viaMessages = await credentialsOf(sim, async () => {
      const res = await fetch(`${base}/messages`, {
        method: 'POST',
        headers: { 'x-api-key': t.keys.user, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sim/claude', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
      })
      expect(res.status).toBe(200)
    })
    expect(viaMessages).toEqual([own])
    expect(sim.stats.lastHeaders['/v1/messages']?.['x-api-key']).toBe(own)
    expect(await credentialsOf(sim, () => chat(neighbour.keys.user))).toEqual([SHARED])

    const res = await chat(t.keys.user)
    const id = JSON.parse(res.text).id as string
    const read = () => fetch(`${base}/generation?id=${id}`, { headers: { authorization: `Bearer ${t.keys.user}` } })
    await waitFor(async () => (await read()).status === 200, { what: 'the generation' })
    const generation = (await (await read()).json()) as {
      data: { is_byok: boolean; usage: number; total_cost: number }
    }
    expect(generation.data.is_byok).toBe(true)
    expect(generation.data.usage).toBe(0)
    expect(generation.data.total_cost).toBeGreaterThan(0)
  })

  it('tries own keys by sort order, then the shared one, then fallback keys; a byok-only key takes the shared one out', async () => {
    const t = await makeTenant(env.t.db)
    const admin = sdk(t.keys.management)
    const bad = await admin.byok.create({
      createBYOKKeyRequest: { provider: slug('locked-sim'), key: 'sk-byok-bad-000000000000' },
    })
    const good = await admin.byok.create({
      createBYOKKeyRequest: { provider: slug('locked-sim'), key: 'sk-byok-good-0123456789abcdef', isFallback: true },
    })
    // The bad own key (401), the shared one (401), then the fallback key serves.
    const tried = await credentialsOf(locked, async () =>
      expect((await chat(t.keys.user, 'sim/locked')).status).toBe(200),
    )
    expect(tried).toEqual(['sk-byok-bad-000000000000', SHARED, 'sk-byok-good-0123456789abcdef'])

    // BYOK only: the shared key is never tried (the fallback flag goes first: they cannot be combined).
    await admin.byok.update({ id: good.data.id, updateBYOKKeyRequest: { isFallback: false } })
    await admin.byok.update({ id: bad.data.id, updateBYOKKeyRequest: { isByokOnly: true } })
    expect(
      await credentialsOf(locked, async () =>
        expect((await chat(t.keys.user, 'sim/locked', otherBase)).status).toBe(200),
      ),
    ).toEqual(['sk-byok-bad-000000000000', 'sk-byok-good-0123456789abcdef'])
    // Disabled, the good one is not tried; nothing else may serve: the provider refuses the last.
    await admin.byok.update({ id: good.data.id, updateBYOKKeyRequest: { disabled: true } })
    const refused = await credentialsOf(locked, async () =>
      expect((await chat(t.keys.user, 'sim/locked')).status).toBe(502),
    )
    expect(refused).toEqual(['sk-byok-bad-000000000000'])
    expect(refused).not.toContain(SHARED)
  })

  it('holds allow-lists (keys, members, models) and is_required per model', async () => {
    const t = await makeTenant(env.t.db)
    const admin = sdk(t.keys.management)
    const chosen = await admin.apiKeys.create({ requestBody: { name: 'chosen', creatorUserId: t.userId } })
    const { user_id } = await createUser(env.t.db, { workspaceId: t.workspaceId })
    const { key: otherMember } = await createApiKey(env.t.db, {
      kind: 'user',
      workspaceId: t.workspaceId,
      userId: user_id,
    })
    const byKey = await admin.byok.create({
      createBYOKKeyRequest: {
        provider: slug('upstream-sim'),
        key: 'sk-for-one-key-1111111111',
        allowedApiKeyHashes: [chosen.data.hash],
      },
    })
    expect(await credentialsOf(sim, () => chat(chosen.key))).toEqual(['sk-for-one-key-1111111111'])
    expect(await credentialsOf(sim, () => chat(t.keys.user))).toEqual([SHARED])

    await admin.byok.update({
      id: byKey.data.id,
      updateBYOKKeyRequest: { allowedApiKeyHashes: null, allowedUserIds: [user_id] },
    })
    expect(await credentialsOf(sim, () => chat(otherMember))).toEqual(['sk-for-one-key-1111111111'])
    expect(await credentialsOf(sim, () => chat(t.keys.user))).toEqual([SHARED])

    // Required for sim/other: the shared key is out for that model only.
    await admin.byok.update({
      id: byKey.data.id,
      updateBYOKKeyRequest: { allowedUserIds: null, allowedModels: ['sim/other'], isRequired: true },
    })
    expect(await credentialsOf(sim, () => chat(t.keys.user, 'sim/other'))).toEqual(['sk-for-one-key-1111111111'])
    expect(await credentialsOf(sim, () => chat(t.keys.user, 'sim/chat'))).toEqual([SHARED])
  })

  it('counts BYOK spend against a workspace budget only when the budget says so', async () => {
    const t = await makeTenant(env.t.db)
    const admin = sdk(t.keys.management)
    await admin.byok.create({
      createBYOKKeyRequest: { provider: slug('upstream-sim'), key: 'sk-budgeted-own-2222222222' },
    })
    await admin.workspaces.setBudget({
      workspaceRef: 'default',
      interval: 'daily',
      upsertWorkspaceBudgetRequest: { limitUsd: 0.000001 },
    })
    expect((await chat(t.keys.user)).status).toBe(200)
    await waitFor(async () => (await env.t.db.generation.count({ where: { workspaceId: t.workspaceId } })) === 1, {
      what: 'the BYOK call in the ledger',
    })
    expect((await chat(t.keys.user, 'sim/chat', otherBase)).status).toBe(200)
    await admin.workspaces.setBudget({
      workspaceRef: 'default',
      interval: 'daily',
      upsertWorkspaceBudgetRequest: { limitUsd: 0.000001, includeByokInBudgets: true },
    })
    // The other process hears of the change over Redis: at once, but for the moment the event takes
    // to cross (under a loaded suite a request can be read before it).
    await waitFor(async () => (await chat(t.keys.user, 'sim/chat', otherBase)).status === 402, {
      timeoutMs: 3_000,
      what: 'the other API process to refuse once the budget counts BYOK',
    })
  })
})
