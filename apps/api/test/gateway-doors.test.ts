import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import OpenAI from 'openai'
import Anthropic from '@anthropic-ai/sdk'
import { OpenRouter } from '@openrouter/sdk'
import { ChatResult$inboundSchema, ChatStreamChunk$inboundSchema, type ChatStreamChunk } from '@openrouter/sdk/models'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import type { Catalogue, Protocol } from '@roster/gateway'
import { useTestTenant } from '@roster/testing'
import {
  buildTestApp,
  leaveMidStream,
  SIM_PATHS,
  SIM_PROTOCOLS,
  simEndpoint,
  simModel,
  sseEvents,
  streamed,
  whole,
} from './helpers.js'
import { clientType } from './client-schemas.js'

// The gateway's other two doors, POST /chat/completions and POST /messages, through the clients
// their users have, unchanged (openai, @openrouter/sdk, @anthropic-ai/sdk) and raw; each door over
// each simulator protocol, streamed and not, with tools, images and reasoning. Every reply, chunk
// and event is checked against the clients' own types (schemas generated from their declarations,
// and the official client's zod schemas).
const env = useTestTenant()
let sim: Simulator
let slow: Simulator
let limited: Simulator
let cut: Simulator
let app: Awaited<ReturnType<typeof buildTestApp>>
let translating: Awaited<ReturnType<typeof buildTestApp>>
let baseURL: string
const baseURLs = { 'pass-through': '', translated: '' }

const model = (id: string, url: string, protocol: Protocol = 'openai-chat') =>
  simModel(id, [simEndpoint(url, protocol)])
const modelOf = (p: Protocol) => `roster-sim/${SIM_PATHS[p]}`
const UPSTREAM_PATH: Record<Protocol, string> = {
  'openai-chat': '/v1/chat/completions',
  'openai-responses': '/v1/responses',
  'anthropic-messages': '/v1/messages',
}

beforeAll(async () => {
  sim = await startSimulator({ replyTokens: 6 })
  slow = await startSimulator({ replyTokens: 200, tokensPerSecond: 20 })
  limited = await startSimulator({ fault: '429' })
  cut = await startSimulator({ replyTokens: 20, tokensPerSecond: 200, fault: 'cut' })
  const catalogue: Catalogue = {
    models: [
      ...SIM_PROTOCOLS.map((p) => model(modelOf(p), sim.url, p)),
      model('roster-sim/slow', slow.url),
      model('roster-sim/limited', limited.url),
      model('roster-sim/cut', cut.url),
    ],
  }
  app = await buildTestApp(env.t.db, {}, catalogue)
  baseURLs['pass-through'] = `${await app.listen({ port: 0, host: '127.0.0.1' })}/api/v1`
  translating = await buildTestApp(env.t.db, { GATEWAY_PASS_THROUGH: 'false' }, catalogue)
  baseURLs.translated = `${await translating.listen({ port: 0, host: '127.0.0.1' })}/api/v1`
})
afterAll(async () => {
  await app?.closeAll()
  await translating?.closeAll()
  await Promise.all([sim, slow, limited, cut].map((s) => s?.close()))
})

const key = () => env.tenant.keys.user
/** The Anthropic client adds /v1/messages to its base URL. */
const anthropicBase = () => baseURL.replace(/\/v1$/, '')
const post = (path: string, body: object, headers: Record<string, string> = {}) =>
  fetch(`${baseURL}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key()}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  })

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=='
const WEATHER = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }
/** A prompt whose simulator script calls the weather tool first, then answers with its result. */
const SCRIPT = 'What is the weather?\n[sim] call get_weather {"city":"Paris"}\n[sim] say It is {{result}}.'

const chatCompletion = clientType('openai', 'ChatCompletion')
const chatChunk = clientType('openai', 'ChatCompletionChunk')
const anthropicMessage = clientType('anthropic', 'Message')
const anthropicEvent = clientType('anthropic', 'RawMessageStreamEvent')

/** Each chunk valid for the openai client's ChatCompletionChunk and the official client's ChatStreamChunk. */
function checkChunks(chunks: any[]) {
  for (const c of chunks) {
    expect(chatChunk(c), JSON.stringify(c)).toEqual([])
    expect(ChatStreamChunk$inboundSchema.safeParse(c).success, JSON.stringify(c)).toBe(true)
  }
}

/**
 * Each door's tests twice: with pass-through (the provider's own reply where the endpoint speaks the
 * door's protocol) and with every reply translated (GATEWAY_PASS_THROUGH=false): the clients read the same.
 */
describe.each(['pass-through', 'translated'] as const)('replies %s', (path) => {
  beforeAll(() => {
    baseURL = baseURLs[path]
  })

  it('says which way each reply went, whole and streamed, on the doors that speak their endpoint’s protocol', async () => {
    const hi = [{ role: 'user', content: 'hi' }]
    for (const [door, body] of [
      ['/chat/completions', { model: modelOf('openai-chat'), messages: hi }],
      ['/messages', { model: modelOf('anthropic-messages'), max_tokens: 64, messages: hi }],
    ] as const)
      for (const stream of [false, true]) {
        const res = await post(door, { ...body, stream })
        expect(res.status, await res.text()).toBe(200)
        expect(res.headers.get('x-roster-reply-path'), `${door} ${stream}`).toBe(path)
      }
    // A door that translates (the endpoint speaks another protocol) says so either way.
    const res = await post('/chat/completions', { model: modelOf('anthropic-messages'), messages: hi })
    await res.text()
    expect(res.headers.get('x-roster-reply-path')).toBe('translated')
  })

  describe('POST /chat/completions', () => {
    describe.each(SIM_PROTOCOLS)('served by a model speaking %s', (protocol) => {
      it('answers whole, with a tool call, image input and reasoning, and a tool result round trip', async () => {
        const messages: any[] = [
          { role: 'system', content: 'Be brief.' },
          {
            role: 'user',
            content: [
              { type: 'text', text: SCRIPT },
              { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
            ],
          },
        ]
        const body = {
          model: modelOf(protocol),
          messages,
          tools: [{ type: 'function', function: { name: 'get_weather', parameters: WEATHER } }],
          reasoning: { effort: 'low' },
        }
        const res = await post('/chat/completions', body)
        expect(res.status).toBe(200)
        const first = (await res.json()) as any
        expect(chatCompletion(first)).toEqual([])
        expect(ChatResult$inboundSchema.safeParse(first).success).toBe(true)
        expect(first).toMatchObject({
          object: 'chat.completion',
          model: modelOf(protocol),
          choices: [{ index: 0, finish_reason: 'tool_calls' }],
        })
        const call = first.choices[0].message.tool_calls[0]
        expect(call).toMatchObject({
          type: 'function',
          function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
        })
        expect(first.choices[0].message.reasoning).toEqual(expect.any(String))
        // The reasoning as OpenRouter's reasoning_details too, with the provider's signature where it
        // signs its thinking: the client gives it back with the message (below), as a tool loop with
        // thinking on requires of Anthropic (the simulator refuses the next turn without it).
        expect(first.choices[0].message.reasoning_details).toEqual([
          {
            type: 'reasoning.text',
            text: first.choices[0].message.reasoning,
            ...(protocol === 'anthropic-messages' ? { signature: expect.stringMatching(/^sim-sig-/) } : {}),
            index: 0,
          },
        ])
        expect(first.usage).toMatchObject({
          prompt_tokens: expect.any(Number),
          completion_tokens: expect.any(Number),
          cost: expect.any(Number),
          completion_tokens_details: { reasoning_tokens: expect.any(Number) },
          prompt_tokens_details: { cached_tokens: 0 },
        })
        // The image went upstream in the provider's own form.
        expect(JSON.stringify(sim.stats.lastBody[UPSTREAM_PATH[protocol]])).toContain(PNG)

        messages.push(first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: 'sunny, 21 °C' })
        const second = (await (await post('/chat/completions', { ...body, messages })).json()) as any
        expect(chatCompletion(second)).toEqual([])
        expect(second.choices[0]).toMatchObject({
          finish_reason: 'stop',
          message: { role: 'assistant', content: 'It is sunny, 21 °C.', refusal: null },
        })
      })

      it('streams chunks ending in [DONE]: role first, reasoning, the tool call in pieces, the finish, and usage when asked', async () => {
        const res = await post('/chat/completions', {
          model: modelOf(protocol),
          stream: true,
          stream_options: { include_usage: true },
          messages: [{ role: 'user', content: SCRIPT }],
          tools: [{ type: 'function', function: { name: 'get_weather', parameters: WEATHER } }],
          reasoning: { effort: 'low' },
        })
        expect(res.status).toBe(200)
        expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/)
        const { events, done } = sseEvents(await res.text())
        expect(done).toBe(true)
        const chunks = events.map((e) => e.data)
        checkChunks(chunks)
        expect(new Set(chunks.map((c) => c.id)).size).toBe(1)
        expect(chunks[0].choices[0].delta).toEqual({ role: 'assistant', content: '' })
        expect(chunks.some((c) => c.choices[0]?.delta.reasoning)).toBe(true)
        // reasoning_details streamed: the text as it comes, the signature when the item is done.
        const details = chunks.flatMap((c) => c.choices[0]?.delta.reasoning_details ?? [])
        expect(details.map((d: any) => d.text ?? '').join('')).toBe(
          chunks.map((c) => c.choices[0]?.delta.reasoning ?? '').join(''),
        )
        expect(details.every((d: any) => d.type === 'reasoning.text' && d.index === 0)).toBe(true)
        expect(details.some((d: any) => d.signature)).toBe(protocol === 'anthropic-messages')
        const calls = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? [])
        expect(calls[0]).toMatchObject({
          index: 0,
          id: expect.any(String),
          type: 'function',
          function: { name: 'get_weather' },
        })
        expect(calls.map((c: any) => c.function.arguments ?? '').join('')).toBe('{"city":"Paris"}')
        const finish = chunks.find((c) => c.choices[0]?.finish_reason)
        expect(finish.choices[0]).toEqual({ index: 0, delta: {}, finish_reason: 'tool_calls' })
        const usage = chunks.at(-1)
        expect(usage.choices).toEqual([])
        expect(usage.usage).toMatchObject({
          prompt_tokens: expect.any(Number),
          completion_tokens: expect.any(Number),
          total_tokens: expect.any(Number),
          cost: expect.any(Number),
        })
      })
    })

    describe.each(SIM_PROTOCOLS)('log probabilities from a model speaking %s', (protocol) => {
      // Anthropic's protocol reports none: the door says so (null) rather than inventing them.
      const gives = protocol !== 'anthropic-messages'

      it('are passed through when asked, whole and streamed, in the shape the clients read', async () => {
        const body = {
          model: modelOf(protocol),
          messages: [{ role: 'user', content: 'hello there' }],
          logprobs: true,
          top_logprobs: 2,
        }
        const whole = (await (await post('/chat/completions', body)).json()) as any
        expect(chatCompletion(whole)).toEqual([])
        expect(ChatResult$inboundSchema.safeParse(whole).success).toBe(true)
        const logprobs = whole.choices[0].logprobs
        if (!gives) expect(logprobs).toBeNull()
        else {
          expect(logprobs.refusal).toBeNull()
          expect(logprobs.content.map((l: any) => l.token).join('')).toBe(whole.choices[0].message.content)
          for (const l of logprobs.content) {
            expect(l.logprob).toBeLessThanOrEqual(0)
            expect(l.top_logprobs).toHaveLength(2)
            expect(Buffer.from(l.bytes).toString()).toBe(l.token)
          }
          // Asked upstream in the provider's own terms.
          const sent = sim.stats.lastBody[UPSTREAM_PATH[protocol]] as any
          if (protocol === 'openai-chat') expect(sent).toMatchObject({ logprobs: true, top_logprobs: 2 })
          else expect(sent).toMatchObject({ include: ['message.output_text.logprobs'], top_logprobs: 2 })
        }
        const { events } = sseEvents(await (await post('/chat/completions', { ...body, stream: true })).text())
        const chunks = events.map((e) => e.data)
        checkChunks(chunks)
        const streamed = chunks.flatMap((c) => c.choices[0]?.logprobs?.content ?? [])
        expect(streamed).toEqual(gives ? logprobs.content : [])
      })

      it('are not asked for, nor given, when the request does not ask', async () => {
        const whole = (await (
          await post('/chat/completions', {
            model: modelOf(protocol),
            messages: [{ role: 'user', content: 'hello there' }],
          })
        ).json()) as any
        expect(whole.choices[0].logprobs).toBeNull()
        const sent = sim.stats.lastBody[UPSTREAM_PATH[protocol]] as any
        expect(sent.logprobs).toBeUndefined()
        expect(sent.top_logprobs).toBeUndefined()
      })
    })

    it('works through the openai client, streamed and not, with tools', async () => {
      const openai = new OpenAI({ apiKey: key(), baseURL, maxRetries: 0 })
      const tools: OpenAI.ChatCompletionTool[] = [
        { type: 'function', function: { name: 'get_weather', parameters: WEATHER } },
      ]
      const whole = await openai.chat.completions.create({
        model: 'roster-sim/chat',
        messages: [{ role: 'user', content: SCRIPT }],
        tools,
        max_completion_tokens: 100,
      })
      expect(whole.choices[0]!.message.tool_calls?.[0]).toMatchObject({ function: { name: 'get_weather' } })

      const stream = openai.chat.completions.stream({
        model: 'roster-sim/responses',
        messages: [{ role: 'user', content: 'Say something.' }],
        stream_options: { include_usage: true },
      })
      let text = ''
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ''
      const final = await stream.finalChatCompletion()
      expect(final.choices[0]!.message.content).toBe(text)
      expect(text.split(' ')).toHaveLength(6)
      expect(final.usage?.completion_tokens).toBe(6)
    })

    it('works through the official client (client.chat.send), both modes', async () => {
      const client = new OpenRouter({ apiKey: key(), serverURL: baseURL, retryConfig: { strategy: 'none' } })
      const answer = whole(
        await client.chat.send({
          chatRequest: { model: 'roster-sim/messages', messages: [{ role: 'user', content: 'hello' }] },
        }),
      )
      expect(answer.choices[0]!.message.content).toEqual(expect.any(String))
      expect(answer.usage?.cost).toBeGreaterThan(0)
      const chunks = streamed<ChatStreamChunk>(
        await client.chat.send({
          chatRequest: { model: 'roster-sim/chat', messages: [{ role: 'user', content: 'hello' }], stream: true },
        }),
      )
      let text = ''
      let finish: string | null | undefined
      for await (const chunk of chunks) {
        text += chunk.choices[0]?.delta.content ?? ''
        finish ??= chunk.choices[0]?.finishReason
      }
      expect(text.split(' ')).toHaveLength(6)
      expect(finish).toBe('stop')
    })

    it('takes json_schema response formats, stop, sampling and the official extensions, and refuses n > 1 naming it', async () => {
      const res = await post('/chat/completions', {
        model: 'roster-sim/chat',
        messages: [
          { role: 'developer', content: 'Answer in JSON.' },
          { role: 'user', content: 'hi' },
        ],
        response_format: {
          type: 'json_schema',
          json_schema: { name: 'answer', schema: { type: 'object' }, strict: true },
        },
        stop: ['\n\n'],
        temperature: 0.2,
        top_p: 0.9,
        seed: 7,
        max_tokens: 50,
        user: 'end-user-1',
        session_id: 'sess-1',
        metadata: { team: 'a' },
        provider: { sort: 'latency' },
        usage: { include: true },
      })
      expect(res.status).toBe(200)
      const upstream = sim.stats.lastBody['/v1/chat/completions'] as any
      expect(upstream).toMatchObject({
        temperature: 0.2,
        top_p: 0.9,
        stop: ['\n\n'],
        response_format: { type: 'json_schema' },
      })
      const n = await post('/chat/completions', {
        model: 'roster-sim/chat',
        n: 2,
        messages: [{ role: 'user', content: 'hi' }],
      })
      expect(n.status).toBe(400)
      expect(((await n.json()) as any).error.message).toMatch(/\/n .*n > 1/)
    })

    it('refuses bad input in the standard envelope, as the openai client reads it', async () => {
      const openai = new OpenAI({ apiKey: key(), baseURL, maxRetries: 0 })
      const err = await openai.chat.completions
        .create({ model: 'roster-sim/chat', messages: [] })
        .catch((e: unknown) => e)
      expect(err).toBeInstanceOf(OpenAI.BadRequestError)
      expect((err as InstanceType<typeof OpenAI.BadRequestError>).message).toMatch(/at least one message/)
      const unknown = await post('/chat/completions', {
        model: 'nobody/none',
        messages: [{ role: 'user', content: 'hi' }],
      })
      expect(unknown.status).toBe(400)
      expect(((await unknown.json()) as any).error).toMatchObject({
        message: expect.stringMatching(/no model named nobody\/none/),
        metadata: { error_type: 'invalid_request' },
      })
      const wrongKey = await fetch(`${baseURL}/chat/completions`, {
        method: 'POST',
        headers: { authorization: 'Bearer sk-nope', 'content-type': 'application/json' },
        body: '{}',
      })
      expect(wrongKey.status).toBe(401)
      const part = await post('/chat/completions', {
        model: 'roster-sim/chat',
        messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'x', format: 'wav' } }] }],
      })
      expect(part.status).toBe(400)
      expect(((await part.json()) as any).error.message).toMatch(/\/messages\/0\/content\/0 .*input_audio/)
    })

    it('fails before the first byte as an HTTP error, and after it as an error chunk the clients read', async () => {
      const limitedRes = await post('/chat/completions', {
        model: 'roster-sim/limited',
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      })
      expect(limitedRes.status).toBe(429)
      expect(((await limitedRes.json()) as any).error.metadata.error_type).toBe('rate_limit_exceeded')

      const res = await post('/chat/completions', {
        model: 'roster-sim/cut',
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      })
      expect(res.status).toBe(200)
      const { events, done } = sseEvents(await res.text())
      expect(done).toBe(true)
      const last = events.at(-1)!.data
      expect(last.choices[0].finish_reason).toBe('error')
      expect(last.error).toMatchObject({ code: 502, metadata: { error_type: 'provider_unavailable' } })
      expect(ChatStreamChunk$inboundSchema.safeParse(last).success).toBe(true)
      const openai = new OpenAI({ apiKey: key(), baseURL, maxRetries: 0 })
      const stream = await openai.chat.completions.create({
        model: 'roster-sim/cut',
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      })
      const thrown = await (async () => {
        for await (const _ of stream);
      })().catch((e: unknown) => e)
      expect(thrown).toBeInstanceOf(OpenAI.APIError)
    })

    it('runs server tools between turns and sends the routing metadata when asked, as /responses does', async () => {
      const res = await post(
        '/chat/completions',
        {
          model: 'roster-sim/chat',
          messages: [
            { role: 'user', content: 'What time is it?\n[sim] call datetime {}\n[sim] say The tool said {{result}}' },
          ],
          tools: [{ type: 'openrouter:datetime' }],
        },
        { 'x-openrouter-metadata': 'enabled' },
      )
      expect(res.status).toBe(200)
      const body = (await res.json()) as any
      expect(chatCompletion(body)).toEqual([])
      expect(body.choices[0].message.content).toMatch(/^The tool said \{.*"datetime"/)
      expect(body.choices[0].message.tool_calls).toBeUndefined()
      expect(body.openrouter_metadata).toMatchObject({ attempt: 1, requested: expect.anything() })
    })

    it('cancels the upstream request when the client goes away', async () => {
      await leaveMidStream(
        `${baseURL}/chat/completions`,
        {
          headers: { authorization: `Bearer ${key()}` },
          body: { model: 'roster-sim/slow', stream: true, messages: [{ role: 'user', content: 'a long one' }] },
        },
        '"content":"',
        slow,
      )
    })
  })

  describe('POST /messages', () => {
    describe.each(SIM_PROTOCOLS)('served by a model speaking %s', (protocol) => {
      it('answers whole with thinking, tool use, an image and a tool_result round trip', async () => {
        const anthropic = new Anthropic({ apiKey: key(), baseURL: anthropicBase(), maxRetries: 0 })
        const messages: Anthropic.MessageParam[] = [
          {
            role: 'user',
            content: [
              { type: 'text', text: SCRIPT },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
            ],
          },
        ]
        const tools: Anthropic.Tool[] = [{ name: 'get_weather', input_schema: WEATHER as Anthropic.Tool.InputSchema }]
        const first = await anthropic.messages.create({
          model: modelOf(protocol),
          max_tokens: 4000,
          system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
          messages,
          tools,
          thinking: { type: 'enabled', budget_tokens: 1024 },
        })
        expect(anthropicMessage(first)).toEqual([])
        expect(first.stop_reason).toBe('tool_use')
        expect(first.content.map((b) => b.type)).toEqual(['thinking', 'tool_use'])
        const use = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')!
        expect(use).toMatchObject({ name: 'get_weather', input: { city: 'Paris' } })
        // The thinking tokens, whichever protocol reported them (the simulator reasons for 8).
        expect(first.usage.output_tokens_details).toEqual({ thinking_tokens: 8 })
        expect(JSON.stringify(sim.stats.lastBody[UPSTREAM_PATH[protocol]])).toContain(PNG)

        messages.push(
          { role: 'assistant', content: first.content },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny' }] },
        )
        const second = await anthropic.messages.create({ model: modelOf(protocol), max_tokens: 200, messages, tools })
        expect(anthropicMessage(second)).toEqual([])
        expect(second.stop_reason).toBe('end_turn')
        // As the Anthropic API sends a text block: no `citations` key unless there are citations.
        expect(second.content).toEqual([{ type: 'text', text: 'It is sunny.' }])
        expect(second.usage.output_tokens).toBeGreaterThan(0)
        expect(second.usage.output_tokens_details).toBeNull()
      })

      it('streams the event sequence the Anthropic client assembles, each event valid for its types', async () => {
        const res = await post('/messages', {
          model: modelOf(protocol),
          max_tokens: 4000,
          stream: true,
          messages: [{ role: 'user', content: SCRIPT }],
          tools: [{ name: 'get_weather', input_schema: WEATHER }],
          thinking: { type: 'enabled', budget_tokens: 1024 },
        })
        expect(res.status).toBe(200)
        const { events } = sseEvents(await res.text())
        for (const e of events) {
          expect(e.name).toBe(e.data.type)
          expect(anthropicEvent(e.data), JSON.stringify(e.data)).toEqual([])
        }
        const types = events.map((e) => e.data.type)
        expect(types[0]).toBe('message_start')
        expect(types.slice(-2)).toEqual(['message_delta', 'message_stop'])
        const starts = events.filter((e) => e.data.type === 'content_block_start').map((e) => e.data.content_block.type)
        expect(starts).toEqual(['thinking', 'tool_use'])
        const json = events
          .filter((e) => e.data.delta?.type === 'input_json_delta')
          .map((e) => e.data.delta.partial_json)
          .join('')
        expect(JSON.parse(json)).toEqual({ city: 'Paris' })
        expect(events.at(-2)!.data).toMatchObject({
          delta: { stop_reason: 'tool_use' },
          usage: { output_tokens: expect.any(Number) },
        })
        // The input is counted as the stream opens, as Anthropic does: the provider's own count where
        // it reports one first (Anthropic's message_start), else Roster's estimate (the prompt's 66
        // bytes and the tool's definition: some 30 tokens), never 0.
        const opening = events[0]!.data.message.usage.input_tokens
        const final = events.at(-2)!.data.usage.input_tokens
        if (protocol === 'anthropic-messages') expect(opening).toBe(final)
        else expect(opening).toBeGreaterThan(15)
        expect(opening).toBeLessThan(80)
      })
    })

    // Anthropic refuses a tool loop's next turn with thinking on unless its last assistant turn
    // begins with that turn's thinking, signed as it was sent (the simulator checks both, in
    // Anthropic's words): the thinking goes back through every door that can carry it.
    describe.each(SIM_PROTOCOLS)('a thinking + tools loop served by a model speaking %s', (protocol) => {
      const thinking = { type: 'enabled', budget_tokens: 1024 } as const
      const tools: Anthropic.Tool[] = [{ name: 'get_weather', input_schema: WEATHER as Anthropic.Tool.InputSchema }]

      it('continues on /messages, the thinking streamed with its signature and given back as it came', async () => {
        const anthropic = new Anthropic({ apiKey: key(), baseURL: anthropicBase(), maxRetries: 0 })
        const messages: Anthropic.MessageParam[] = [{ role: 'user', content: SCRIPT }]
        const first = await anthropic.messages
          .stream({ model: modelOf(protocol), max_tokens: 4000, messages, tools, thinking })
          .finalMessage()
        expect(first.content.map((b) => b.type)).toEqual(['thinking', 'tool_use'])
        const signed = first.content[0] as Anthropic.ThinkingBlock
        if (protocol === 'anthropic-messages') expect(signed.signature).toMatch(/^sim-sig-/)
        const use = first.content[1] as Anthropic.ToolUseBlock
        messages.push(
          { role: 'assistant', content: first.content },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny' }] },
        )
        const second = await anthropic.messages.create({
          model: modelOf(protocol),
          max_tokens: 4000,
          messages,
          tools,
          thinking,
        })
        expect(anthropicMessage(second)).toEqual([])
        expect(second.content.at(-1)).toEqual({ type: 'text', text: 'It is sunny.' })
        if (protocol === 'anthropic-messages') {
          expect((sim.stats.lastBody['/v1/messages'] as any).thinking).toMatchObject({ type: 'enabled' })
          const sent = (sim.stats.lastBody['/v1/messages'] as any).messages[1]
          expect(sent.content.slice(0, 2)).toEqual([
            { type: 'thinking', thinking: signed.thinking, signature: signed.signature },
            { type: 'tool_use', id: use.id, name: 'get_weather', input: { city: 'Paris' } },
          ])
        }
        // Thinking altered on its way back is refused, in the provider's words, as the client raises it.
        const tampered = messages.map((m, i) =>
          i === 1 ? { ...m, content: [{ ...signed, thinking: signed.thinking + ' (edited)' }, use] } : m,
        )
        const refused = await anthropic.messages
          .create({
            model: modelOf(protocol),
            max_tokens: 4000,
            messages: tampered as Anthropic.MessageParam[],
            tools,
            thinking,
          })
          .catch((e: unknown) => e)
        if (protocol === 'anthropic-messages') {
          expect(refused).toBeInstanceOf(Anthropic.BadRequestError)
          expect(String((refused as Error).message)).toMatch(/Invalid `signature` in `thinking` block/)
        } else expect(refused).not.toBeInstanceOf(Error)
      })

      it('continues on /responses, the reasoning item and its encrypted_content given back', async () => {
        const openai = new OpenAI({ apiKey: key(), baseURL, maxRetries: 0 })
        const input: OpenAI.Responses.ResponseInput = [{ role: 'user', content: SCRIPT }]
        const fn = [{ type: 'function' as const, name: 'get_weather', parameters: WEATHER, strict: false }]
        const first = await openai.responses.create({
          model: modelOf(protocol),
          input,
          tools: fn,
          reasoning: { effort: 'low' },
          include: ['reasoning.encrypted_content'],
        })
        expect(first.output.map((i) => i.type)).toEqual(['reasoning', 'function_call'])
        const call = first.output[1] as OpenAI.Responses.ResponseFunctionToolCall
        const second = await openai.responses.create({
          model: modelOf(protocol),
          input: [
            ...input,
            ...(first.output as OpenAI.Responses.ResponseInputItem[]),
            { type: 'function_call_output', call_id: call.call_id, output: 'sunny' },
          ],
          tools: fn,
          reasoning: { effort: 'low' },
        })
        expect(second.output_text).toBe('It is sunny.')
        if (protocol === 'anthropic-messages') {
          expect((sim.stats.lastBody['/v1/messages'] as any).thinking).toMatchObject({ type: 'enabled' })
          const sent = (sim.stats.lastBody['/v1/messages'] as any).messages[1]
          expect(sent.content[0]).toMatchObject({
            type: 'thinking',
            signature: (first.output[0] as any).encrypted_content,
          })
        }
      })

      it("continues through Roster's own server tools, each turn's thinking given back", async () => {
        const res = await post('/messages', {
          model: modelOf(protocol),
          max_tokens: 4000,
          thinking,
          messages: [
            { role: 'user', content: 'What time is it?\n[sim] call datetime {}\n[sim] say The tool said {{result}}' },
          ],
          tools: [{ type: 'openrouter:datetime' }],
        })
        const body = (await res.json()) as any
        expect(res.status, JSON.stringify(body)).toBe(200)
        expect(body.content.at(-1).text).toMatch(/^The tool said \{.*"datetime"/)
        if (protocol === 'anthropic-messages') {
          // The second turn kept thinking on, the first turn's signed thinking before its call.
          const sent = sim.stats.lastBody['/v1/messages'] as any
          expect(sent.thinking).toMatchObject({ type: 'enabled' })
          expect(sent.messages[1].content.map((b: any) => b.type)).toEqual(['thinking', 'tool_use'])
        }
      })
    })

    it('works through messages.stream, the Anthropic client assembling the message', async () => {
      const anthropic = new Anthropic({ apiKey: key(), baseURL: anthropicBase(), maxRetries: 0 })
      const stream = anthropic.messages.stream({
        model: 'roster-sim/chat',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'Say something.' }],
      })
      let text = ''
      stream.on('text', (t) => (text += t))
      // What LangChain's and LiteLLM's Anthropic integrations read: the input as the stream opens.
      let opening: number | undefined
      stream.on('streamEvent', (e) => {
        if (e.type === 'message_start') opening = e.message.usage.input_tokens
      })
      const final = await stream.finalMessage()
      expect(opening).toBeGreaterThan(0)
      expect(anthropicMessage(final)).toEqual([])
      expect(final.content).toEqual([{ type: 'text', text }])
      expect(text.split(' ')).toHaveLength(6)
      expect(final.usage.output_tokens).toBe(6)
      expect(final.stop_reason).toBe('end_turn')
    })

    it("answers the routes around the door as Anthropic's clients call them: count_tokens, the models list, request-id", async () => {
      const anthropic = new Anthropic({ apiKey: key(), baseURL: anthropicBase(), maxRetries: 0 })
      const ask = {
        model: modelOf('openai-chat'),
        messages: [{ role: 'user' as const, content: SCRIPT }],
        tools: [{ name: 'get_weather', input_schema: WEATHER as Anthropic.Tool.InputSchema }],
      }
      // count_tokens: Roster's estimate, the same that a stream's message_start gives before a provider counts.
      const counted = await anthropic.messages.countTokens(ask)
      expect(counted.input_tokens).toBeGreaterThan(15)
      expect(counted._request_id).toMatch(/\S/)
      let opening: number | undefined
      await anthropic.messages
        .stream({ ...ask, max_tokens: 100 })
        .on('streamEvent', (e) => {
          if (e.type === 'message_start') opening = e.message.usage.input_tokens
        })
        .finalMessage()
      expect(opening).toBe(counted.input_tokens)
      const unknown = await anthropic.messages.countTokens({ ...ask, model: 'nobody/nothing' }).catch((e: unknown) => e)
      expect(unknown).toBeInstanceOf(Anthropic.NotFoundError)
      expect((unknown as InstanceType<typeof Anthropic.NotFoundError>).requestID).toMatch(/\S/)
      const invalid = await anthropic.messages.countTokens({ ...ask, messages: [] }).catch((e: unknown) => e)
      expect(invalid).toBeInstanceOf(Anthropic.BadRequestError)

      // The models list in Anthropic's page shape, with x-api-key, paged as the client pages it.
      const ids: string[] = []
      for await (const m of anthropic.models.list({ limit: 2 })) {
        expect(m).toMatchObject({ type: 'model', id: expect.any(String), display_name: expect.any(String) })
        expect(Number.isNaN(Date.parse(m.created_at))).toBe(false)
        ids.push(m.id)
      }
      const catalogue = (
        (await (await fetch(`${baseURL}/models`, { headers: { authorization: `Bearer ${key()}` } })).json()) as any
      ).data
      expect(ids.sort()).toEqual(catalogue.map((m: any) => m.id).sort())
      const nobody = await new Anthropic({ apiKey: 'sk-nope', baseURL: anthropicBase(), maxRetries: 0 }).models
        .list()
        .catch((e: unknown) => e)
      expect(nobody).toBeInstanceOf(Anthropic.AuthenticationError)
      expect((nobody as InstanceType<typeof Anthropic.AuthenticationError>).requestID).toMatch(/\S/)

      // request-id on every /messages answer: whole, streamed, refused.
      const whole = await anthropic.messages.create({ ...ask, max_tokens: 20 }).withResponse()
      expect(whole.response.headers.get('request-id')).toBe(whole.response.headers.get('x-request-id'))
      // The client puts the request id on the message it returns (not in its type).
      expect((whole.data as { _request_id?: string })._request_id).toBe(whole.response.headers.get('request-id'))
      const streamed = await post('/messages', { ...ask, max_tokens: 20, stream: true })
      expect(streamed.headers.get('request-id')).toMatch(/\S/)
      await streamed.text()
      const refused = await post('/messages', { ...ask, max_tokens: 0 })
      expect(refused.status).toBe(400)
      expect(refused.headers.get('request-id')).toMatch(/\S/)
    })

    it('refuses a bad key on the gateway routes in the documented envelope, error_type included', async () => {
      for (const path of ['/models', '/responses', '/chat/completions']) {
        const res = await fetch(`${baseURL}${path}`, {
          method: path === '/models' ? 'GET' : 'POST',
          headers: { authorization: 'Bearer sk-nope', 'content-type': 'application/json' },
          ...(path === '/models' ? {} : { body: '{}' }),
        })
        expect(res.status, path).toBe(401)
        expect(await res.json(), path).toEqual({
          error: { code: 401, message: expect.any(String), metadata: { error_type: 'authentication' } },
        })
      }
      const openai = new OpenAI({ apiKey: 'sk-nope', baseURL, maxRetries: 0 })
      const thrown = await openai.models.list().catch((e: unknown) => e)
      expect(thrown).toBeInstanceOf(OpenAI.AuthenticationError)
    })

    it('takes the key as x-api-key or bearer, and refuses in the shape the Anthropic client parses', async () => {
      const viaHeader = await fetch(`${baseURL}/messages`, {
        method: 'POST',
        headers: { 'x-api-key': key(), 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'roster-sim/chat', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] }),
      })
      expect(viaHeader.status).toBe(200)
      const anthropic = new Anthropic({ apiKey: key(), baseURL: anthropicBase(), maxRetries: 0 })
      const bad = await anthropic.messages
        .create({ model: 'roster-sim/chat', max_tokens: 20, messages: [] })
        .catch((e: unknown) => e)
      expect(bad).toBeInstanceOf(Anthropic.BadRequestError)
      expect((bad as InstanceType<typeof Anthropic.BadRequestError>).error).toMatchObject({
        type: 'error',
        error: { type: 'invalid_request_error', message: expect.stringMatching(/at least one message/) },
      })
      const nobody = await new Anthropic({ apiKey: 'sk-nope', baseURL: anthropicBase(), maxRetries: 0 }).messages
        .create({ model: 'roster-sim/chat', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] })
        .catch((e: unknown) => e)
      expect(nobody).toBeInstanceOf(Anthropic.AuthenticationError)
      const limitedErr = await anthropic.messages
        .create({ model: 'roster-sim/limited', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] })
        .catch((e: unknown) => e)
      expect(limitedErr).toBeInstanceOf(Anthropic.RateLimitError)
      const tool = await post('/messages', {
        model: 'roster-sim/chat',
        max_tokens: 20,
        messages: [{ role: 'user', content: 'hi' }],
        tools: [{ type: 'web_search_20250305', name: 'web_search' }],
      })
      // A provider's own tool Roster cannot offer is left out, and the answer says so.
      expect(tool.status).toBe(200)
      expect(tool.headers.get('warning')).toMatch(/web_search_20250305/)
      const document = await post('/messages', {
        model: 'roster-sim/chat',
        max_tokens: 20,
        messages: [
          {
            role: 'user',
            content: [{ type: 'document', source: { type: 'text', data: 'x', media_type: 'text/plain' } }],
          },
        ],
      })
      expect(((await document.json()) as any).error.message).toMatch(/\/messages\/0\/content\/0 .*document/)
    })

    it('fails after the first byte with an error event the client raises', async () => {
      const res = await post('/messages', {
        model: 'roster-sim/cut',
        max_tokens: 100,
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      })
      expect(res.status).toBe(200)
      const { events } = sseEvents(await res.text())
      expect(events.at(-1)).toMatchObject({
        name: 'error',
        data: { type: 'error', error: { type: 'api_error', message: expect.any(String) } },
      })
      const anthropic = new Anthropic({ apiKey: key(), baseURL: anthropicBase(), maxRetries: 0 })
      const thrown = await anthropic.messages
        .stream({ model: 'roster-sim/cut', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] })
        .finalMessage()
        .catch((e: unknown) => e)
      expect(thrown).toBeInstanceOf(Error)
    })

    it('cancels the upstream request when the client goes away', async () => {
      await leaveMidStream(
        `${baseURL}/messages`,
        {
          headers: { 'x-api-key': key() },
          body: {
            model: 'roster-sim/slow',
            max_tokens: 1000,
            stream: true,
            messages: [{ role: 'user', content: 'a long one' }],
          },
        },
        'text_delta',
        slow,
      )
    })
  })
})
