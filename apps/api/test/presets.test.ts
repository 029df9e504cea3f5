import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OpenRouter } from '@openrouter/sdk'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import type { Catalogue } from '@roster/gateway'
import { WebSocket } from 'ws'
import { makeTenant, useTestTenant, waitFor, type Tenant } from '@roster/testing'
import { buildTestApp, simEndpoint, simModel, whole } from './helpers.js'
import { schemaErrors } from './open-responses.js'

// Presets through @openrouter/sdk and raw HTTP: create (three body formats), versions, reads,
// key kinds, what is and is not stored, concurrent creates of one slug, and use in /responses.
const env = useTestTenant()
let sim: Simulator
let app: Awaited<ReturnType<typeof buildTestApp>>
let baseURL: string
let other: Tenant

const model = (id: string, url: string) =>
  simModel(id, [simEndpoint(url, 'openai-chat', { upstream_model: id.split('/')[1]! })])

beforeAll(async () => {
  sim = await startSimulator({ replyTokens: 3 })
  const catalogue: Catalogue = { models: [model('roster-sim/chat', sim.url), model('roster-sim/other', sim.url)] }
  app = await buildTestApp(env.t.db, {}, catalogue)
  baseURL = `${await app.listen({ port: 0, host: '127.0.0.1' })}/api/v1`
  other = await makeTenant(env.t.db)
})
afterAll(async () => {
  await app?.closeAll()
  await sim?.close()
})

const sdk = (key = env.tenant.keys.management) =>
  new OpenRouter({ apiKey: key, serverURL: baseURL, retryConfig: { strategy: 'none' } })
const call = (method: string, path: string, key: string | undefined, body?: unknown) =>
  fetch(`${baseURL}${path}`, {
    method,
    headers: {
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  })

describe('creating presets', () => {
  it('makes version 1 from a Responses body, keeping only configuration; instructions become the system prompt', async () => {
    const res = await sdk().presets.createPresetsResponses({
      slug: 'support-bot',
      responsesRequest: {
        model: 'roster-sim/chat',
        instructions: 'You answer support questions briefly.',
        temperature: 0.3,
        maxOutputTokens: 200,
        input: 'this conversation is not part of a preset',
        metadata: { run: 'x' },
        user: 'someone',
      },
    })
    const p = res.data
    expect(p).toMatchObject({
      slug: 'support-bot',
      name: 'support-bot',
      status: 'active',
      workspaceId: env.tenant.workspaceId,
      description: null,
    })
    expect(p.designatedVersion).toMatchObject({
      version: 1,
      systemPrompt: 'You answer support questions briefly.',
      config: { model: 'roster-sim/chat', temperature: 0.3, max_output_tokens: 200 },
    })
    expect(p.designatedVersionId).toBe(p.designatedVersion!.id)
    // Stored: exactly the configuration (the SDK's injected stream/store/service_tier: only the tier is configuration).
    const [row] = await env.t.db.$queryRaw<
      { config: Record<string, unknown> }[]
    >`SELECT config FROM preset_versions WHERE id = ${p.designatedVersion!.id}::uuid`
    expect(Object.keys(row!.config).sort()).toEqual(['max_output_tokens', 'model', 'service_tier', 'temperature'])
    expect(JSON.stringify(row)).not.toMatch(/conversation|someone|run/)
  })

  it('adds the next version to an existing slug and designates it; versions list ascending; one version by number', async () => {
    const res = await sdk().presets.createPresetsResponses({
      slug: 'support-bot',
      responsesRequest: { model: 'roster-sim/other', temperature: 0.9 },
    })
    expect(res.data.designatedVersion).toMatchObject({
      version: 2,
      config: { model: 'roster-sim/other', temperature: 0.9 },
      systemPrompt: null,
    })
    const versions = await sdk().presets.listVersions({ slug: 'support-bot' })
    expect(versions.result.data.map((v) => v?.version)).toEqual([1, 2])
    expect(versions.result.totalCount).toBe(2)
    const one = await sdk().presets.getVersion({ slug: 'support-bot', version: '1' })
    expect(one.data?.config).toMatchObject({ temperature: 0.3 })
    const got = await sdk().presets.get({ slug: 'support-bot' })
    expect(got.data.designatedVersion?.version).toBe(2)
  })

  it('takes Chat Completions and Messages bodies too', async () => {
    const chat = await sdk().presets.createPresetsChatCompletions({
      slug: 'from-chat',
      chatRequest: {
        model: 'roster-sim/chat',
        messages: [
          { role: 'system', content: 'be kind' },
          { role: 'user', content: 'hi' },
        ],
        maxTokens: 50,
        tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: {} } } }],
      },
    })
    expect(chat.data.designatedVersion).toMatchObject({
      systemPrompt: 'be kind',
      config: { model: 'roster-sim/chat', max_output_tokens: 50, tools: [{ type: 'function', name: 'lookup' }] },
    })
    const messages = await sdk().presets.createPresetsMessages({
      slug: 'from-messages',
      messagesRequest: {
        model: 'roster-sim/chat',
        maxTokens: 64,
        system: 'be brief',
        messages: [{ role: 'user', content: 'hi' }],
        stopSequences: ['END'],
      },
    })
    expect(messages.data.designatedVersion).toMatchObject({
      systemPrompt: 'be brief',
      config: { model: 'roster-sim/chat', max_output_tokens: 64, stop: ['END'] },
    })
  })

  it('two concurrent creates of one new slug make one preset with versions 1 and 2 (and ten make 1…10)', async () => {
    const both = await Promise.all(
      [1, 2].map((n) =>
        call('POST', '/presets/racing/responses', env.tenant.keys.management, {
          model: 'roster-sim/chat',
          top_p: n / 10,
        }),
      ),
    )
    expect(both.map((r) => r.status)).toEqual([200, 200])
    const versions = (await Promise.all(both.map((r) => r.json()))).map((b) => b.data.designated_version.version)
    expect(versions.sort()).toEqual([1, 2])
    const ten = await Promise.all(
      Array.from({ length: 10 }, () =>
        call('POST', '/presets/racing-ten/responses', env.tenant.keys.management, { model: 'roster-sim/chat' }),
      ),
    )
    expect(ten.every((r) => r.status === 200)).toBe(true)
    const rows = await env.t.db.$queryRaw<{ presets: number; versions: number[] }[]>`
      SELECT count(DISTINCT p.id)::int AS presets, array_agg(v.version ORDER BY v.version) AS versions
      FROM presets p JOIN preset_versions v ON v.preset_id = p.id WHERE p.slug = 'racing-ten'`
    expect(rows[0]).toEqual({ presets: 1, versions: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] })
  })

  it('answers 409 "try again later" when another change holds the preset too long, and stores nothing', async () => {
    let release!: () => void
    const held = new Promise<void>((r) => (release = r))
    const locked = new Promise<void>((ready) => {
      void env.t.db.$transaction(
        async (tx) => {
          await tx.$queryRaw`SELECT id FROM presets WHERE slug = 'support-bot' FOR UPDATE`
          ready()
          await held
        },
        { timeout: 15_000 },
      )
    })
    await locked
    const res = await call('POST', '/presets/support-bot/responses', env.tenant.keys.management, {
      model: 'roster-sim/chat',
    })
    release()
    expect(res.status).toBe(409)
    expect((await res.json()).error).toMatchObject({
      code: 409,
      message: expect.stringMatching(/try again later/),
      metadata: { reason: 'preset_conflict', retryable: true },
    })
    const [{ n }] = await env.t.db.$queryRaw<
      [{ n: number }]
    >`SELECT count(*)::int AS n FROM preset_versions v JOIN presets p ON p.id = v.preset_id WHERE p.slug = 'support-bot'`
    expect(n).toBe(2)
  })

  it('refuses other key kinds (403), no key (401), bad slugs and invalid configuration (400), storing nothing', async () => {
    for (const key of [env.tenant.keys.user, env.tenant.keys.organization]) {
      const res = await call('POST', '/presets/nope/responses', key, { model: 'roster-sim/chat' })
      expect(res.status).toBe(403)
      const body = await res.json()
      expect(body.error.code).toBe(403)
      expect(body.error.message).toMatch(/management/)
    }
    expect((await call('POST', '/presets/nope/responses', undefined, { model: 'x' })).status).toBe(401)
    for (const slug of ['Upper', 'with%20space', '-dash-first', 'a'.repeat(65)]) {
      const res = await call('POST', `/presets/${slug}/responses`, env.tenant.keys.management, {
        model: 'roster-sim/chat',
      })
      expect(res.status, slug).toBe(400)
      expect(Number.isInteger((await res.json()).error.code)).toBe(true)
    }
    const bad = await call('POST', '/presets/bad-config/responses', env.tenant.keys.management, {
      model: 'roster-sim/chat',
      temperature: 5,
    })
    expect(bad.status).toBe(400)
    expect((await bad.json()).error.message).toMatch(/temperature/)
    const [{ n }] = await env.t.db.$queryRaw<
      [{ n: number }]
    >`SELECT count(*)::int AS n FROM presets WHERE slug IN ('nope', 'bad-config')`
    expect(n).toBe(0)
  })
})

describe('reading presets', () => {
  it('lists the workspace’s presets newest-updated first, with total_count, limit and offset', async () => {
    await sdk().presets.createPresetsResponses({ slug: 'from-chat', responsesRequest: { model: 'roster-sim/chat' } })
    const page = await sdk().presets.list()
    expect(page.result.data[0]!.slug).toBe('from-chat')
    const all = page.result.data.map((p) => p.slug)
    expect(all).toEqual(expect.arrayContaining(['support-bot', 'from-messages', 'racing', 'racing-ten']))
    expect(page.result.totalCount).toBe(all.length)
    const second = await (await call('GET', '/presets?limit=2&offset=1', env.tenant.keys.user)).json()
    expect(second.data.map((p: any) => p.slug)).toEqual(all.slice(1, 3))
    expect((await call('GET', '/presets?limit=101', env.tenant.keys.user)).status).toBe(400)
  })

  it('is scoped to the key’s workspace; unknown slugs and versions are 404', async () => {
    expect((await call('GET', '/presets/support-bot', other.keys.management)).status).toBe(404)
    expect((await (await call('GET', '/presets', other.keys.user)).json()).total_count).toBe(0)
    expect((await call('GET', '/presets/support-bot/versions/9', env.tenant.keys.user)).status).toBe(404)
    expect((await call('GET', '/presets/missing/versions', env.tenant.keys.user)).status).toBe(404)
  })
})

describe('using a preset in /responses', () => {
  const sent = () => sim.stats.lastBody['/v1/chat/completions'] as any

  it('applies the designated version: model, settings and system prompt; the request’s fields win', async () => {
    await sdk().presets.createPresetsResponses({
      slug: 'terse',
      responsesRequest: { model: 'roster-sim/chat', instructions: 'be terse', temperature: 0.2 },
    })
    const res = whole(
      await sdk(env.tenant.keys.user).responses.send({ responsesRequest: { model: '@preset/terse', input: 'hi' } }),
    )
    expect(res.model).toBe('roster-sim/chat')
    expect(sent()).toMatchObject({
      model: 'chat',
      temperature: 0.2,
      messages: [
        { role: 'system', content: 'be terse' },
        { role: 'user', content: 'hi' },
      ],
    })

    await call('POST', '/responses', env.tenant.keys.user, {
      preset: 'terse',
      input: 'hi',
      temperature: 0.7,
      instructions: 'be chatty',
    })
    expect(sent()).toMatchObject({
      model: 'chat',
      temperature: 0.7,
      messages: [
        { role: 'system', content: 'be chatty' },
        { role: 'user', content: 'hi' },
      ],
    })

    const named = await (
      await call('POST', '/responses', env.tenant.keys.user, { model: 'roster-sim/other@preset/terse', input: 'hi' })
    ).json()
    expect(named.model).toBe('roster-sim/other')
    expect(sent()).toMatchObject({ model: 'other', temperature: 0.2 })
  })

  it('answers 404 for an unknown preset, and another workspace’s preset is unknown', async () => {
    const res = await call('POST', '/responses', env.tenant.keys.user, { model: '@preset/nobody', input: 'hi' })
    expect(res.status).toBe(404)
    expect((await res.json()).error).toMatchObject({ code: 404, metadata: { error_type: 'not_found' } })
    expect((await call('POST', '/responses', other.keys.user, { model: '@preset/terse', input: 'hi' })).status).toBe(
      404,
    )
  })
})

describe('using a preset over the WebSocket transport of /responses', () => {
  it('applies it as POST /responses does; an unknown preset is the schema’s error event, and the connection goes on', async () => {
    const socket = new WebSocket(`${baseURL.replace(/^http/, 'ws')}/responses`, {
      headers: { authorization: `Bearer ${env.tenant.keys.user}` },
    })
    const received: any[] = []
    socket.on('message', (data) => received.push(JSON.parse(String(data))))
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject))
    const ends = (n: number) => () =>
      received.filter((e) => ['response.completed', 'response.failed', 'error'].includes(e.type)).length >= n
    socket.send(JSON.stringify({ type: 'response.create', model: '@preset/terse', input: 'hi' }))
    await waitFor(ends(1), { what: 'the response' })
    expect(received.at(-1)).toMatchObject({ type: 'response.completed', response: { model: 'roster-sim/chat' } })
    expect(sim.stats.lastBody['/v1/chat/completions']).toMatchObject({
      model: 'chat',
      temperature: 0.2,
      messages: [
        { role: 'system', content: 'be terse' },
        { role: 'user', content: 'hi' },
      ],
    })
    socket.send(JSON.stringify({ type: 'response.create', model: '@preset/nobody', input: 'hi' }))
    socket.send(JSON.stringify({ type: 'response.create', preset: 'terse', input: 'again', temperature: 0.7 }))
    await waitFor(ends(3), { what: 'both answers' })
    const refused = received.find((e) => e.type === 'error')
    expect(refused).toMatchObject({
      status: 404,
      error: { type: 'not_found', message: 'no preset nobody in this workspace' },
    })
    expect(schemaErrors('WebSocketErrorEvent', refused)).toEqual([])
    expect(received.at(-1).type).toBe('response.completed')
    expect(sim.stats.lastBody['/v1/chat/completions']).toMatchObject({ model: 'chat', temperature: 0.7 })
    socket.close()
  })
})

describe('using a preset through the other doors', () => {
  it('applies it to a Chat Completions request and a Messages request alike', async () => {
    const sent = () => sim.stats.lastBody['/v1/chat/completions'] as any
    const chat = await call('POST', '/chat/completions', env.tenant.keys.user, {
      model: '@preset/terse',
      messages: [{ role: 'user', content: 'hi' }],
    })
    expect(chat.status).toBe(200)
    expect((await chat.json()).model).toBe('roster-sim/chat')
    expect(sent()).toMatchObject({
      model: 'chat',
      temperature: 0.2,
      messages: [
        { role: 'system', content: 'be terse' },
        { role: 'user', content: 'hi' },
      ],
    })
    const messages = await call('POST', '/messages', env.tenant.keys.user, {
      model: 'roster-sim/other@preset/terse',
      max_tokens: 50,
      messages: [{ role: 'user', content: 'hi' }],
    })
    expect(messages.status).toBe(200)
    expect((await messages.json()).model).toBe('roster-sim/other')
    expect(sent()).toMatchObject({
      model: 'other',
      temperature: 0.2,
      messages: [
        { role: 'system', content: 'be terse' },
        { role: 'user', content: 'hi' },
      ],
    })
    const unknown = await call('POST', '/messages', env.tenant.keys.user, {
      model: '@preset/nobody',
      max_tokens: 50,
      messages: [{ role: 'user', content: 'hi' }],
    })
    expect(unknown.status).toBe(404)
    expect((await unknown.json()).error.type).toBe('not_found_error')
  })
})
