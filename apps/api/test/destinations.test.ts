import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createServer, type Server } from 'node:http'
import { OpenRouter } from '@openrouter/sdk'
import {
  BadRequestResponseError,
  ConflictResponseError,
  ForbiddenResponseError,
  NotFoundResponseError,
} from '@openrouter/sdk/models/errors'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import type { Catalogue } from '@roster/gateway'
import { createLogger, loadConfig, WorkerConfig } from '@roster/shared'
import { makeTenant, redisUrl, useTestTenant, waitFor, type Tenant } from '@roster/testing'
import { GenerationDrain } from '../../worker/src/generation-drain.js'
import { DestinationFanout, destinationsQueue, startDeliveries } from '../../worker/src/destinations.js'
import { buildTestApp, simEndpoint, simModel, TEST_MASTER_KEY } from './helpers.js'

// Observability destinations through the official client (governance-contract.md §10), delivered
// for real by the workers' parts (the drain's fanout, the delivery queue's consumer) to a local
// webhook receiver and a local OTLP/HTTP receiver: each generation arrives (at least once, with
// ids to drop repeats by), sampling, key filters and filter rules hold, privacy mode strips
// content, a receiver that is down gets everything when it is back, and one that keeps failing is
// marked so and not retried for ever.
const env = useTestTenant()
const prefix = `{t-dest-${Date.now()}}`
let sim: Simulator
let app: Awaited<ReturnType<typeof buildTestApp>>
let base: string
let drain: GenerationDrain
let deliveries: { close(): Promise<void> }
let queue: ReturnType<typeof destinationsQueue>
let t: Tenant

/** A local receiver: what it got, by path; answers `status()` (503 while "down"). */
interface Receiver {
  url: string
  bodies: { path: string; headers: Record<string, string | string[] | undefined>; body: any }[]
  status: number
  /** Deliveries answered with another status than 200, by path. */
  refused: Map<string, number>
  server: Server
}
async function receiver(): Promise<Receiver> {
  const r: Receiver = { url: '', bodies: [], status: 200, refused: new Map(), server: undefined as unknown as Server }
  r.server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      if (r.status === 200)
        r.bodies.push({ path: req.url ?? '', headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString()) })
      else r.refused.set(req.url ?? '', (r.refused.get(req.url ?? '') ?? 0) + 1)
      res.writeHead(r.status, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((ok) => r.server.listen(0, '127.0.0.1', ok))
  r.url = `http://127.0.0.1:${(r.server.address() as { port: number }).port}`
  return r
}
let hook: Receiver
let otlp: Receiver
let clockAhead = 0

beforeAll(async () => {
  sim = await startSimulator({ replyTokens: 4 })
  hook = await receiver()
  otlp = await receiver()
  const catalogue: Catalogue = {
    models: [simModel('sim/chat', [simEndpoint(sim.url)]), simModel('sim/other', [simEndpoint(sim.url)])],
  }
  app = await buildTestApp(env.t.db, { QUEUE_PREFIX: prefix }, catalogue)
  base = `${await app.listen({ port: 0, host: '127.0.0.1' })}/api/v1`
  const config = loadConfig(WorkerConfig, {
    DATABASE_URL: env.t.url,
    REDIS_URL: redisUrl(),
    QUEUE_PREFIX: prefix,
    VAULT_MASTER_KEY: TEST_MASTER_KEY,
  })
  const log = createLogger('worker', 'silent')
  const settings = {
    attempts: 8,
    backoffMs: 100,
    timeoutMs: 2_000,
    concurrency: 8,
    allowPrivateNetworks: true,
    masterKey: config.VAULT_MASTER_KEY,
  }
  queue = destinationsQueue(config, log)
  // The fanout's clock, moved on by a test instead of waiting out its cache of destinations.
  const fanout = new DestinationFanout(env.t.db, queue.queue, settings, () => Date.now() + clockAhead)
  deliveries = startDeliveries(env.t.db, config, queue.queue, settings, log)
  drain = new GenerationDrain(env.t.db, config, prefix, log, {
    blockMs: 50,
    beforeAck: (records) => fanout.enqueue(records),
  })
  drain.start()
  t = await makeTenant(env.t.db)
})
afterAll(async () => {
  await drain?.stop()
  await deliveries?.close()
  await queue?.queue.close()
  queue?.connection.disconnect()
  await app?.closeAll()
  await sim?.close()
  hook?.server.close()
  otlp?.server.close()
})

const sdk = (key: string) => new OpenRouter({ apiKey: key, serverURL: base, retryConfig: { strategy: 'none' } })
const fails = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  )
const chat = async (key: string, model = 'sim/chat', content = 'hi') => {
  const res = await fetch(`${base}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content }] }),
  })
  expect(res.status).toBe(200)
  return (await res.json()).id as string
}
/** Generation ids a receiver got (repeats dropped), from webhook bodies on `path`. */
const hookIds = (r: Receiver, destination: string) =>
  new Set(
    r.bodies
      .filter((b) => b.path === `/${destination}`)
      .flatMap((b) => b.body.generations.map((g: { id: string }) => g.id)),
  )
const ids = (list: string[]) => new Set(list.map((id) => id.replace(/^chatcmpl-/, 'resp_')))

describe('observability destinations', () => {
  it('adds, lists, reads, changes and deletes destinations; config secrets are masked; the types Roster does not deliver to are refused', async () => {
    const admin = sdk(t.keys.management)
    const made = await admin.observability.create({
      createObservabilityDestinationRequest: {
        name: 'hook',
        type: 'webhook',
        config: { url: `${hook.url}/crud`, headers: { authorization: 'Bearer receiver-secret-123' } },
      },
    })
    const d = made.data as any
    expect(d).toMatchObject({
      type: 'webhook',
      name: 'hook',
      workspaceId: t.workspaceId,
      enabled: true,
      privacyMode: false,
      regions: ['global'],
      samplingRate: 1,
      apiKeyHashes: null,
      filterRules: null,
      config: { url: `${hook.url}/crud`, method: 'POST', headers: { authorization: '********' } },
    })
    expect(JSON.stringify(made)).not.toContain('receiver-secret-123')
    const row = await env.t.db.$queryRaw<
      { row: string }[]
    >`SELECT row_to_json(d)::text AS row FROM observability_destinations d`
    expect(row.map((r) => r.row).join()).not.toContain('receiver-secret-123')

    // Masked values keep what they mask; the rest changes.
    const changed = await admin.observability.update({
      id: d.id,
      updateObservabilityDestinationRequest: {
        name: 'hook 2',
        config: { url: `${hook.url}/crud2`, headers: { authorization: '********', 'x-team': 'blue' } },
        regions: ['eu', 'us'],
      },
    })
    expect(changed.data as any).toMatchObject({
      name: 'hook 2',
      regions: ['europe', 'us'],
      config: { url: `${hook.url}/crud2`, headers: { authorization: '********', 'x-team': '********' } },
    })
    expect((await admin.observability.list()).result.totalCount).toBe(1)
    expect(((await admin.observability.get({ id: d.id })).data as any).name).toBe('hook 2')

    for (const body of [
      { name: 'x', type: 's3', config: { bucketName: 'b', accessKeyId: 'a', secretAccessKey: 's' } },
      { name: 'x', type: 'carrier-pigeon', config: {} },
      { name: 'x', type: 'webhook', config: {} },
      { name: 'x', type: 'webhook', config: { url: 'ftp://x' } },
      { name: 'x', type: 'webhook', config: { url: 'http://x', extra: 1 } },
      { name: 'x', type: 'webhook', config: { url: 'http://x' }, sampling_rate: 0 },
      { name: 'x', type: 'webhook', config: { url: 'http://x' }, regions: [] },
      { name: 'x', type: 'webhook', config: { url: 'http://x' }, api_key_hashes: [] },
      { name: 'x', type: 'webhook', config: { url: 'http://x' }, api_key_hashes: ['0'.repeat(64)] },
      {
        name: 'x',
        type: 'webhook',
        config: { url: 'http://x' },
        filter_rules: { groups: [{ rules: [{ field: 'password', operator: 'eq', value: 1 }] }] },
      },
      {
        name: 'x',
        type: 'webhook',
        config: { url: 'http://x' },
        filter_rules: { groups: [{ rules: [{ field: 'constructor', operator: 'exists' }] }] },
      },
    ]) {
      const res = await fetch(`${base}/observability/destinations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.keys.management}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
      expect(res.status, JSON.stringify(body)).toBe(400)
      if (body.type === 's3') expect(await res.text()).toMatch(/webhook and otel-collector/)
    }
    // Five per type.
    const more = []
    for (let i = 0; i < 4; i++)
      more.push(
        await admin.observability.create({
          createObservabilityDestinationRequest: { name: `n${i}`, type: 'webhook', config: { url: `${hook.url}/n` } },
        }),
      )
    expect(
      await fails(
        admin.observability.create({
          createObservabilityDestinationRequest: { name: 'sixth', type: 'webhook', config: { url: `${hook.url}/n` } },
        }),
      ),
    ).toBeInstanceOf(ConflictResponseError)
    for (const m of [made, ...more])
      expect(await admin.observability.delete({ id: (m.data as any).id })).toEqual({ deleted: true })
    expect(await fails(admin.observability.get({ id: d.id }))).toBeInstanceOf(NotFoundResponseError)
    const stranger = sdk((await makeTenant(env.t.db)).keys.management)
    expect(await fails(stranger.observability.get({ id: d.id }))).toBeInstanceOf(NotFoundResponseError)
    expect(
      await fails(
        sdk(t.keys.user).observability.create({
          createObservabilityDestinationRequest: { name: 'x', type: 'webhook', config: { url: 'http://x' } },
        }),
      ),
    ).toBeInstanceOf(ForbiddenResponseError)
    expect(
      await fails(admin.observability.update({ id: d.id, updateObservabilityDestinationRequest: { name: 'gone' } })),
    ).toBeInstanceOf(NotFoundResponseError)
    expect(await fails(admin.observability.list({ workspaceId: 'nowhere' }))).toBeInstanceOf(BadRequestResponseError)
  })

  it('delivers each generation to a webhook and an OTLP collector, with filters, sampling, key filters and privacy mode', async () => {
    const tenant = await makeTenant(env.t.db)
    const admin = sdk(tenant.keys.management)
    // The workspace keeps content (private logging), so what privacy mode strips is there to strip.
    await env.t.db.workspace.update({ where: { id: tenant.workspaceId }, data: { ioLogging: true } })
    const k1 = await admin.apiKeys.create({ requestBody: { name: 'k1', creatorUserId: tenant.userId } })
    const k2 = await admin.apiKeys.create({ requestBody: { name: 'k2', creatorUserId: tenant.userId } })
    const create = async (name: string, body: object) =>
      (
        (
          await admin.observability.create({
            createObservabilityDestinationRequest: {
              name,
              type: 'webhook',
              config: { url: `${hook.url}/${name}` },
              ...body,
            } as never,
          })
        ).data as { id: string }
      ).id
    await create('all', {
      config: { url: `${hook.url}/all`, headers: { 'x-receiver-token': 'tok-42' } },
      broadcastGenerationCost: true,
    })
    await create('private', { privacyMode: true })
    await create('sampled', { samplingRate: 0.5 })
    await create('k1only', { apiKeyHashes: [k1.data.hash] })
    await create('others', {
      filterRules: { groups: [{ rules: [{ field: 'model', operator: 'eq', value: 'sim/other' }] }] },
    })
    await admin.observability.create({
      createObservabilityDestinationRequest: {
        name: 'otel',
        type: 'otel-collector',
        config: { endpoint: otlp.url, headers: { 'x-otlp-key': 'collector-key' } },
      },
    })

    const mine: string[] = []
    const ofK1: string[] = []
    const other: string[] = []
    for (let i = 0; i < 24; i++) {
      const key = i % 2 ? k1.key : k2.key
      const model = i % 3 ? 'sim/chat' : 'sim/other'
      const id = await chat(key, model, `message ${i} to ada@example.com`)
      mine.push(id)
      if (i % 2) ofK1.push(id)
      if (model === 'sim/other') other.push(id)
    }
    const all = ids(mine)
    await waitFor(async () => hookIds(hook, 'all').size === all.size, {
      timeoutMs: 20_000,
      what: 'the webhook deliveries',
    })
    expect(hookIds(hook, 'all')).toEqual(all)
    await waitFor(async () => hookIds(hook, 'private').size === all.size, { timeoutMs: 20_000, what: 'private ones' })
    await waitFor(async () => hookIds(hook, 'k1only').size === ofK1.length, { timeoutMs: 20_000, what: 'k1 only' })
    expect(hookIds(hook, 'k1only')).toEqual(ids(ofK1))
    await waitFor(async () => hookIds(hook, 'others').size === other.length, { timeoutMs: 20_000, what: 'filtered' })
    expect(hookIds(hook, 'others')).toEqual(ids(other))
    const sampled = hookIds(hook, 'sampled')
    expect(sampled.size).toBeGreaterThan(0)
    expect(sampled.size).toBeLessThan(all.size)
    expect([...sampled].every((id) => all.has(id))).toBe(true)

    const full = hook.bodies.find((b) => b.path === '/all')!
    expect(full.headers['x-receiver-token']).toBe('tok-42')
    expect(full.headers['idempotency-key']).toBeTruthy()
    const g = full.body.generations[0]
    expect(g).toMatchObject({
      model: expect.stringMatching(/^sim\//),
      provider: 'upstream-sim',
      workspace_id: tenant.workspaceId,
    })
    expect(g.total_cost).toBeGreaterThan(0)
    expect(JSON.stringify(g.input)).toContain('ada@example.com')
    const stripped = hook.bodies.find((b) => b.path === '/private')!.body.generations[0]
    expect(stripped.input).toBeUndefined()
    expect(stripped.output).toBeUndefined()
    expect(stripped.total_cost).toBeUndefined()

    // OTLP: one span per generation, GenAI attributes, the collector's header.
    const spanIds = () =>
      new Set(
        otlp.bodies.flatMap((b) =>
          b.body.resourceSpans.flatMap((rs: any) =>
            rs.scopeSpans.flatMap((ss: any) =>
              ss.spans.map((s: any) => s.attributes.find((a: any) => a.key === 'gen_ai.response.id').value.stringValue),
            ),
          ),
        ),
      )
    await waitFor(async () => spanIds().size === all.size, { timeoutMs: 20_000, what: 'the OTLP export' })
    expect(spanIds()).toEqual(all)
    expect(otlp.bodies[0]!.path).toBe('/v1/traces')
    expect(otlp.bodies[0]!.headers['x-otlp-key']).toBe('collector-key')
    const span = otlp.bodies[0]!.body.resourceSpans[0].scopeSpans[0].spans[0]
    const attrs = Object.fromEntries(span.attributes.map((a: any) => [a.key, Object.values(a.value)[0]]))
    expect(attrs).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'upstream-sim',
    })
    expect(Number(attrs['gen_ai.usage.input_tokens'])).toBeGreaterThan(0)
    expect(span.traceId).toMatch(/^[0-9a-f]{32}$/)
  })

  it('gets everything to a receiver that was down once it is back; one that keeps failing is marked so, and catches up when updated', async () => {
    const tenant = await makeTenant(env.t.db)
    const admin = sdk(tenant.keys.management)
    const made = await admin.observability.create({
      createObservabilityDestinationRequest: { name: 'flaky', type: 'webhook', config: { url: `${hook.url}/flaky` } },
    })
    const id = (made.data as { id: string }).id
    hook.status = 503
    const sent: string[] = []
    for (let i = 0; i < 5; i++) sent.push(await chat(tenant.keys.user))
    // Tried while it is down (each refused), nothing delivered.
    await waitFor(async () => (hook.refused.get('/flaky') ?? 0) >= 2, { what: 'deliveries tried and refused' })
    expect(hookIds(hook, 'flaky').size).toBe(0)
    hook.status = 200
    await waitFor(async () => hookIds(hook, 'flaky').size === sent.length, { timeoutMs: 30_000, what: 'the backlog' })
    expect(hookIds(hook, 'flaky')).toEqual(ids(sent))

    // Down past its retries (8 tries, 100 ms doubling: about 25 s): shorten them by refusing at once.
    hook.status = 500
    const [row] = await env.t.db.$queryRaw<
      { failures: number }[]
    >`SELECT failures FROM observability_destinations WHERE id = ${id}::uuid`
    expect(row!.failures).toBe(0)
    await env.t.db.$executeRaw`UPDATE observability_destinations SET failures = 1 WHERE id = ${id}::uuid`
    // A failing destination's deliveries get one try each: they fail at once, and are kept.
    clockAhead += 2_100 // past the fanout's cache of destinations: it reads the failing one afresh
    const missed: string[] = []
    for (let i = 0; i < 3; i++) missed.push(await chat(tenant.keys.user))
    await waitFor(
      async () =>
        (
          await env.t.db.$queryRaw<
            { failures: number }[]
          >`SELECT failures FROM observability_destinations WHERE id = ${id}::uuid`
        )[0]!.failures > 1,
      { timeoutMs: 15_000, what: 'the destination marked failing' },
    )
    const [marked] = await env.t.db.$queryRaw<
      { last_error: string }[]
    >`SELECT last_error FROM observability_destinations WHERE id = ${id}::uuid`
    expect(marked!.last_error).toMatch(/webhook answered 500/)
    // Its delivery health is shown with it (the console's destinations list reads it).
    const shown = await (
      await fetch(`${base}/observability/destinations/${id}`, {
        headers: { authorization: `Bearer ${tenant.keys.management}` },
      })
    ).json()
    expect(shown.data.delivery).toMatchObject({ last_error: expect.stringMatching(/webhook answered 500/) })
    expect(shown.data.delivery.failures).toBeGreaterThan(1)
    expect([...ids(missed)].some((m) => hookIds(hook, 'flaky').has(m))).toBe(false)
    // Back, and updated: what it missed goes again.
    hook.status = 200
    await admin.observability.update({ id, updateObservabilityDestinationRequest: { enabled: true } })
    await waitFor(async () => [...ids(missed)].every((m) => hookIds(hook, 'flaky').has(m)), {
      timeoutMs: 15_000,
      what: 'the missed deliveries',
    })
  })
})
