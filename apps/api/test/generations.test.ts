import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OpenRouter } from '@openrouter/sdk'
import {
  ForbiddenResponseError,
  NotFoundResponseError,
  PaymentRequiredResponseError,
  UnauthorizedResponseError,
} from '@openrouter/sdk/models/errors'
import OpenAI from 'openai'
import { APICallError, generateText } from 'ai'
import { createOpenRouter } from '@openrouter/ai-sdk-provider'
import { ChatOpenAI } from '@langchain/openai'
import { WebSocket } from 'ws'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import type { Catalogue } from '@roster/gateway'
import { createLogger, grantCredits, loadConfig, setIoLogging, WorkerConfig } from '@roster/shared'
import { insertGenerations, pruneGenerationContent } from '@roster/shared/repositories'
import { generationRecord, makeTenant, makeUserKey, redisUrl, useTestTenant, waitFor } from '@roster/testing'
import { GenerationDrain } from '../../worker/src/generation-drain.js'
import { buildTestApp, startDrain, leaveMidStream, simEndpoint, simModel, sseEvents } from './helpers.js'

// Every model call through every door is one generation, costed exactly from the catalogue's
// prices, appended before the reply ends and drained into Postgres by the worker's drain (run here
// in-process over the same Redis stream); getGeneration answers for the id the client got, and a
// key's usage is the sum of its generations.
const env = useTestTenant()
const prefix = `{t-gen-${Date.now()}}`
let sim: Simulator
let slow: Simulator
let limited: Simulator
let paced: Simulator
let garbled: Simulator
let cut: Simulator
let app: Awaited<ReturnType<typeof buildTestApp>>
let drain: GenerationDrain
let base: string

beforeAll(async () => {
  sim = await startSimulator({ replyTokens: 6 })
  slow = await startSimulator({ replyTokens: 200, tokensPerSecond: 40 })
  limited = await startSimulator({ fault: '429' })
  paced = await startSimulator({ replyTokens: 20, tokensPerSecond: 400 })
  garbled = await startSimulator({ fault: 'garbled' })
  cut = await startSimulator({ fault: 'truncate', replyTokens: 40 })
  const catalogue: Catalogue = {
    models: [
      simModel('sim/chat', [simEndpoint(sim.url, 'openai-chat')]),
      simModel('sim/responses', [simEndpoint(sim.url, 'openai-responses')]),
      simModel('sim/messages', [simEndpoint(sim.url, 'anthropic-messages')]),
      simModel('sim/slow', [simEndpoint(slow.url, 'openai-chat')]),
      simModel('sim/fallback', [
        simEndpoint(limited.url, 'openai-chat', { provider: 'busy-provider' }),
        simEndpoint(sim.url, 'openai-chat'),
      ]),
      simModel('sim/down', [simEndpoint(limited.url, 'openai-chat', { provider: 'busy-provider' })]),
      simModel('sim/paced', [simEndpoint(paced.url, 'openai-chat')]),
      simModel('sim/garbled-then-fallback', [
        simEndpoint(garbled.url, 'openai-chat', { provider: 'broken-provider' }),
        simEndpoint(sim.url, 'openai-chat'),
      ]),
      simModel('sim/cut', [simEndpoint(cut.url, 'anthropic-messages', { provider: 'cut-provider' })]),
      {
        // An image model whose first endpoint is down: the image comes from the second.
        ...simModel('sim/image', [
          simEndpoint(limited.url, 'openai-chat', { provider: 'busy-provider' }),
          simEndpoint(sim.url, 'openai-chat', { upstream_model: 'sim-image-1' }),
        ]),
        capabilities: { tools: false, reasoning: false, images: false, caching: false, image_generation: true },
      },
    ],
  }
  app = await buildTestApp(env.t.db, { QUEUE_PREFIX: prefix }, catalogue)
  base = `${await app.listen({ port: 0, host: '127.0.0.1' })}/api/v1`
  drain = startDrain(env.t.db, env.t.url, prefix)
})
afterAll(async () => {
  await drain?.stop()
  await app?.closeAll()
  await Promise.all([sim?.close(), slow?.close(), limited?.close(), paced?.close(), garbled?.close(), cut?.close()])
})

/**
 * The request's generations once the ledger has all `count` of them, checked to add up to the
 * response's cost to the pico-dollar.
 */
async function ledgered(body: { id: string; usage: { cost: number } }, count: number) {
  await waitFor(async () => (await env.t.db.generation.count({ where: { requestId: body.id } })) === count, {
    what: `the ${count} generations`,
  })
  const rows = await env.t.db.generation.findMany({ where: { requestId: body.id } })
  const pico = rows.reduce((sum, r) => sum + r.costPico, 0n)
  expect(Math.round(body.usage.cost * 1e12)).toBe(Number(pico))
  return rows
}

const post = async (path: string, key: string, body: object) => {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'user-agent': 'gen-test/1' },
    body: JSON.stringify(body),
  })
  return { status: res.status, text: await res.text() }
}
const sdk = (key: string) => new OpenRouter({ apiKey: key, serverURL: base, retryConfig: { strategy: 'none' } })
/** The generation the client's id names, once the drain has written it. */
async function generation(key: string, id: string) {
  let found: Awaited<ReturnType<OpenRouter['generations']['getGeneration']>> | undefined
  await waitFor(
    async () => {
      found = await sdk(key)
        .generations.getGeneration({ id })
        .catch(() => undefined)
      return !!found
    },
    { timeoutMs: 10_000, intervalMs: 25, what: `generation ${id}` },
  )
  return found!.data
}
/** The simulator's prices (simModel): 1e-6 per input token, 2e-6 per output token, in pico-dollars. */
const expectedPico = (prompt: number, completion: number) =>
  BigInt(prompt) * 1_000_000n + BigInt(completion) * 2_000_000n
const idOf = (text: string, streamed: boolean) =>
  streamed ? /"id":"((?:resp_|chatcmpl-|msg_)[^"]+)"/.exec(text)![1]! : (JSON.parse(text) as { id: string }).id

describe('generations: one per model call, through every door', () => {
  const doors = [
    { door: 'responses', path: '/responses', model: 'sim/responses', body: { input: 'hello' } },
    {
      door: 'chat_completions',
      path: '/chat/completions',
      model: 'sim/chat',
      body: { messages: [{ role: 'user', content: 'hello' }] },
    },
    {
      door: 'messages',
      path: '/messages',
      model: 'sim/messages',
      body: { max_tokens: 50, messages: [{ role: 'user', content: 'hello' }] },
    },
  ]
  for (const d of doors)
    for (const stream of [false, true])
      it(`${d.door}${stream ? ', streamed' : ''}: the id the client got, its tokens, and its cost to the pico-dollar`, async () => {
        const { key, userId } = await makeUserKey(env.t.db, env.tenant.workspaceId)
        const res = await post(d.path, key, { model: d.model, stream, ...d.body })
        expect(res.status, res.text.slice(0, 300)).toBe(200)
        const id = idOf(res.text, stream)
        const g = await generation(key, id)
        expect(g).toMatchObject({
          id,
          model: d.model,
          providerName: 'upstream-sim',
          streamed: stream,
          cancelled: false,
          isByok: false,
          workspaceId: env.tenant.workspaceId,
          userAgent: 'gen-test/1',
          dataRegion: 'global',
          origin: '',
        })
        expect(g.tokensPrompt).toBeGreaterThan(0)
        expect(g.tokensCompletion).toBeGreaterThan(0)
        const pico = expectedPico(g.tokensPrompt!, g.tokensCompletion!)
        expect(g.totalCost).toBe(Number(pico) / 1e12)
        expect(g.providerResponses).toEqual([expect.objectContaining({ status: 200, providerName: 'upstream-sim' })])
        const rows = await env.t.db.generation.findMany({ where: { keyId: (await keyIdOf(key))! } })
        expect(rows).toHaveLength(1)
        expect(rows[0]).toMatchObject({ door: d.door, userId, costPico: pico })
      })

  it('records the endpoint given up in a fallback beside the one that answered; a call no provider served records nothing', async () => {
    const { key } = await makeUserKey(env.t.db, env.tenant.workspaceId)
    const res = await post('/chat/completions', key, {
      model: 'sim/fallback',
      messages: [{ role: 'user', content: 'hi' }],
    })
    expect(res.status).toBe(200)
    const g = await generation(key, idOf(res.text, false))
    expect(g.providerName).toBe('upstream-sim')
    expect(g.providerResponses?.map((p) => [p.providerName, p.status])).toEqual([
      ['busy-provider', 429],
      ['upstream-sim', 200],
    ])
    const failed = await post('/chat/completions', key, {
      model: 'sim/down',
      messages: [{ role: 'user', content: 'hi' }],
    })
    expect(failed.status).toBe(429)
    // Give the drain a round to have written anything it had.
    const other = await post('/chat/completions', key, {
      model: 'sim/chat',
      messages: [{ role: 'user', content: 'after' }],
    })
    await generation(key, idOf(other.text, false))
    expect(await env.t.db.generation.count({ where: { keyId: (await keyIdOf(key))! } })).toBe(2)
  })

  it('records a call its provider answered and then broke: given up for a fallback, or ending a stream, with what it reported', async () => {
    const { key } = await makeUserKey(env.t.db, env.tenant.workspaceId)
    const keyId = (await keyIdOf(key))!
    // A whole reply that broke off after its 200: the next endpoint serves, and both are generations.
    const res = await post('/responses', key, {
      model: 'sim/garbled-then-fallback',
      input: 'hello',
      provider: { order: ['broken-provider', 'upstream-sim'] },
    })
    expect(res.status, res.text).toBe(200)
    const id = idOf(res.text, false)
    // The id the client got names the call that served it.
    const served = await generation(key, id)
    expect(served).toMatchObject({ providerName: 'upstream-sim', finishReason: 'stop' })
    const broken = await generation(key, `${id}-2`)
    // It reported nothing: its input is Roster's count ('hello': 2 tokens and 4 for the message),
    // priced, and marked as Roster's (the provider's own counts null).
    expect(broken).toMatchObject({
      providerName: 'broken-provider',
      finishReason: 'error',
      tokensPrompt: 6,
      tokensCompletion: 0,
      nativeTokensPrompt: null,
      nativeTokensCompletion: null,
    })
    expect(broken.totalCost).toBeCloseTo(6e-6, 12)
    expect((await env.t.db.generation.findFirstOrThrow({ where: { id: `${id}-2` } })).tokensCountedBy).toBe('roster')
    expect((await env.t.db.generation.findFirstOrThrow({ where: { id } })).tokensCountedBy).toBe('provider')
    expect(broken.providerResponses).toEqual([
      expect.objectContaining({ providerName: 'broken-provider', status: 200 }),
    ])

    // A stream that broke mid-way: one generation, with the input its provider reported when it began.
    const streamed = await post('/messages', key, {
      model: 'sim/cut',
      max_tokens: 100,
      stream: true,
      messages: [{ role: 'user', content: 'Tell me something long.' }],
    })
    expect(streamed.status, streamed.text).toBe(200)
    expect(streamed.text).toContain('event: error')
    const row = await waitFor(
      async () => (await env.t.db.generation.count({ where: { keyId, model: 'sim/cut' } })) === 1,
      {
        what: 'the cut stream’s generation',
      },
    ).then(() => env.t.db.generation.findFirstOrThrow({ where: { keyId, model: 'sim/cut' } }))
    expect(row).toMatchObject({ provider: 'cut-provider', finishReason: 'error', cancelled: false, streamed: true })
    expect(row.tokensPrompt).toBeGreaterThan(0)
    expect(row.costPico).toBe(expectedPico(row.tokensPrompt, row.tokensCompletion))
    expect(await env.t.db.generation.count({ where: { keyId } })).toBe(3)
  })

  it('over WebSocket, compaction, a preset and server tools: one generation per model call, under the id the client got', async () => {
    const { key } = await makeUserKey(env.t.db, env.tenant.workspaceId)
    // The Responses door over WebSocket.
    const socket = new WebSocket(`${base.replace(/^http/, 'ws')}/responses`, {
      headers: { authorization: `Bearer ${key}` },
    })
    const completed = new Promise<{ response: { id: string } }>((resolve, reject) => {
      socket.on('message', (data) => {
        const event = JSON.parse(String(data)) as { type: string; response: { id: string } }
        if (event.type === 'response.completed') resolve(event)
        if (event.type === 'error') reject(new Error(String(data)))
      })
      socket.on('error', reject)
    })
    await new Promise((r) => socket.once('open', r))
    socket.send(JSON.stringify({ type: 'response.create', model: 'sim/responses', input: 'over a socket' }))
    const wsId = (await completed).response.id
    socket.close()
    expect(await generation(key, wsId)).toMatchObject({ id: wsId, streamed: true, model: 'sim/responses' })
    expect((await env.t.db.generation.findFirstOrThrow({ where: { id: wsId } })).door).toBe('responses_ws')

    // Compaction: the CompactResource's id.
    const compacted = await post('/responses/compact', key, {
      model: 'sim/chat',
      input: [{ role: 'user', content: 'My name is Ada.' }],
    })
    expect(compacted.status, compacted.text).toBe(200)
    const compactId = (JSON.parse(compacted.text) as { id: string }).id
    expect(await generation(key, compactId)).toMatchObject({ id: compactId, streamed: false })
    expect((await env.t.db.generation.findFirstOrThrow({ where: { id: compactId } })).door).toBe('compact')

    // A preset the request names: its id is the generation's preset_id.
    const made = await post('/presets/gen-preset/responses', env.tenant.keys.management, {
      model: 'sim/chat',
      temperature: 0.3,
    })
    expect(made.status, made.text).toBe(200)
    const viaPreset = await post('/responses', key, { model: 'sim/chat@preset/gen-preset', input: 'preset' })
    expect(viaPreset.status, viaPreset.text).toBe(200)
    const presetId = (JSON.parse(made.text) as { data: { id: string } }).data.id
    expect(await generation(key, idOf(viaPreset.text, false))).toMatchObject({ presetId })

    // Server tools: the model is called twice (the tool's call, then the answer), each a generation,
    // both under the response's id as their request.
    const tooled = await post('/responses', key, {
      model: 'sim/chat',
      input: 'what time is it?',
      tools: [{ type: 'openrouter:datetime' }],
    })
    const tooledId = idOf(tooled.text, false)
    const first = await generation(key, tooledId)
    const second = await generation(key, `${tooledId}-2`)
    expect([first.requestId, second.requestId]).toEqual([tooledId, tooledId])
    const usage = (JSON.parse(tooled.text) as { usage: { input_tokens: number; output_tokens: number } }).usage
    expect((first.tokensPrompt ?? 0) + (second.tokensPrompt ?? 0)).toBe(usage.input_tokens)
    expect((first.tokensCompletion ?? 0) + (second.tokensCompletion ?? 0)).toBe(usage.output_tokens)
    expect(await env.t.db.generation.count({ where: { requestId: tooledId } })).toBe(2)
  })

  it("records an advisor's and a subagent's model calls as generations of the request, their cost in the response's", async () => {
    const { key } = await makeUserKey(env.t.db, env.tenant.workspaceId)
    const res = await post('/responses', key, {
      model: 'sim/chat',
      input:
        '[sim] call advisor {"prompt":"[sim] say Use a map."}\n[sim] call subagent_scout {"task":"[sim] say Scouted.","task_name":"scout"}\n[sim] say Done.',
      tools: [
        { type: 'openrouter:advisor', parameters: { model: 'sim/responses', instructions: 'Be brief.' } },
        { type: 'openrouter:subagent', parameters: { name: 'scout' } },
      ],
    })
    const body = JSON.parse(res.text)
    expect(res.status, res.text).toBe(200)
    expect(body.output.map((o: any) => o.type)).toEqual(['openrouter:advisor', 'openrouter:subagent', 'message'])
    expect(body.output[0]).toMatchObject({
      advice: 'Use a map.',
      model: 'sim/responses',
      prompt: '[sim] say Use a map.',
    })
    expect(body.output[1]).toMatchObject({
      outcome: 'Scouted.',
      model: 'sim/chat',
      task_name: 'scout',
      instance_name: 'scout',
    })
    expect(body.output_text).toBe('Done.')
    // The advisor was given the entry's instructions, through the Responses protocol of its model.
    expect(JSON.stringify(sim.stats.lastBody['/v1/responses'])).toContain('Be brief.')
    // Five model calls: the outer model's three turns, the advisor's and the subagent's.
    const rows = await ledgered(body, 5)
    expect(rows.map((r) => r.model).sort()).toEqual(['sim/chat', 'sim/chat', 'sim/chat', 'sim/chat', 'sim/responses'])
  })

  it("records a fusion run's panel and analyst calls as generations of the request, their cost in the response's", async () => {
    const { key } = await makeUserKey(env.t.db, env.tenant.workspaceId)
    const analysis = JSON.stringify({ consensus: ['maps'] })
    const res = await post('/responses', key, {
      model: 'sim/chat',
      input: `[sim] call fusion ${JSON.stringify({ prompt: `[sim] say ${analysis}` })}\n[sim] say Done.`,
      // The default tools: web search cannot be offered here (no search engine configured), web fetch can.
      tools: [{ type: 'openrouter:fusion', parameters: { analysis_models: ['sim/chat', 'sim/responses'] } }],
    })
    const body = JSON.parse(res.text)
    expect(res.status, res.text).toBe(200)
    expect(body.output[0]).toMatchObject({ type: 'openrouter:fusion', analysis: { consensus: ['maps'] } })
    expect(body.output[0].responses).toHaveLength(2)
    // The panelist on the Responses protocol was offered web fetch alone.
    expect((sim.stats.lastBody['/v1/responses'] as any).tools.map((t: any) => t.name)).toEqual(['web_fetch'])
    // Five model calls: the outer model's two turns, two panelists and the analyst (the caller's model).
    const rows = await ledgered(body, 5)
    expect(rows.map((r) => r.model).sort()).toEqual(['sim/chat', 'sim/chat', 'sim/chat', 'sim/chat', 'sim/responses'])
  })

  it("records an image a tool had made as a generation of the request, after a fallback, its cost in the response's", async () => {
    const { key } = await makeUserKey(env.t.db, env.tenant.workspaceId)
    const res = await post('/responses', key, {
      model: 'sim/chat',
      input: '[sim] call image_generation {"prompt":"a lighthouse"}\n[sim] say Drawn.',
      tools: [{ type: 'openrouter:image_generation', parameters: { quality: 'high' } }],
    })
    const body = JSON.parse(res.text)
    expect(res.status, res.text).toBe(200)
    expect(body.output[0]).toMatchObject({ type: 'openrouter:image_generation', prompt: 'a lighthouse' })
    const image = (await ledgered(body, 3)).find((r) => r.model === 'sim/image')!
    // gpt-image-1's output tokens for a high-quality square image, as the stand-in reports them.
    expect(image).toMatchObject({ provider: 'upstream-sim', tokensCompletion: 4160 })
    // The endpoint given up first is on the record beside the one that answered.
    expect((image.providerResponses as any[]).map((p) => [p.provider_name, p.status])).toEqual([
      ['busy-provider', 429],
      ['upstream-sim', 200],
    ])
    expect(image.costPico).toBe(expectedPico(image.tokensPrompt, image.tokensCompletion))
  })

  it('records a stream the client left mid-way as cancelled, with what it was given, counted by Roster and priced', async () => {
    const { key } = await makeUserKey(env.t.db, env.tenant.workspaceId)
    const keyId = (await keyIdOf(key))!
    const seen = await leaveMidStream(
      `${base}/chat/completions`,
      {
        headers: { authorization: `Bearer ${key}` },
        body: { model: 'sim/slow', stream: true, messages: [{ role: 'user', content: 'long' }] },
      },
      // Some text (the provider's first chunk, its role's, may come alone: it is forwarded as it came).
      /"content":"[^"]/,
      slow,
    )
    await waitFor(async () => (await env.t.db.generation.count({ where: { keyId } })) === 1, {
      timeoutMs: 10_000,
      what: 'the cancelled call recorded',
    })
    const row = await env.t.db.generation.findFirstOrThrow({ where: { keyId } })
    expect(row).toMatchObject({ cancelled: true, streamed: true, tokensCountedBy: 'roster' })
    // The provider (Chat Completions) reports usage only at the end: Roster counts what it passed
    // on, at least what the client read (~4 bytes a token), and the input, and prices them.
    const read = sseEvents(seen.slice(0, seen.lastIndexOf('\n\n') + 2))
      .events.map((e) => e.data.choices?.[0]?.delta?.content ?? '')
      .join('')
    expect(read.length).toBeGreaterThan(0)
    expect(row.tokensCompletion).toBeGreaterThanOrEqual(Math.ceil(Buffer.byteLength(read) / 4))
    expect(row.tokensPrompt).toBeGreaterThan(0)
    expect(row.costPico).toBe(expectedPico(row.tokensPrompt, row.tokensCompletion))
    expect(await generation(key, row.id)).toMatchObject({ cancelled: true, nativeTokensCompletion: null })
  })

  it('adds up: a key’s usage (GET /key) is the sum of its generations’ costs, to the pico-dollar', async () => {
    const made = await sdk(env.tenant.keys.management).apiKeys.create({ requestBody: { name: 'metered', limit: 1 } })
    const ids: string[] = []
    for (let i = 0; i < 5; i++) {
      const res = await post('/chat/completions', made.key, {
        model: 'sim/chat',
        messages: [{ role: 'user', content: `n${i}` }],
      })
      ids.push(idOf(res.text, false))
    }
    const costs = await Promise.all(ids.map(async (id) => (await generation(made.key, id)).totalCost))
    const keyId = (await keyIdOf(made.key))!
    // The ledger's own sum, straight from the generations.
    const sum = await env.t.db.generation.aggregate({ where: { keyId }, _sum: { costPico: true } })
    const total = sum._sum.costPico ?? 0n
    const me = (await sdk(made.key).apiKeys.getCurrentKeyMetadata()).data
    expect(me.usage).toBe(Number(total) / 1e12)
    expect(me.usageDaily).toBe(me.usage)
    expect(me.usageWeekly).toBe(me.usage)
    expect(me.usageMonthly).toBe(me.usage)
    expect(me.limitRemaining).toBe(Number(1_000_000_000_000n - total) / 1e12)
    expect(costs.reduce((a, b) => a + b, 0)).toBeCloseTo(me.usage, 12)
  })

  it('answers another account’s generation, and ids that are none, 404; the content 404 (not stored); feedback kept', async () => {
    const { key } = await makeUserKey(env.t.db, env.tenant.workspaceId)
    const res = await post('/responses', key, { model: 'sim/responses', input: 'mine' })
    const id = idOf(res.text, false)
    await generation(key, id)
    const stranger = await makeTenant(env.t.db)
    for (const [who, asked] of [
      [stranger.keys.user, id],
      [key, 'resp_nope'],
      [key, 'x'.repeat(200)],
    ] as const)
      expect(
        await sdk(who)
          .generations.getGeneration({ id: asked })
          .catch((e: unknown) => e),
      ).toBeInstanceOf(NotFoundResponseError)
    expect(
      await sdk(key)
        .generations.listGenerationContent({ id })
        .catch((e: unknown) => e),
    ).toBeInstanceOf(NotFoundResponseError)
    const ok = await sdk(env.tenant.keys.management).generations.submitFeedback({
      submitGenerationFeedbackRequest: { generationId: id, category: 'latency', comment: 'slow' },
    })
    expect(ok.data.success).toBe(true)
    expect(await env.t.db.generationFeedback.count({ where: { generationId: id } })).toBe(1)
  })
})

async function keyIdOf(key: string) {
  const { hashApiKey } = await import('@roster/shared')
  return (await env.t.db.apiKey.findUnique({ where: { hash: new Uint8Array(hashApiKey(key)) } }))?.id
}

describe('limits, enforced before the upstream call', () => {
  it('refuses a key past its limit with 402, whatever the door; a raised limit applies at once', async () => {
    const admin = sdk(env.tenant.keys.management)
    // One call costs far more than this: the first is admitted (nothing spent yet), then the key is over.
    const made = await admin.apiKeys.create({ requestBody: { name: 'tiny', limit: 0.000001 } })
    const first = await post('/chat/completions', made.key, {
      model: 'sim/chat',
      messages: [{ role: 'user', content: 'one' }],
    })
    expect(first.status).toBe(200)
    const upstream = () => Object.values(sim.stats.requests).reduce((a, b) => a + b, 0)
    const upstreamBefore = upstream()
    for (const [path, body] of [
      ['/chat/completions', { model: 'sim/chat', messages: [{ role: 'user', content: 'two' }] }],
      ['/responses', { model: 'sim/responses', input: 'two', stream: true }],
      ['/messages', { model: 'sim/messages', max_tokens: 20, messages: [{ role: 'user', content: 'two' }] }],
    ] as const) {
      const refused = await post(path, made.key, body)
      expect(refused.status, `${path}: ${refused.text}`).toBe(402)
      expect(refused.text).toMatch(/spent its limit/)
    }
    // A body that is no request is the 400 it always was, whatever the spend check would say.
    for (const [path, body] of [
      ['/chat/completions', { model: 'sim/chat', messages: 'not a list' }],
      ['/messages', { model: 'sim/messages', max_tokens: 'many', messages: [{ role: 'user', content: 'x' }] }],
      ['/responses', { model: 7 }],
    ] as const)
      expect((await post(path, made.key, body)).status, path).toBe(400)
    // Read back as the clients people use read it: each sees a 402 of its own kind.
    const official = await sdk(made.key)
      .chat.send({ chatRequest: { model: 'sim/chat', messages: [{ role: 'user', content: 'sdk' }] } })
      .catch((e: unknown) => e)
    expect(official).toBeInstanceOf(PaymentRequiredResponseError)
    const openai = await new OpenAI({ apiKey: made.key, baseURL: base, maxRetries: 0 }).chat.completions
      .create({ model: 'sim/chat', messages: [{ role: 'user', content: 'openai' }] })
      .catch((e: unknown) => e)
    expect(openai).toBeInstanceOf(OpenAI.APIError)
    expect((openai as InstanceType<typeof OpenAI.APIError>).status).toBe(402)
    const aiSdk = await generateText({
      model: createOpenRouter({ apiKey: made.key, baseURL: base }).chat('sim/chat'),
      prompt: 'ai sdk',
      maxRetries: 0,
    }).catch((e: unknown) => e)
    expect(APICallError.isInstance(aiSdk)).toBe(true)
    expect((aiSdk as APICallError).statusCode).toBe(402)
    const langchain = await new ChatOpenAI({
      model: 'sim/chat',
      apiKey: made.key,
      configuration: { baseURL: base },
      maxRetries: 0,
    })
      .invoke('langchain')
      .catch((e: unknown) => e)
    expect(String((langchain as Error).message)).toMatch(/402|spent its limit/)
    // Refused before any upstream call.
    expect(upstream()).toBe(upstreamBefore)
    // Nothing remains once the first call is in the ledger (GET /key reads the ledger).
    await generation(made.key, idOf(first.text, false))
    expect((await sdk(made.key).apiKeys.getCurrentKeyMetadata()).data.limitRemaining).toBe(0)

    await admin.apiKeys.update({ hash: made.data.hash, requestBody: { limit: 10 } })
    const again = await post('/chat/completions', made.key, {
      model: 'sim/chat',
      messages: [{ role: 'user', content: 'three' }],
    })
    expect(again.status).toBe(200)
  })

  it('bounds overspend under 200 concurrent streams by what was admitted before the limit was crossed', async () => {
    const admin = sdk(env.tenant.keys.management)
    const body = { model: 'sim/paced', stream: true, messages: [{ role: 'user', content: 'the same each time' }] }
    // What one such call costs, learnt from one call on another key.
    const probe = await admin.apiKeys.create({ requestBody: { name: 'probe' } })
    const cost = (await generation(probe.key, idOf((await post('/chat/completions', probe.key, body)).text, true)))
      .totalCost
    const limit = Math.ceil(cost * 10 * 1e6) / 1e6
    const made = await admin.apiKeys.create({ requestBody: { name: 'crowded', limit } })
    // 200 streams, started over about half a second: the first are admitted, the limit is crossed as
    // they finish, the later ones are refused.
    const runs = await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        await new Promise((r) => setTimeout(r, i * 2.5))
        // Sent before the server admits it, ended after its generation was accounted: these spans
        // hold the server's, so the most that overlap here is at least the most the server had open.
        const sent = performance.now()
        const res = await fetch(`${base}/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${made.key}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
        const text = await res.text()
        return { status: res.status, text, sent, ended: performance.now() }
      }),
    )
    const byStatus = (n: number) => runs.filter((r) => r.status === n)
    const served = byStatus(200)
    // Each answer is a whole stream, a 402 or the per-key concurrency's 429: nothing else, nothing cut.
    expect(served.length + byStatus(402).length + byStatus(429).length).toBe(200)
    for (const r of served) expect(r.text.trimEnd().endsWith('data: [DONE]'), r.text.slice(-200)).toBe(true)
    expect(byStatus(402).length).toBeGreaterThan(0)
    // The limit is not left unused: calls are admitted until what was accounted reaches it.
    expect(served.length).toBeGreaterThanOrEqual(10)
    // Every served call is one generation; the key's usage is their sum, exactly.
    const ids = served.map((r) => idOf(r.text, true))
    const costs = await Promise.all(ids.map(async (id) => (await generation(made.key, id)).totalCost))
    const keyId = (await keyIdOf(made.key))!
    const total = (await env.t.db.generation.aggregate({ where: { keyId }, _sum: { costPico: true } }))._sum.costPico!
    expect(await env.t.db.generation.count({ where: { keyId } })).toBe(served.length)
    const me = (await sdk(made.key).apiKeys.getCurrentKeyMetadata()).data
    expect(me.usage).toBe(Number(total) / 1e12)
    expect(costs.reduce((a, b) => a + b, 0)).toBeCloseTo(me.usage, 12)
    // The bound: past the limit by at most the calls that were open together when it was crossed
    // (at most the most open at once), and the server never has more than KEY_CONCURRENCY (64) open.
    let open = 0
    let mostOpen = 0
    for (const [, d] of served
      .flatMap((r) => [
        [r.sent, 1],
        [r.ended, -1],
      ])
      .sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!)) {
      open += d!
      mostOpen = Math.max(mostOpen, open)
    }
    const over = me.usage - limit
    expect(over).toBeLessThanOrEqual(mostOpen * cost + 1e-12)
    expect(over).toBeLessThanOrEqual(64 * cost + 1e-12)
    // Once it is all accounted, the next call is refused.
    expect((await post('/chat/completions', made.key, body)).status).toBe(402)
  })

  it('counts a daily limit over the UTC day only; a lifetime limit over everything', async () => {
    const admin = sdk(env.tenant.keys.management)
    const daily = await admin.apiKeys.create({ requestBody: { name: 'daily', limit: 0.01, limitReset: 'daily' } })
    const lifetime = await admin.apiKeys.create({ requestBody: { name: 'lifetime', limit: 0.01 } })
    // Each spent a dollar yesterday (written to the ledger as the drain would have).
    const yesterday = new Date(Date.now() - 86_400_000)
    for (const [made, n] of [
      [daily, 1],
      [lifetime, 2],
    ] as const) {
      const keyId = (await keyIdOf(made.key))!
      await insertGenerations(env.t.db, [
        generationRecord({
          id: `yesterday-${n}-${Date.now()}`,
          key_id: keyId,
          created_at: yesterday.toISOString(),
          cost_pico: '1000000000000',
        }),
      ])
    }
    const ask = (key: string) =>
      post('/chat/completions', key, { model: 'sim/chat', messages: [{ role: 'user', content: 'today' }] })
    const today = await ask(daily.key)
    expect(today.status).toBe(200)
    const refused = await ask(lifetime.key)
    expect(refused.status).toBe(402)
    expect(refused.text).toMatch(/its lifetime/)
    // Today's call counted once the drain has written it (the usage is the ledger's).
    await generation(daily.key, idOf(today.text, false))
    const me = (await sdk(daily.key).apiKeys.getCurrentKeyMetadata()).data
    expect(me.usage).toBeGreaterThan(1)
    expect(me.usageDaily).toBeLessThan(0.01)
  })
})

describe('an account’s credits', () => {
  it('reports unlimited credits by default; past granted credits every key of the account answers 402 before any upstream call; a grant lets it go on', async () => {
    const them = await makeTenant(env.t.db)
    const credits = async () => (await sdk(them.keys.management).credits.getCredits()).data
    expect(await credits()).toEqual({ totalCredits: 1_000_000_000, totalUsage: 0 })
    expect(
      await sdk(them.keys.user)
        .credits.getCredits()
        .catch((e: unknown) => e),
    ).toBeInstanceOf(ForbiddenResponseError)
    expect(
      await sdk('sk-roster-v1-nope')
        .credits.getCredits()
        .catch((e: unknown) => e),
    ).toBeInstanceOf(UnauthorizedResponseError)
    // A grant smaller than one call: the first is admitted (nothing used yet), then the account is out.
    await grantCredits(env.t.db, them.accountId, { set: 0.00001 })
    const ask = (key: string) =>
      post('/chat/completions', key, { model: 'sim/chat', messages: [{ role: 'user', content: 'credits' }] })
    const first = await ask(them.keys.user)
    expect(first.status).toBe(200)
    await generation(them.keys.user, idOf(first.text, false))
    const other = await makeUserKey(env.t.db, them.workspaceId)
    const upstream = () => Object.values(sim.stats.requests).reduce((a, b) => a + b, 0)
    const before = upstream()
    for (const key of [them.keys.user, other.key]) {
      const refused = await ask(key)
      expect(refused.status, refused.text).toBe(402)
      expect(JSON.parse(refused.text)).toMatchObject({ error: { code: 402 } })
      expect(refused.text).toMatch(/used its credits/)
    }
    expect(
      await sdk(other.key)
        .chat.send({ chatRequest: { model: 'sim/chat', messages: [{ role: 'user', content: 'sdk' }] } })
        .catch((e: unknown) => e),
    ).toBeInstanceOf(PaymentRequiredResponseError)
    expect(upstream()).toBe(before)
    // What was used is the ledger's sum for the account, to the pico-dollar.
    const sum = await env.t.db.generation.aggregate({
      where: { accountId: them.accountId, isByok: false },
      _sum: { costPico: true },
    })
    expect(await credits()).toEqual({ totalCredits: 0.00001, totalUsage: Number(sum._sum.costPico) / 1e12 })

    await grantCredits(env.t.db, them.accountId, { add: 5 })
    expect((await credits()).totalCredits).toBe(5.00001)
    expect((await ask(other.key)).status).toBe(200)
    await grantCredits(env.t.db, them.accountId, { unlimited: true })
    expect((await credits()).totalCredits).toBe(1_000_000_000)
  })

  it('refuses grants that are no amount, and accounts that are none, changing nothing', async () => {
    const them = await makeTenant(env.t.db)
    await grantCredits(env.t.db, them.accountId, { set: 3 })
    for (const change of [{ set: -1 }, { set: NaN }, { add: Infinity }, { set: 1e308 }, { add: 999_999_999 }])
      await expect(grantCredits(env.t.db, them.accountId, change)).rejects.toThrow(/USD/)
    await expect(grantCredits(env.t.db, '00000000-0000-4000-8000-000000000000', { add: 1 })).rejects.toThrow(
      /no account/,
    )
    expect((await sdk(them.keys.management).credits.getCredits()).data.totalCredits).toBe(3)
  })
})

describe('private logging (a workspace’s prompts and completions)', () => {
  it('keeps nothing by default; turned on, the content call answers with the input as sent and the output, for the request’s generations', async () => {
    const them = await makeTenant(env.t.db)
    const before = await post('/responses', them.keys.user, { model: 'sim/responses', input: 'not kept' })
    const beforeId = idOf(before.text, false)
    await generation(them.keys.user, beforeId)
    expect(
      await sdk(them.keys.user)
        .generations.listGenerationContent({ id: beforeId })
        .catch((e: unknown) => e),
    ).toBeInstanceOf(NotFoundResponseError)

    await setIoLogging(env.t.db, { workspaceId: them.workspaceId, on: true })
    const messages = [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'kept, please' },
    ]
    for (const stream of [false, true]) {
      const res = await post('/chat/completions', them.keys.user, { model: 'sim/chat', stream, messages })
      const id = idOf(res.text, stream)
      await generation(them.keys.user, id)
      const content = (await sdk(them.keys.user).generations.listGenerationContent({ id })).data
      // The conversation as the engine sent it on: the system prompt, then the user's message.
      expect(content.input).toMatchObject({ messages: [{ role: 'system', content: 'be brief' }, { role: 'user' }] })
      expect(JSON.stringify(content.input)).toContain('kept, please')
      expect(content.output.completion).toEqual(expect.any(String))
      expect(content.output.completion!.length).toBeGreaterThan(0)
      expect(content.error).toBeNull()
      // Another account cannot read it.
      const stranger = await makeTenant(env.t.db)
      expect(
        await sdk(stranger.keys.user)
          .generations.listGenerationContent({ id })
          .catch((e: unknown) => e),
      ).toBeInstanceOf(NotFoundResponseError)
    }
    const prompt = await post('/responses', them.keys.user, { model: 'sim/responses', input: 'a bare prompt' })
    const promptId = idOf(prompt.text, false)
    await generation(them.keys.user, promptId)
    const kept = (await sdk(them.keys.user).generations.listGenerationContent({ id: promptId })).data
    expect(kept.input).toEqual({ prompt: 'a bare prompt' })
    expect(kept.output.completion).toBe((JSON.parse(prompt.text) as { output_text: string }).output_text)

    // Secrets pasted into a prompt are kept redacted, the text around them as written.
    const pasted = await post('/responses', them.keys.user, {
      model: 'sim/responses',
      input: 'deploy with sk-proj-0123456789abcdefghij and Authorization: Bearer abcdefghijklmnopqrstuvwxyz',
    })
    const pastedId = idOf(pasted.text, false)
    await generation(them.keys.user, pastedId)
    const redacted = (await sdk(them.keys.user).generations.listGenerationContent({ id: pastedId })).data
    expect(redacted.input).toEqual({ prompt: 'deploy with [redacted] and Authorization: Bearer [redacted]' })

    // Kept for the retention setting: older bodies are removed by the worker's sweep, the generations stay.
    await env.t.db.generationContent.update({
      where: { requestId: promptId },
      data: { createdAt: new Date(Date.now() - 31 * 86_400_000) },
    })
    expect(await pruneGenerationContent(env.t.db, new Date(Date.now() - 30 * 86_400_000))).toBeGreaterThanOrEqual(1)
    expect(await env.t.db.generationContent.count({ where: { requestId: promptId } })).toBe(0)
    expect(await env.t.db.generationContent.count({ where: { requestId: pastedId } })).toBe(1)
    await generation(them.keys.user, promptId)

    // Off again: nothing more is kept.
    await setIoLogging(env.t.db, { workspaceId: them.workspaceId, on: false })
    const after = await post('/responses', them.keys.user, { model: 'sim/responses', input: 'not kept either' })
    const afterId = idOf(after.text, false)
    await generation(them.keys.user, afterId)
    expect(await env.t.db.generationContent.count({ where: { requestId: afterId } })).toBe(0)
    await expect(setIoLogging(env.t.db, { workspaceId: them.workspaceId, on: true, rate: 2 })).rejects.toThrow(
      /sampling-rate/,
    )
  })
})

describe('kept content Postgres cannot hold as text', () => {
  it('writes the generation and what it cost, with a NUL or a lone surrogate in the prompt kept as U+FFFD', async () => {
    const them = await makeTenant(env.t.db)
    await setIoLogging(env.t.db, { workspaceId: them.workspaceId, on: true })
    // Valid JSON, and text to a model; not text to Postgres.
    const body = '{"model":"sim/chat","messages":[{"role":"user","content":"nul \\u0000 and half \\ud800 a pair"}]}'
    const res = await fetch(`${base}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${them.keys.user}`, 'content-type': 'application/json' },
      body,
    })
    expect(res.status).toBe(200)
    const id = idOf(await res.text(), false)
    const written = await generation(them.keys.user, id)
    expect(written.totalCost).toBeGreaterThan(0)
    const content = (await sdk(them.keys.user).generations.listGenerationContent({ id })).data
    const [message] = (content.input as { messages: Record<string, unknown>[] }).messages
    expect(message).toMatchObject({ content: 'nul \uFFFD and half \uFFFD a pair' })
  })
})

describe('the drain', () => {
  it('drops what is not a record without holding the stream up, writes a record appended twice once, and outlives the loss of its stream', async () => {
    const { connectRedis, generationsStream } = await import('@roster/shared')
    const redis = connectRedis({ REDIS_URL: redisUrl() })
    try {
      const stream = generationsStream(prefix)
      const id = `resp_drain${Date.now()}`
      const good = JSON.stringify([generationRecord({ id, cost_pico: '5' })])
      await redis.xadd(stream, '*', 'b', '{not json')
      await redis.xadd(stream, '*', 'x', 'no field the drain knows')
      await redis.xadd(stream, '*', 'b', good)
      await redis.xadd(stream, '*', 'b', good)
      await waitFor(async () => (await redis.xlen(stream)) === 0, { timeoutMs: 10_000, what: 'the stream drained' })
      expect(await env.t.db.generation.count({ where: { id } })).toBe(1)

      // Redis loses the stream and its group (a restart without its data): the drain makes them again.
      await redis.del(stream)
      const after = `resp_after${Date.now()}`
      await redis.xadd(stream, '*', 'b', JSON.stringify([generationRecord({ id: after })]))
      await waitFor(async () => (await env.t.db.generation.count({ where: { id: after } })) === 1, {
        timeoutMs: 10_000,
        what: 'a record appended after the stream was lost',
      })
    } finally {
      redis.disconnect()
    }
  })

  it('takes over what a worker read and died before writing', async () => {
    const { connectRedis, generationsStream } = await import('@roster/shared')
    const own = `{t-gen-dead-${Date.now()}}`
    const redis = connectRedis({ REDIS_URL: redisUrl() })
    const config = loadConfig(WorkerConfig, { DATABASE_URL: env.t.url, REDIS_URL: redisUrl(), QUEUE_PREFIX: own })
    const log = createLogger('worker', 'silent')
    const taker = new GenerationDrain(env.t.db, config, own, log, { blockMs: 50, claimIdleMs: 200 })
    try {
      const stream = generationsStream(own)
      const id = `resp_orphan${Date.now()}`
      await redis.xgroup('CREATE', stream, 'drain', '0', 'MKSTREAM')
      await redis.xadd(stream, '*', 'b', JSON.stringify([generationRecord({ id })]))
      // A worker reads it and dies: the entry stays pending under its name, unacknowledged.
      await redis.call('XREADGROUP', 'GROUP', 'drain', 'dead-worker', 'COUNT', 10, 'STREAMS', stream, '>')
      taker.start()
      await waitFor(async () => (await env.t.db.generation.count({ where: { id } })) === 1, {
        timeoutMs: 10_000,
        what: 'the dead worker’s record written by another',
      })
      await waitFor(async () => (await redis.xlen(stream)) === 0, { timeoutMs: 5_000, what: 'the entry acknowledged' })
    } finally {
      await taker.stop()
      redis.disconnect()
    }
  })
})
