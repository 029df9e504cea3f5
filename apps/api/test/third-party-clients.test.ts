import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import Anthropic from '@anthropic-ai/sdk'
import OpenAI from 'openai'
import { generateText, stepCountIs, streamText, tool } from 'ai'
import { createAnthropic } from '@ai-sdk/anthropic'
import { createOpenRouter } from '@openrouter/ai-sdk-provider'
import { ChatOpenAI } from '@langchain/openai'
import type { AIMessageChunk } from '@langchain/core/messages'
import { useTestTenant } from '@roster/testing'
import { DEMO_MODELS, sseEvents, useDemoGateway } from './helpers.js'

// The gateway's doors through clients nobody here wrote, unchanged: the Vercel AI SDK's Anthropic
// provider on /messages, OpenRouter's AI SDK provider, the openai client's stream helpers and
// LangChain on /chat/completions. Each reads the wire as the provider it was made for sends it, not
// as one client's type declarations say it; a reply they refuse is a reply users cannot use.
const env = useTestTenant()
const gateway = useDemoGateway(() => env.t.db, { replyTokens: 5 })
let baseURL: string

beforeAll(async () => {
  baseURL = `${await gateway.app.listen({ port: 0, host: '127.0.0.1' })}/api/v1`
})
afterAll(async () => {
  await gateway.app?.close()
})

const key = () => env.tenant.keys.user
/** A prompt whose simulator script calls the weather tool first, then answers with its result. */
const SCRIPT = 'What is the weather?\n[sim] call get_weather {"city":"Paris"}\n[sim] say It is {{result}}.'
const weather = () =>
  tool({
    description: 'The weather in a city',
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => (city === 'Paris' ? 'sunny' : 'unknown'),
  })

describe('@ai-sdk/anthropic on /messages', () => {
  const anthropic = () => createAnthropic({ apiKey: key(), baseURL })

  it.each(DEMO_MODELS)('generates, streams and round-trips a tool call with %s', async (model) => {
    const whole = await generateText({ model: anthropic()(model), prompt: 'Say something.', maxRetries: 0 })
    expect(whole.text.split(' ')).toHaveLength(5)
    expect(whole.usage).toMatchObject({ inputTokens: expect.any(Number), outputTokens: 5 })
    expect(whole.finishReason).toBe('stop')

    const streamed = streamText({
      model: anthropic()(model),
      prompt: 'Say something.',
      maxRetries: 0,
      onError: () => {},
    })
    let text = ''
    for await (const delta of streamed.textStream) text += delta
    expect(text).toBe(await streamed.text)
    expect(text.split(' ')).toHaveLength(5)
    expect((await streamed.usage).outputTokens).toBe(5)

    const tooled = await generateText({
      model: anthropic()(model),
      prompt: SCRIPT,
      tools: { get_weather: weather() },
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    })
    expect(tooled.steps.map((s) => s.finishReason)).toEqual(['tool-calls', 'stop'])
    expect(tooled.steps[0]!.toolCalls[0]).toMatchObject({ toolName: 'get_weather', input: { city: 'Paris' } })
    expect(tooled.text).toBe('It is sunny.')
  })

  it('carries an image a tool returned (toModelOutput image-data) to a provider that takes one, and refuses it, naming the model, where none can', async () => {
    const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=='
    const screenshot = tool({
      description: 'A screenshot',
      inputSchema: z.object({}),
      execute: async () => PNG,
      toModelOutput: ({ output }) => ({
        type: 'content',
        value: [
          { type: 'text', text: 'the screen:' },
          { type: 'image-data', data: output, mediaType: 'image/png' },
        ],
      }),
    })
    const look = (model: string) =>
      generateText({
        model: anthropic()(model),
        prompt: 'Look.\n[sim] call screenshot {}\n[sim] say Seen.',
        tools: { screenshot },
        stopWhen: stepCountIs(3),
        maxRetries: 0,
      })
    const seen = await look('roster-sim/messages')
    expect(seen.text).toBe('Seen.')
    const sent = gateway.sim.stats.lastBody['/v1/messages'] as { messages: { content: unknown[] }[] }
    expect(sent.messages.at(-1)!.content[0]).toMatchObject({
      type: 'tool_result',
      content: [
        { type: 'text', text: 'the screen:' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
      ],
    })
    const refused = await look('roster-sim/chat').catch((e: unknown) => e)
    expect(String((refused as Error).message)).toMatch(/roster-sim\/chat: no endpoint takes images in tool results/)
  })

  it('is sent what the Anthropic API sends: no `citations` on a text block, whole or streamed, which its own client reads too', async () => {
    const headers = { 'x-api-key': key(), 'anthropic-version': '2023-06-01', 'content-type': 'application/json' }
    const body = { model: 'roster-sim/chat', max_tokens: 100, messages: [{ role: 'user', content: 'hello' }] }
    const whole = await (
      await fetch(`${baseURL}/messages`, { method: 'POST', headers, body: JSON.stringify(body) })
    ).json()
    expect(whole.content).toEqual([{ type: 'text', text: expect.any(String) }])
    const streamed = sseEvents(
      await (
        await fetch(`${baseURL}/messages`, { method: 'POST', headers, body: JSON.stringify({ ...body, stream: true }) })
      ).text(),
    )
    expect(streamed.events.find((e) => e.name === 'content_block_start')!.data.content_block).toEqual({
      type: 'text',
      text: '',
    })

    const official = new Anthropic({ apiKey: key(), baseURL: baseURL.replace(/\/v1$/, ''), maxRetries: 0 })
    const message = await official.messages.create(body as Anthropic.MessageCreateParamsNonStreaming)
    expect(message.content[0]).toMatchObject({ type: 'text', text: whole.content[0].text })
    expect(
      (await official.messages.stream(body as Anthropic.MessageCreateParamsStreaming).finalMessage()).content,
    ).toEqual([{ type: 'text', text: whole.content[0].text }])
  })
})

describe('usage on every /chat/completions stream, as OpenRouter sends it', () => {
  it('reaches @openrouter/ai-sdk-provider, which asks for none', async () => {
    const openrouter = createOpenRouter({ apiKey: key(), baseURL })
    const streamed = streamText({
      model: openrouter.chat('roster-sim/chat'),
      prompt: 'Say something.',
      maxRetries: 0,
      onError: () => {},
    })
    const text = await streamed.text
    expect(text.split(' ')).toHaveLength(5)
    expect(await streamed.usage).toMatchObject({
      inputTokens: expect.any(Number),
      outputTokens: 5,
      totalTokens: expect.any(Number),
    })
    expect((await streamed.usage).inputTokens).toBeGreaterThan(0)

    const tooled = await generateText({
      model: openrouter.chat('roster-sim/responses'),
      prompt: SCRIPT,
      tools: { get_weather: weather() },
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    })
    expect(tooled.text).toBe('It is sunny.')
  })

  it('is the last chunk before [DONE], whatever stream_options and usage.include say', async () => {
    for (const extra of [
      {},
      { stream_options: { include_usage: false } },
      { usage: { include: false } },
      { stream_options: null },
    ]) {
      const res = await fetch(`${baseURL}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key()}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'roster-sim/chat',
          stream: true,
          messages: [{ role: 'user', content: 'hi' }],
          ...extra,
        }),
      })
      const { events, done } = sseEvents(await res.text())
      expect(done).toBe(true)
      expect(events.at(-1)!.data).toMatchObject({
        choices: [],
        usage: {
          prompt_tokens: expect.any(Number),
          completion_tokens: 5,
          total_tokens: expect.any(Number),
          cost: expect.any(Number),
        },
      })
      expect(events.filter((e) => e.data.usage)).toHaveLength(1)
    }
  })

  it('is read by the openai client’s stream helpers, asked for or not', async () => {
    const openai = new OpenAI({ apiKey: key(), baseURL, maxRetries: 0 })
    const stream = openai.chat.completions.stream({
      model: 'roster-sim/messages',
      messages: [{ role: 'user', content: 'Say something.' }],
    })
    let text = ''
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ''
    const final = await stream.finalChatCompletion()
    expect([final.choices[0]!.message.content, final.usage?.completion_tokens]).toEqual([text, 5])

    const raw = await openai.chat.completions.create({
      model: 'roster-sim/chat',
      stream: true,
      messages: [{ role: 'user', content: 'Say something.' }],
    })
    const chunks: OpenAI.ChatCompletionChunk[] = []
    for await (const chunk of raw) chunks.push(chunk)
    expect(chunks.at(-1)!.usage?.completion_tokens).toBe(5)
  })

  it('is read by LangChain’s ChatOpenAI, with its own stream_options and without', async () => {
    for (const streamUsage of [true, false]) {
      const chat = new ChatOpenAI({
        model: 'roster-sim/chat',
        apiKey: key(),
        configuration: { baseURL },
        maxRetries: 0,
        streamUsage,
      })
      let merged: AIMessageChunk | undefined
      for await (const chunk of await chat.stream('Say something.')) merged = merged ? merged.concat(chunk) : chunk
      expect((merged!.content as string).split(' ')).toHaveLength(5)
      expect(merged!.usage_metadata).toMatchObject({ input_tokens: expect.any(Number), output_tokens: 5 })
    }
  })
})

// Last: it rules the whole workspace until its default guardrail is deleted again.
describe('a guardrail’s refusal and redaction, through the clients', () => {
  it('reaches each client as the error it knows (403, the guardrail named), and a redacted stream reads as any other', async () => {
    const manage = (method: string, path: string, body?: unknown) =>
      fetch(`${baseURL}${path}`, {
        method,
        headers: { authorization: `Bearer ${env.tenant.keys.management}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
    const id = (await (await manage('GET', '/workspaces/default')).json()).data.default_guardrail_id as string
    expect(
      (
        await manage('PATCH', `/guardrails/${id}`, {
          content_filters: [{ pattern: '(?i)launch codes', action: 'block' }],
          content_filter_builtins: [{ slug: 'email', action: 'redact' }],
        })
      ).status,
    ).toBe(200)
    try {
      const blocked = 'the launch codes, please'
      const said = /guardrail .* blocks this request/
      const openai = new OpenAI({ apiKey: key(), baseURL, maxRetries: 0 })
      const viaOpenAI = await openai.chat.completions
        .create({ model: 'roster-sim/chat', stream: true, messages: [{ role: 'user', content: blocked }] })
        .then(
          () => undefined,
          (e: unknown) => e,
        )
      expect(viaOpenAI).toBeInstanceOf(OpenAI.PermissionDeniedError)
      expect((viaOpenAI as Error).message).toMatch(said)

      const anthropic = new Anthropic({ apiKey: key(), baseURL: baseURL.replace(/\/v1$/, ''), maxRetries: 0 })
      const viaAnthropic = await anthropic.messages
        .create({ model: 'roster-sim/messages', max_tokens: 16, messages: [{ role: 'user', content: blocked }] })
        .then(
          () => undefined,
          (e: unknown) => e,
        )
      expect(viaAnthropic).toBeInstanceOf(Anthropic.PermissionDeniedError)
      expect((viaAnthropic as Error).message).toMatch(said)

      const viaAiSdk = await generateText({
        model: createOpenRouter({ apiKey: key(), baseURL }).chat('roster-sim/chat'),
        prompt: blocked,
        maxRetries: 0,
      }).then(
        () => undefined,
        (e: unknown) => e as { statusCode?: number; message: string },
      )
      expect(viaAiSdk?.statusCode).toBe(403)
      expect(viaAiSdk?.message).toMatch(said)
      const viaAiSdkAnthropic = await generateText({
        model: createAnthropic({ apiKey: key(), baseURL })('roster-sim/messages'),
        prompt: blocked,
        maxRetries: 0,
      }).then(
        () => undefined,
        (e: unknown) => e as { statusCode?: number; message: string },
      )
      expect(viaAiSdkAnthropic?.statusCode).toBe(403)
      expect(viaAiSdkAnthropic?.message).toMatch(said)

      const viaLangChain = await new ChatOpenAI({
        model: 'roster-sim/chat',
        apiKey: key(),
        configuration: { baseURL },
        maxRetries: 0,
      })
        .invoke(blocked)
        .then(
          () => undefined,
          (e: unknown) => e as { status?: number; message: string },
        )
      expect(viaLangChain?.status).toBe(403)
      expect(viaLangChain?.message).toMatch(said)

      // Redacted, the request goes on: the stream is read whole, usage last.
      const stream = openai.chat.completions.stream({
        model: 'roster-sim/chat',
        messages: [{ role: 'user', content: 'Say something to ada@example.com.' }],
      })
      let text = ''
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ''
      expect(text.split(' ')).toHaveLength(5)
      expect((await stream.finalChatCompletion()).usage?.completion_tokens).toBe(5)
      expect(JSON.stringify(gateway.sim.stats.lastBody['/v1/chat/completions'])).toContain('to [EMAIL].')
    } finally {
      await manage('DELETE', `/guardrails/${id}`)
    }
  })
})
