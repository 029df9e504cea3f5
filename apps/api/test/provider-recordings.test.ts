import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import OpenAI from 'openai'
import Anthropic from '@anthropic-ai/sdk'
import { generateText, jsonSchema, streamText, tool, type LanguageModel, type ToolSet } from 'ai'
import { createAnthropic } from '@ai-sdk/anthropic'
import { createOpenRouter } from '@openrouter/ai-sdk-provider'
import {
  recordingBytes,
  recordings,
  replayModel,
  startSimulator,
  type Recording,
  type Simulator,
} from '@roster/upstream-sim'
import type { Catalogue } from '@roster/gateway'
import type { GenerationDrain } from '../../worker/src/generation-drain.js'
import { makeUserKey, useTestTenant, waitFor } from '@roster/testing'
import { canonicalGenerationId } from '@roster/protocol'
import { buildTestApp, sseEvents, startDrain } from './helpers.js'
import { invalidEvents, responseErrors } from './open-responses.js'
import { EXPECTED, type Expected, type Finish } from './provider-recordings.expected.js'

// Traffic recorded from real providers (packages/upstream-sim/recordings, each with where it came
// from in SOURCES), replayed behind the catalogue with its bytes cut anywhere, through every door,
// read by the clients people use on each: the openai client on /responses and /chat/completions,
// the Anthropic client on /messages. What each recording holds is read here by a reader of its own
// (`oracle`), apart from the gateway's; what a door must make of it (how it finishes, its usage in
// the provider's own words, its calls, the provider's own items) is written down per recording in
// provider-recordings.expected.ts. Every Responses event and Response is checked against the
// published Open Responses schema, and each call's generation against the provider's usage.

const env = useTestTenant()
const prefix = `{t-rec-${Date.now()}}`
/** Where the recordings are cut (set ROSTER_REPLAY_SEED to replay a failing run's cuts). */
const seed = Number(process.env.ROSTER_REPLAY_SEED ?? Math.floor(Math.random() * 2 ** 31))
const all = [...recordings().values()]
let sim: Simulator
let app: Awaited<ReturnType<typeof buildTestApp>>
let drain: GenerationDrain
let base: string
let key: string

/** The catalogue's prices: 1e-6 a token in, 1e-7 a cached one, 2e-6 out, a cent a web search (pico-dollars below). */
const PRICING = { input: '0.000001', cached_input: '0.0000001', output: '0.000002', web_search: '0.01' }
const model = (r: Recording) => `rec/${r.file}`

beforeAll(async () => {
  sim = await startSimulator({ cutSeed: seed })
  const catalogue: Catalogue = {
    models: all.map((r) => ({
      id: model(r),
      name: `recording ${r.file}`,
      context_length: 200_000,
      pricing: PRICING,
      capabilities: { tools: true, reasoning: true, images: false, caching: false },
      endpoints: [
        {
          provider: r.provider,
          protocol: r.protocol,
          base_url: `${sim.url}/v1`,
          upstream_model: replayModel(r.file),
          tiers: ['default'],
          timeout_ms: 10_000,
        },
      ],
      created: 0,
    })),
  }
  app = await buildTestApp(env.t.db, { QUEUE_PREFIX: prefix }, catalogue)
  base = `${await app.listen({ port: 0, host: '127.0.0.1' })}/api/v1`
  drain = startDrain(env.t.db, env.t.url, prefix)
  key = (await makeUserKey(env.t.db, env.tenant.workspaceId)).key
})
afterAll(async () => {
  await drain?.stop()
  await app?.closeAll()
  await sim?.close()
})

type Json = Record<string, any>

// ——— What a recording holds, read apart from the gateway ———

/** The data of each event of a streamed recording, in order ([DONE] left out). */
function eventsOf(r: Recording): Json[] {
  const text = recordingBytes(r).toString('utf8')
  return text
    .split(/\n\n/)
    .flatMap((block) => block.split('\n').filter((l) => l.startsWith('data: ')))
    .map((l) => l.slice(6))
    .filter((d) => d !== '[DONE]')
    .map((d) => JSON.parse(d) as Json)
}
const wholeOf = (r: Recording): Json => JSON.parse(recordingBytes(r).toString('utf8')) as Json

/** The text, reasoning and opaque reasoning state (signatures, encrypted content) a recording holds. */
function oracle(r: Recording): { text: string; reasoning: string; state: string } {
  let text = ''
  let reasoning = ''
  let state = ''
  const parts = (content: unknown) => {
    if (typeof content === 'string') text += content
    else if (Array.isArray(content))
      for (const p of content as Json[]) {
        if (p.type === 'text') text += p.text
        if (p.type === 'thinking') for (const t of p.thinking as Json[]) reasoning += t.text
      }
  }
  if (r.protocol === 'anthropic-messages') {
    if (r.stream)
      for (const e of eventsOf(r)) {
        if (e.type === 'content_block_start' && e.content_block.type === 'text') text += e.content_block.text
        if (e.type === 'content_block_start' && e.content_block.type === 'thinking')
          reasoning += e.content_block.thinking
        if (e.type === 'content_block_start' && e.content_block.type === 'redacted_thinking')
          state += e.content_block.data
        if (e.type !== 'content_block_delta') continue
        if (e.delta.type === 'text_delta') text += e.delta.text
        if (e.delta.type === 'thinking_delta') reasoning += e.delta.thinking
        if (e.delta.type === 'signature_delta') state += e.delta.signature
      }
    else
      for (const b of wholeOf(r).content as Json[]) {
        if (b.type === 'text') text += b.text
        if (b.type === 'thinking') {
          reasoning += b.thinking
          state += b.signature
        }
        if (b.type === 'redacted_thinking') state += b.data
      }
  } else if (r.protocol === 'openai-responses') {
    const reasoningOf = (item: Json) => {
      const summary = (item.summary ?? []).map((p: Json) => p.text).join('')
      reasoning += summary || (item.content ?? []).map((p: Json) => p.text ?? '').join('')
      state += item.encrypted_content ?? ''
    }
    if (r.stream)
      for (const e of eventsOf(r)) {
        if (e.type === 'response.output_text.delta') text += e.delta
        if (e.type === 'response.output_item.done' && e.item.type === 'reasoning') reasoningOf(e.item)
      }
    else
      for (const item of (wholeOf(r).output ?? []) as Json[]) {
        if (item.type === 'message') for (const c of item.content) if (c.type === 'output_text') text += c.text
        if (item.type === 'reasoning') reasoningOf(item)
      }
  } else if (r.stream)
    for (const e of eventsOf(r)) {
      const d = e.choices?.[0]?.delta
      if (!d) continue
      parts(d.content)
      reasoning += d.reasoning_content ?? d.reasoning ?? ''
    }
  else {
    const m = wholeOf(r).choices[0].message
    parts(m.content)
    reasoning += m.reasoning_content ?? m.reasoning ?? ''
  }
  return { text, reasoning, state }
}

/** The provider's own items of a Responses recording, as it sent them last (what /responses passes through). */
function providerItemsOf(r: Recording): Json[] {
  const known = new Set(['message', 'reasoning', 'function_call'])
  const output: Json[] = r.stream
    ? eventsOf(r)
        .filter((e) => e.type === 'response.output_item.done')
        .map((e) => e.item)
    : (wholeOf(r).output ?? [])
  return output.filter((item) => !known.has(item.type))
}

/**
 * A provider's item as an Open Responses client is given it (not the openai client, nor the official
 * one: docs/gateway.md, "The provider's own items"): OpenAI's kinds by the provider's slug.
 */
const slugged = (type: string) => (type.includes(':') ? type : `openai:${type}`)

// ——— What each door gave ———

interface Seen {
  text: string
  reasoning: string
  state: string
  tools: { name: string; args: unknown }[]
  finish: Finish
  usage: { input: number; cached: number; output: number; reasoning: number }
  /** The items and blocks of the provider's own tools (types in order), and the citations. */
  items: string[]
  citations: number
  otherAnnotations: number
}

const parse = (s: string) => JSON.parse(s || '{}') as unknown

function fromResponse(res: Json): Seen & { raw: Json[] } {
  const seen: Seen & { raw: Json[] } = {
    text: '',
    reasoning: '',
    state: '',
    tools: [],
    finish:
      res.status === 'incomplete'
        ? res.incomplete_details.reason === 'max_output_tokens'
          ? 'length'
          : 'content_filter'
        : 'stop',
    usage: {
      input: res.usage.input_tokens,
      cached: res.usage.input_tokens_details.cached_tokens,
      output: res.usage.output_tokens,
      reasoning: res.usage.output_tokens_details.reasoning_tokens,
    },
    items: [],
    citations: 0,
    otherAnnotations: 0,
    raw: [],
  }
  for (const item of res.output as Json[]) {
    if (item.type === 'message')
      for (const c of item.content) {
        if (c.type !== 'output_text') continue
        seen.text += c.text
        for (const a of c.annotations) {
          if (a.type === 'url_citation') seen.citations++
          else seen.otherAnnotations++
        }
      }
    else if (item.type === 'reasoning') {
      seen.reasoning += item.summary.map((p: Json) => p.text).join('')
      seen.state += item.encrypted_content ?? ''
    } else if (item.type === 'function_call') seen.tools.push({ name: item.name, args: parse(item.arguments) })
    else {
      seen.items.push(item.type)
      seen.raw.push(item)
    }
  }
  if (seen.tools.length && seen.finish === 'stop') seen.finish = 'tool_calls'
  return seen
}

async function post(path: string, body: object) {
  return fetch(`${base}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
}

/** /responses, read off the wire: every event and the Response checked against the published schema. */
async function viaResponses(r: Recording): Promise<{ seen: Seen & { raw: Json[] }; id: string }> {
  const res = await post('/responses', { model: model(r), input: 'replay', stream: r.stream })
  const body = await res.text()
  expect(res.status, body.slice(0, 400)).toBe(200)
  if (!r.stream) {
    const response = JSON.parse(body) as Json
    expect(responseErrors(response)).toEqual([])
    return { seen: fromResponse(response), id: response.id }
  }
  const { events, done } = sseEvents(body)
  expect(done).toBe(true)
  const data = events.map((e) => e.data as Json)
  expect(invalidEvents(data)).toEqual([])
  const last = data.at(-1)!
  expect(['response.completed', 'response.incomplete']).toContain(last.type)
  expect(responseErrors(last.response)).toEqual([])
  // The stream's own deltas say what the final Response says.
  const streamedText = data
    .filter((e) => e.type === 'response.output_text.delta')
    .map((e) => e.delta)
    .join('')
  expect(streamedText).toBe(last.response.output_text)
  return { seen: fromResponse(last.response), id: last.response.id }
}

/** /responses through the openai client, whole or streamed: the text and calls it gives its user. */
async function viaOpenAIResponses(r: Recording) {
  const client = new OpenAI({ apiKey: key, baseURL: base, maxRetries: 0 })
  if (!r.stream) {
    const res = await client.responses.create({ model: model(r), input: 'replay' })
    return { text: res.output_text, calls: res.output.filter((o) => o.type === 'function_call').length }
  }
  let text = ''
  let final: OpenAI.Responses.Response | undefined
  for await (const e of await client.responses.create({ model: model(r), input: 'replay', stream: true })) {
    if (e.type === 'response.output_text.delta') text += e.delta
    if (e.type === 'response.completed' || e.type === 'response.incomplete') final = e.response
  }
  return { text, calls: final!.output.filter((o) => o.type === 'function_call').length }
}

/** /chat/completions through the openai client (`headers`: sent with it); the id it got, and which way the reply went. */
async function viaChat(
  r: Recording,
  headers: Record<string, string> = {},
): Promise<Seen & { id: string; path: string | null }> {
  const client = new OpenAI({ apiKey: key, baseURL: base, maxRetries: 0, defaultHeaders: headers })
  const request = { model: model(r), messages: [{ role: 'user' as const, content: 'replay' }] }
  const seen: Seen = {
    text: '',
    reasoning: '',
    state: '',
    tools: [],
    finish: 'stop',
    usage: { input: 0, cached: 0, output: 0, reasoning: 0 },
    items: [],
    citations: 0,
    otherAnnotations: 0,
  }
  const usage = (u: OpenAI.CompletionUsage) => ({
    input: u.prompt_tokens,
    cached: u.prompt_tokens_details?.cached_tokens ?? 0,
    output: u.completion_tokens,
    reasoning: u.completion_tokens_details?.reasoning_tokens ?? 0,
  })
  if (!r.stream) {
    const { data: res, response } = await client.chat.completions.create(request).withResponse()
    const m = res.choices[0]!.message as Json
    seen.text = m.content ?? ''
    seen.reasoning = m.reasoning ?? ''
    seen.tools = (m.tool_calls ?? []).map((c: Json) => ({ name: c.function.name, args: parse(c.function.arguments) }))
    seen.finish = res.choices[0]!.finish_reason as Finish
    seen.usage = usage(res.usage!)
    seen.citations = (m.annotations ?? []).length
    return { ...seen, id: res.id, path: response.headers.get('x-roster-reply-path') }
  }
  const calls: { name: string; args: string }[] = []
  const { data: stream, response } = await client.chat.completions.create({ ...request, stream: true }).withResponse()
  let id = ''
  for await (const chunk of stream) {
    id ||= chunk.id
    const c = chunk.choices[0]
    const d = c?.delta as Json | undefined
    if (d?.content) seen.text += d.content
    if (d?.reasoning) seen.reasoning += d.reasoning
    seen.citations += (d?.annotations ?? []).length
    for (const t of d?.tool_calls ?? []) {
      calls[t.index] ??= { name: '', args: '' }
      calls[t.index]!.name += t.function?.name ?? ''
      calls[t.index]!.args += t.function?.arguments ?? ''
    }
    if (c?.finish_reason) seen.finish = c.finish_reason as Finish
    if (chunk.usage) seen.usage = usage(chunk.usage)
  }
  seen.tools = calls.map((c) => ({ name: c.name, args: parse(c.args) }))
  return { ...seen, id, path: response.headers.get('x-roster-reply-path') }
}

const STOP_OF: Record<string, Finish> = {
  end_turn: 'stop',
  tool_use: 'tool_calls',
  max_tokens: 'length',
  refusal: 'content_filter',
}

/** /messages through the Anthropic client (its stream helper's final message, when streamed). */
async function viaMessages(r: Recording): Promise<Seen> {
  const client = new Anthropic({ apiKey: key, baseURL: base.replace(/\/v1$/, ''), maxRetries: 0 })
  const request = { model: model(r), max_tokens: 1024, messages: [{ role: 'user' as const, content: 'replay' }] }
  const message = r.stream
    ? await client.messages.stream(request).finalMessage()
    : await client.messages.create(request)
  const seen: Seen = {
    text: '',
    reasoning: '',
    state: '',
    tools: [],
    finish: STOP_OF[message.stop_reason!]!,
    usage: {
      input: message.usage.input_tokens + (message.usage.cache_read_input_tokens ?? 0),
      cached: message.usage.cache_read_input_tokens ?? 0,
      output: message.usage.output_tokens,
      reasoning: message.usage.output_tokens_details?.thinking_tokens ?? 0,
    },
    items: [],
    citations: 0,
    otherAnnotations: 0,
  }
  for (const b of message.content as Json[]) {
    if (b.type === 'text') {
      seen.text += b.text
      seen.citations += (b.citations ?? []).length
    } else if (b.type === 'thinking') {
      seen.reasoning += b.thinking
      seen.state += b.signature
    } else if (b.type === 'redacted_thinking') seen.state += b.data
    else if (b.type === 'tool_use') seen.tools.push({ name: b.name, args: b.input })
    else seen.items.push(b.type)
  }
  return seen
}

const AI_FINISH: Record<string, Finish> = {
  stop: 'stop',
  'tool-calls': 'tool_calls',
  length: 'length',
  'content-filter': 'content_filter',
}

/**
 * Through the Vercel AI SDK (a third-party client): the text, reasoning, calls (its tools declared,
 * without execute, so they are handed back), how it finished and the tokens, whole or streamed.
 */
async function viaAiSdk(r: Recording, languageModel: LanguageModel, e: Expected) {
  const tools: ToolSet = Object.fromEntries(
    (e.tools ?? []).map((t) => [t.name, tool({ inputSchema: jsonSchema({ type: 'object' }) })]),
  )
  const options = { model: languageModel, prompt: 'replay', tools, maxRetries: 0 }
  const result = r.stream
    ? streamText({
        ...options,
        onError: () => {},
      })
    : await generateText(options)
  if (r.stream) {
    const s = result as ReturnType<typeof streamText>
    // A failure mid-stream surfaces as an error part: raised here, as generateText raises it.
    for await (const part of s.fullStream) if (part.type === 'error') throw part.error
  }
  const text = await result.text
  const reasoning = await result.reasoningText
  const calls = await result.toolCalls
  const usage = await result.usage
  return {
    text,
    reasoning: reasoning ?? '',
    // The provider's own tools (web search, MCP…) are calls it ran: the AI SDK says so of them.
    tools: calls.filter((c) => !c.providerExecuted).map((c) => ({ name: c.toolName, args: c.input })),
    providerRun: calls.filter((c) => c.providerExecuted).length,
    finish: AI_FINISH[await result.finishReason],
    input: usage.inputTokens,
    output: usage.outputTokens,
  }
}

/** The generation a call recorded, once the drain has written it. */
async function generationOf(id: string) {
  let row: Awaited<ReturnType<typeof env.t.db.generation.findFirst>> = null
  await waitFor(async () => !!(row = await env.t.db.generation.findFirst({ where: { id } })), {
    timeoutMs: 10_000,
    intervalMs: 25,
    what: `generation ${id}`,
  })
  return row!
}

/** What the catalogue charges for a call's tokens, in pico-dollars. */
const pico = (u: { input: number; cached: number; output: number }, searches: number) =>
  BigInt(u.input - u.cached) * 1_000_000n +
  BigInt(u.cached) * 100_000n +
  BigInt(u.output) * 2_000_000n +
  BigInt(searches) * 10_000_000_000n

const fullUsage = (e: Expected) => ({ cached: 0, reasoning: 0, ...e.usage! })

/** The usage a door gave: the provider's, or where it said none, Roster's count (never 0). */
function expectUsage(usage: { input: number; output: number }, e: Expected) {
  const expected: Record<string, number> = fullUsage(e)
  if (!e.countedByRoster)
    return expect(usage).toEqual(Object.fromEntries(Object.keys(usage).map((k) => [k, expected[k]])))
  expect(usage.input).toBeGreaterThan(0)
  expect(usage.output).toBeGreaterThan(0)
}

/**
 * What a door gave against the recording and its expectations: the text, reasoning and (where the
 * door carries it) the opaque reasoning state as the recording holds them; the calls, finish, usage,
 * the provider's own items (`items`: as this door shows them) and citations as expected.
 */
function expectSeen(seen: Seen, r: Recording, e: Expected, items: string[] | undefined, state: boolean) {
  const held = oracle(r)
  expect(seen.text).toBe(held.text)
  expect(seen.reasoning).toBe(held.reasoning)
  if (state) expect(seen.state).toBe(held.state)
  expect(seen.tools).toEqual(e.tools ?? [])
  expect(seen.finish).toBe(e.finish)
  expectUsage(seen.usage, e)
  if (items) expect(seen.items).toEqual(items)
  expect(seen.citations).toBe(e.citations ?? 0)
}

describe(`real provider traffic through every door (cut with seed ${seed})`, () => {
  it('holds at least 40 recordings from at least 8 providers, each with its source and what it should become', () => {
    expect(all.length).toBeGreaterThanOrEqual(40)
    expect(new Set(all.map((r) => r.provider)).size).toBeGreaterThanOrEqual(8)
    for (const r of all) {
      expect(r.source, r.file).toMatch(/^https:\/\/github\.com\/[^/]+\/[^/]+\/blob\/[0-9a-f]{40}\//)
      expect(EXPECTED[r.file], `${r.file} has no expectations`).toBeDefined()
    }
    expect(Object.keys(EXPECTED).filter((f) => !recordings().has(f))).toEqual([])
  })

  for (const r of all) {
    const e = EXPECTED[r.file]!
    const mode = r.stream ? 'streamed' : 'whole'
    const what = `${r.file} (${r.provider}, ${r.protocol}, ${mode})`

    if (e.error) {
      it(`${what}: fails on every door with the provider's reason, as the canonical type`, async () => {
        for (const path of ['/responses', '/chat/completions', '/messages']) {
          const body =
            path === '/responses'
              ? { model: model(r), input: 'replay', stream: r.stream }
              : path === '/messages'
                ? { model: model(r), max_tokens: 64, messages: [{ role: 'user', content: 'replay' }], stream: r.stream }
                : { model: model(r), messages: [{ role: 'user', content: 'replay' }], stream: r.stream }
          const res = await post(path, body)
          const text = await res.text()
          expect(res.status, `${path}: ${text.slice(0, 300)}`).toBe(e.error!.status)
          expect(text, path).toContain(e.error!.says)
          if (path !== '/messages') expect(JSON.parse(text).error.metadata.error_type, path).toBe(e.error!.type)
        }
      })
      if (r.status === 200)
        it(`${what}: the call its provider began answering is a generation, with the reason it ended`, async () => {
          const res = await post('/responses', { model: model(r), input: 'replay', stream: r.stream })
          expect(res.status).toBe(e.error!.status)
          let rows: Awaited<ReturnType<typeof env.t.db.generation.findMany>> = []
          await waitFor(
            async () => (rows = await env.t.db.generation.findMany({ where: { model: model(r) } })).length > 0,
            {
              timeoutMs: 10_000,
              intervalMs: 25,
              what: `a generation of ${r.file}`,
            },
          )
          expect(rows[0]).toMatchObject({ finishReason: 'error', cancelled: false, provider: r.provider })
        })
      continue
    }

    it(`${what}: /responses carries it all, every event valid against Open Responses`, async () => {
      const { seen, id } = await viaResponses(r)
      expectSeen(seen, r, e, (e.items ?? []).map(slugged), true)
      expect(seen.otherAnnotations).toBe(e.otherAnnotations ?? 0)
      // A Responses provider's own items pass through as they came, named by its slug.
      if (r.protocol === 'openai-responses')
        expect(seen.raw).toEqual(providerItemsOf(r).map((item) => ({ ...item, type: slugged(item.type) })))
      // The call is a generation: the provider's tokens and searches (or Roster's count, marked), priced by the catalogue.
      const g = await generationOf(id)
      const searches = (e.items ?? []).filter((i) => i === 'web_search_call').length
      const u = e.countedByRoster
        ? { input: g.tokensPrompt, cached: 0, output: g.tokensCompletion, reasoning: 0 }
        : fullUsage(e)
      expect(g).toMatchObject({
        tokensPrompt: u.input,
        tokensCached: u.cached,
        tokensCompletion: u.output,
        tokensReasoning: u.reasoning,
        tokensCountedBy: e.countedByRoster ? 'roster' : 'provider',
        costPico: pico(u, searches),
        provider: r.provider,
        streamed: r.stream,
      })
      expectUsage(u, e)
      // The openai client reads the same.
      const client = await viaOpenAIResponses(r)
      expect(client.text).toBe(oracle(r).text)
      expect(client.calls).toBe((e.tools ?? []).length)
    })

    it(`${what}: /chat/completions through the openai client, passed through where it may be, and translated`, async () => {
      if (e.clientCall) {
        await expect(viaChat(r)).rejects.toThrow(e.clientCall)
        return
      }
      // The provider's own tools are left out: the text after them holds their results.
      const seen = await viaChat(r)
      expectSeen(seen, r, e, undefined, false)
      // A Chat Completions provider's reply goes as it came where nothing in it needs the door
      // (a stream may begin so and be translated from the chunk that does: the record says which).
      const passes = r.protocol === 'openai-chat' && !!e.passesThrough
      if (passes) expect(seen.path).toBe('pass-through')
      else if (r.stream && r.protocol === 'openai-chat') expect(['pass-through', 'translated']).toContain(seen.path)
      else expect(seen.path).toBe('translated')
      expect((await generationOf(canonicalGenerationId(seen.id))).passThrough).toBe(passes)
      // Translated when the request asks: what the client reads is the same.
      const translated = await viaChat(r, { 'x-roster-pass-through': 'off' })
      expect(translated.path).toBe('translated')
      expectSeen(translated, r, e, undefined, false)
      expect((await generationOf(canonicalGenerationId(translated.id))).passThrough).toBe(false)
    })

    it(`${what}: /messages through @ai-sdk/anthropic, /chat/completions through @openrouter/ai-sdk-provider`, async () => {
      const { text, reasoning } = oracle(r)
      const anthropic = createAnthropic({ apiKey: key, baseURL: base })(model(r))
      const openrouter = createOpenRouter({ apiKey: key, baseURL: base }).chat(model(r))
      for (const [client, languageModel] of [
        ['@ai-sdk/anthropic', anthropic],
        ['@openrouter/ai-sdk-provider', openrouter],
      ] as const) {
        if (e.clientCall) {
          await expect(viaAiSdk(r, languageModel, e), client).rejects.toThrow(e.clientCall)
          continue
        }
        const seen = await viaAiSdk(r, languageModel, e)
        const { input, output, ...rest } = seen
        expect(rest, client).toEqual({
          text,
          reasoning,
          tools: e.tools ?? [],
          // Each provider-run tool /messages shows is a call and its result.
          providerRun: client === '@ai-sdk/anthropic' ? (e.blocks ?? []).length / 2 : 0,
          finish: e.finish,
        })
        expectUsage({ input: input ?? 0, output: output ?? 0 }, e)
      }
    })

    it(`${what}: /messages through the Anthropic client`, async () => {
      if (e.clientCall) {
        await expect(viaMessages(r)).rejects.toThrow(e.clientCall)
        return
      }
      expectSeen(await viaMessages(r), r, e, e.blocks ?? [], true)
    })
  }
})
