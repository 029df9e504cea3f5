import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import OpenAI from 'openai'
import Anthropic from '@anthropic-ai/sdk'
import { generateText, jsonSchema, streamText, tool, type LanguageModel, type ToolSet } from 'ai'
import { createAnthropic } from '@ai-sdk/anthropic'
import { createOpenRouter } from '@openrouter/ai-sdk-provider'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import type { Catalogue } from '@roster/gateway'
import { useTestTenant } from '@roster/testing'
import { buildTestApp, sseEvents } from './helpers.js'
import { invalidEvents, responseErrors } from './open-responses.js'
import {
  reportedUsage,
  said,
  sayable,
  wireBytes,
  writing,
  type GrammarProtocol,
  type Said,
  type Writing,
} from './provider-grammar.js'

// Traffic no provider here has sent: replies generated from each protocol's grammar
// (provider-grammar.ts), written streamed and whole, cut anywhere, through every door, read by the
// clients people use there. Whatever the provider's writing, no text, reasoning, call or argument is
// lost or merged, no tool name is invented, a kind no one knows is carried or refused by its name,
// and the usage is the provider's, or, where it said none, Roster's count, marked as such: never 0.

const env = useTestTenant()
let sim: Simulator
let app: Awaited<ReturnType<typeof buildTestApp>>
let baseURL: string
const PROTOCOLS: GrammarProtocol[] = ['openai-chat', 'openai-responses', 'anthropic-messages']
const model = (p: GrammarProtocol) => `gen/${p}`
const RUNS = Number(process.env.ROSTER_GRAMMAR_RUNS ?? 12)

beforeAll(async () => {
  sim = await startSimulator()
  const catalogue: Catalogue = {
    models: PROTOCOLS.map((p) => ({
      id: model(p),
      name: `generated ${p}`,
      context_length: 200_000,
      pricing: { input: '0.000001', output: '0.000002' },
      capabilities: { tools: true, reasoning: true, images: false, caching: false },
      endpoints: [
        {
          provider: 'generated',
          protocol: p,
          base_url: `${sim.url}/v1`,
          upstream_model: `script/${p}`,
          tiers: ['default'],
          timeout_ms: 10_000,
        },
      ],
      created: 0,
    })),
  }
  app = await buildTestApp(env.t.db, {}, catalogue)
  baseURL = `${await app.listen({ port: 0, host: '127.0.0.1' })}/api/v1`
})
afterAll(async () => {
  await app?.closeAll()
  await sim?.close()
})

/** What a door gave back, in one shape. */
interface Got {
  text: string
  reasoning?: string
  calls: { id: string; name: string; args: unknown }[]
  custom?: { id: string; name: string; input: string }
  unknown?: string
  usage: { input: number; output: number; counted: boolean; cacheWrite: number }
}

const joined = (p: string[]) => p.join('')
const headers = () => ({ authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' })
const ask = [{ role: 'user' as const, content: 'go' }]

/** /chat/completions through the openai client (streamed: its chunks read as a client accumulates them). */
async function viaChat(p: GrammarProtocol, stream: boolean): Promise<Got> {
  const openai = new OpenAI({ apiKey: env.tenant.keys.user, baseURL, maxRetries: 0 })
  type Call = {
    id?: string
    type?: string
    function?: { name?: string; arguments?: string }
    custom?: { name?: string; input?: string }
  }
  let text = ''
  let reasoning = ''
  const calls: Call[] = []
  let usage: any
  if (stream) {
    const chunks = await openai.chat.completions.create({ model: model(p), messages: ask, stream: true })
    for await (const chunk of chunks) {
      if ((chunk as any).error) throw new Error(JSON.stringify((chunk as any).error))
      if (chunk.usage) usage = chunk.usage
      const d = chunk.choices[0]?.delta as any
      if (!d) continue
      text += d.content ?? ''
      reasoning += d.reasoning ?? ''
      for (const c of d.tool_calls ?? []) {
        const at = (calls[c.index] ??= {})
        if (c.id) at.id = c.id
        if (c.type) at.type = c.type
        if (c.function) {
          at.function ??= { name: '', arguments: '' }
          if (c.function.name) at.function.name = c.function.name
          at.function.arguments += c.function.arguments ?? ''
        }
        if (c.custom) at.custom = { ...at.custom, ...c.custom }
      }
    }
  } else {
    const reply = await openai.chat.completions.create({ model: model(p), messages: ask })
    const m = reply.choices[0]!.message as any
    text = m.content ?? ''
    reasoning = m.reasoning ?? ''
    calls.push(...(m.tool_calls ?? []))
    usage = reply.usage
  }
  const custom = calls.find((c) => c.type === 'custom')
  return {
    text,
    reasoning,
    calls: calls
      .filter((c) => c.type === 'function')
      .map((c) => ({ id: c.id!, name: c.function!.name!, args: JSON.parse(c.function!.arguments!) })),
    ...(custom ? { custom: { id: custom.id!, name: custom.custom!.name!, input: custom.custom!.input! } } : {}),
    usage: {
      input: usage.prompt_tokens,
      output: usage.completion_tokens,
      counted: usage.tokens_counted_by === 'roster',
      cacheWrite: usage.prompt_tokens_details?.cache_write_tokens ?? 0,
    },
  }
}

/** /responses as an Open Responses client reads it (no client of OpenAI's: the provider's items by their slug), every event checked against the published schema. */
async function viaResponses(p: GrammarProtocol, stream: boolean): Promise<Got> {
  const res = await fetch(`${baseURL}/responses`, {
    method: 'POST',
    headers: headers(),
    body: JSON.stringify({ model: model(p), input: 'go', stream }),
  })
  let response: any
  if (stream) {
    const { events } = sseEvents(await res.text())
    const data = events.map((e) => e.data)
    expect(invalidEvents(data)).toEqual([])
    const last = data.at(-1)
    if (last.type !== 'response.completed') throw new Error(JSON.stringify(last))
    response = last.response
  } else {
    response = await res.json()
    if (res.status !== 200) throw new Error(JSON.stringify(response))
  }
  expect(responseErrors(response)).toEqual([])
  const items = response.output as any[]
  const custom = items.find((i) => i.type === 'openai:custom_tool_call')
  const unknown = items.find((i) => /:/.test(i.type) && i.type !== 'openai:custom_tool_call')
  return {
    text: items
      .filter((i) => i.type === 'message')
      .flatMap((i) => i.content.map((c: any) => c.text ?? ''))
      .join(''),
    reasoning: items
      .filter((i) => i.type === 'reasoning')
      .flatMap((i) => i.summary.map((s: any) => s.text))
      .join(''),
    calls: items
      .filter((i) => i.type === 'function_call')
      .map((i) => ({ id: i.call_id, name: i.name, args: JSON.parse(i.arguments) })),
    ...(custom ? { custom: { id: custom.call_id, name: custom.name, input: custom.input } } : {}),
    ...(unknown ? { unknown: unknown.type } : {}),
    usage: {
      input: response.usage.input_tokens,
      output: response.usage.output_tokens,
      counted: response.usage.tokens_counted_by === 'roster',
      cacheWrite: response.usage.input_tokens_details.cache_write_tokens ?? 0,
    },
  }
}

/** /messages through the Anthropic client (streamed: its own stream reader, which parses each call's input). */
async function viaMessages(p: GrammarProtocol, stream: boolean): Promise<Got> {
  const anthropic = new Anthropic({
    apiKey: env.tenant.keys.user,
    baseURL: baseURL.replace(/\/v1$/, ''),
    maxRetries: 0,
  })
  const params = { model: model(p), max_tokens: 1024, messages: ask }
  let counted: unknown
  let message: Anthropic.Message
  if (stream) {
    const reading = anthropic.messages.stream(params)
    // The client keeps only Anthropic's own usage fields: Roster's mark is read from the event itself.
    reading.on('streamEvent', (e: any) => {
      if (e.type === 'message_delta') counted = e.usage?.tokens_counted_by
    })
    message = await reading.finalMessage()
  } else message = await anthropic.messages.create(params)
  const blocks = message.content as any[]
  const u = message.usage as any
  if (!stream) counted = u.tokens_counted_by
  const known = new Set(['text', 'thinking', 'redacted_thinking', 'tool_use'])
  const unknown = blocks.find((b) => !known.has(b.type))
  return {
    text: blocks
      .filter((b) => b.type === 'text')
      .map((b) => b.text)
      .join(''),
    reasoning: blocks
      .filter((b) => b.type === 'thinking')
      .map((b) => b.thinking)
      .join(''),
    calls: blocks.filter((b) => b.type === 'tool_use').map((b) => ({ id: b.id, name: b.name, args: b.input })),
    ...(unknown ? { unknown: unknown.type } : {}),
    usage: {
      input: u.input_tokens + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0),
      output: u.output_tokens,
      counted: counted === 'roster',
      cacheWrite: u.cache_creation_input_tokens ?? 0,
    },
  }
}

/**
 * Through the Vercel AI SDK, the third-party client people pair with the official one: /messages by
 * @ai-sdk/anthropic, /chat/completions by @openrouter/ai-sdk-provider (the calls' tools declared,
 * without execute, so they are handed back). It reads no free-form calls, and no unknown kinds.
 */
async function viaAiSdk(languageModel: LanguageModel, s: Said, stream: boolean): Promise<Got> {
  const tools: ToolSet = Object.fromEntries(
    s.calls.map((c) => [c.name, tool({ inputSchema: jsonSchema({ type: 'object' }) })]),
  )
  const options = { model: languageModel, prompt: 'go', tools, maxRetries: 0 }
  const result = stream ? streamText({ ...options, onError: () => {} }) : await generateText(options)
  if (stream)
    for await (const part of (result as ReturnType<typeof streamText>).fullStream)
      if (part.type === 'error') throw part.error
  const usage = await result.usage
  return {
    text: await result.text,
    reasoning: (await result.reasoningText) ?? '',
    calls: (await result.toolCalls).map((c) => ({ id: c.toolCallId, name: c.toolName, args: c.input })),
    usage: { input: usage.inputTokens ?? 0, output: usage.outputTokens ?? 0, counted: false, cacheWrite: 0 },
  }
}
const viaAiAnthropic = (p: GrammarProtocol, s: Said, stream: boolean) =>
  viaAiSdk(createAnthropic({ apiKey: env.tenant.keys.user, baseURL })(model(p)), s, stream)
const viaAiOpenRouter = (p: GrammarProtocol, s: Said, stream: boolean) =>
  viaAiSdk(createOpenRouter({ apiKey: env.tenant.keys.user, baseURL }).chat(model(p)), s, stream)

const DOORS = { chat: viaChat, responses: viaResponses, messages: viaMessages }
type DoorName = keyof typeof DOORS

/** Whether a door must refuse what `s` holds, and the kind its refusal names. */
function refusedKind(p: GrammarProtocol, s: Said, door: DoorName): string | undefined {
  if (s.custom && door === 'messages') return 'custom_tool_call'
  // An OpenAI Responses item of a kind no one knows is for the client to act on, for all Roster knows.
  if (s.unknownKind && p === 'openai-responses' && door !== 'responses') return s.unknownKind
  return undefined
}

function holds(p: GrammarProtocol, s: Said, w: Writing, door: DoorName, got: Got) {
  expect(got.text).toBe(joined(s.text))
  if (door !== 'messages' || p === 'anthropic-messages') expect(got.reasoning ?? '').toBe(joined(s.reasoning))
  expect(got.calls).toEqual(s.calls.map((c) => ({ id: c.id, name: c.name, args: JSON.parse(joined(c.pieces)) })))
  if (s.custom && door !== 'messages')
    expect(got.custom).toEqual({ id: s.custom.id, name: s.custom.name, input: joined(s.custom.input) })
  else expect(got.custom).toBeUndefined()
  // An Anthropic block of a kind no one knows: shown as it came where the door can (Messages, Responses' anthropic:<kind>).
  if (s.unknownKind && door === 'responses')
    expect(got.unknown).toBe(
      `${p === 'anthropic-messages' ? 'anthropic' : 'openai'}:${s.unknownKind.toLowerCase().replace(/[^a-z0-9_.-]/g, '_')}`,
    )
  if (s.unknownKind && door === 'messages' && p === 'anthropic-messages') expect(got.unknown).toBe(s.unknownKind)
  const reported = reportedUsage(s, w, p)
  if (reported) {
    // Cache writes too, each door in its own words (Anthropic's cache_creation_input_tokens, the others' cache_write_tokens).
    expect(got.usage).toEqual({
      input: reported.input,
      output: reported.output,
      counted: false,
      cacheWrite: reported.cacheWrite,
    })
  } else {
    // The provider said nothing of its usage: Roster counted, and says so.
    expect(got.usage.counted, `${door} marks the usage counted by Roster`).toBe(true)
    expect(got.usage.input).toBeGreaterThan(0)
    const wrote = joined(s.text) + joined(s.reasoning) + s.calls.map((c) => joined(c.pieces)).join('')
    if (wrote) expect(got.usage.output).toBeGreaterThan(0)
  }
}

describe("the provider's items on /responses", () => {
  it("are named by the provider's slug for an Open Responses client, by OpenAI's names for the openai client", async () => {
    const s: Said = { reasoning: [], text: ['ok'], calls: [], custom: { id: 'c9', name: 'apply', input: ['x'] } }
    const w: Writing = {
      calls: 'indexed',
      usage: 'absent',
      terse: false,
      extra: false,
      whole: false,
      reasoningField: 'reasoning',
    }
    sim.script({ bytes: wireBytes('openai-responses', s, w, false), stream: false }, 'script/openai-responses')
    const plain = await viaResponses('openai-responses', false)
    expect(plain.custom).toEqual({ id: 'c9', name: 'apply', input: 'x' })
    const openai = new OpenAI({ apiKey: env.tenant.keys.user, baseURL, maxRetries: 0 })
    const response = await openai.responses.create({ model: model('openai-responses'), input: 'go' })
    expect(response.output.map((o) => o.type)).toEqual(['message', 'custom_tool_call'])
    expect(response.output[1]).toMatchObject({ call_id: 'c9', name: 'apply', input: 'x' })
  })
})

describe.each(PROTOCOLS)('replies generated from the %s grammar', (p) => {
  it.each([true, false])('come through every door intact (streamed: %s)', async (stream) => {
    await fc.assert(
      fc.asyncProperty(said, writing, fc.integer({ min: 1, max: 2 ** 31 - 1 }), async (given, w, seed) => {
        const s = sayable(p, given)
        sim.script({ bytes: wireBytes(p, s, w, stream), stream, seed }, `script/${p}`)
        for (const door of Object.keys(DOORS) as DoorName[]) {
          const refused = refusedKind(p, s, door)
          const got = await DOORS[door](p, stream).then(
            (g) => g,
            (err: Error) => err,
          )
          if (refused) {
            expect(got, `${door} refuses ${refused}`).toBeInstanceOf(Error)
            expect(String((got as Error).message)).toContain(refused)
          } else {
            if (got instanceof Error) throw new Error(`${door}: ${got.message}`)
            holds(p, s, w, door, got)
          }
        }
        // The AI SDK's readers, where what was said is theirs to read: text, reasoning and calls intact.
        if (!s.custom && !s.unknownKind)
          for (const [name, read] of [
            ['@ai-sdk/anthropic', viaAiAnthropic],
            ['@openrouter/ai-sdk-provider', viaAiOpenRouter],
          ] as const) {
            const got = await read(p, s, stream)
            expect(got.text, name).toBe(joined(s.text))
            expect(got.reasoning, name).toBe(joined(s.reasoning))
            // In the order each call's arguments became whole: the AI SDK hands a call over then, so
            // interleaved calls may come in another order than they began.
            const byValue = (calls: { name: string; args: unknown }[]) =>
              calls.map(({ name, args }) => JSON.stringify([name, args])).sort()
            expect(byValue(got.calls), name).toEqual(
              byValue(s.calls.map((c) => ({ name: c.name, args: JSON.parse(joined(c.pieces)) }))),
            )
            expect(got.usage.input, name).toBeGreaterThan(0)
          }
      }),
      { numRuns: RUNS },
    )
  })
})
