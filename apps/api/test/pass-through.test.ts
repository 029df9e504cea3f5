import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import OpenAI from 'openai'
import Anthropic from '@anthropic-ai/sdk'
import type { Catalogue } from '@roster/gateway'
import type { GenerationDrain } from '../../worker/src/generation-drain.js'
import { useTestTenant, waitFor } from '@roster/testing'
import { buildTestApp, simEndpoint, simModel, startDrain } from './helpers.js'
import { clientType } from './client-schemas.js'

// Pass-through (issue 60): /chat/completions and /messages answered with the provider's own bytes
// where the endpoint speaks the door's protocol. A provider double of this test's (a provider cannot
// run here) answers in its own spacing, with fields no client type names and escapes a re-serializer
// would undo; what reaches the client is those bytes, but for what Roster answers for (the id its
// generation is found by, the model as the catalogue names it, the cost in the usage).

const env = useTestTenant()
const prefix = `{t-pass-${Date.now()}}`
let provider: Server
let app: Awaited<ReturnType<typeof buildTestApp>>
let drain: GenerationDrain
let base: string

/** A chat completion as a provider might write it: spaced, escaped, with fields of its own. */
const CHAT_WHOLE =
  '{ "id" : "chatcmpl-provider-1", "object":"chat.completion", "created":1700000000, "model":"gpt-x-2026-01-01",' +
  ' "system_fingerprint":"fp_prov", "service_tier":"default", "x_provider":{"region":"eu","note":"\\"quoted\\" } {"},\n' +
  ' "choices":[{"index":0,"message":{"role":"assistant","content":"Hello \\u00e9 world","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],\n' +
  ' "usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"accepted_prediction_tokens":0}} }'

const chunk = (rest: string) =>
  `{"id":"chatcmpl-provider-2","object":"chat.completion.chunk","created":1700000000,"model":"gpt-x-2026-01-01","service_tier":"default","system_fingerprint":"fp_prov",${rest},"obfuscation":"Zq9"}`
const CHAT_CHUNKS = [
  chunk(
    '"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]',
  ),
  chunk('"choices":[{"index":0,"delta":{"content":"Hel"},"logprobs":null,"finish_reason":null}]'),
  chunk('"choices":[{"index":0,"delta":{"content":"lo \\u00e9"},"logprobs":null,"finish_reason":null}]'),
  chunk('"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]'),
  chunk(
    '"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}',
  ),
]

/** A Message with every key the Anthropic client's types require, and one of the provider's own. */
const MESSAGE_WHOLE =
  '{"model":"claude-x-2026","id":"msg_provider_1","type":"message","role":"assistant","content":[{"type":"text","text":"Hi \\u00e9"}],' +
  '"stop_reason":"end_turn","stop_sequence":null,"stop_details":null,"container":null,"diagnostics":null,"x_trace":"t-1",' +
  '"usage":{"input_tokens":7,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":null,"output_tokens":2,' +
  '"output_tokens_details":null,"server_tool_use":null,"inference_geo":"eu","service_tier":"standard","speed":null}}'
const MESSAGE_EVENTS: [string, string][] = [
  [
    'message_start',
    `{"type":"message_start","message":${MESSAGE_WHOLE.replace('[{"type":"text","text":"Hi \\u00e9"}]', '[]').replace('"end_turn"', 'null')}}`,
  ],
  ['content_block_start', '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}'],
  ['ping', '{"type": "ping"}'],
  ['content_block_delta', '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi \\u00e9"}}'],
  ['content_block_stop', '{"type":"content_block_stop","index":0}'],
  [
    'message_delta',
    '{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null,"stop_details":null,"container":null},"usage":{"input_tokens":7,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":2,"output_tokens_details":null,"server_tool_use":null}}',
  ],
  ['message_stop', '{"type":"message_stop"}'],
]

beforeAll(async () => {
  provider = createServer((req, res) => {
    let body = ''
    req.on('data', (c) => (body += c))
    req.on('end', () => {
      const { stream, model } = JSON.parse(body) as { stream?: boolean; model?: string }
      const chat = req.url === '/v1/chat/completions'
      if (model === 'one-chunk') {
        // The whole reply in one chunk that also says how it finished (held by the pass: the door's).
        res.writeHead(200, { 'content-type': 'text/event-stream' })
        return res.end(
          `data: ${chunk('"choices":[{"index":0,"delta":{"role":"assistant","content":"All at once"},"finish_reason":"stop"}]')}\n\n` +
            `data: ${CHAT_CHUNKS[4]}\n\ndata: [DONE]\n\n`,
        )
      }
      if (model === 'cut') {
        // Its opening chunk (held by the pass), then the connection gone: the next endpoint is tried.
        res.writeHead(200, { 'content-type': 'text/event-stream' })
        res.write(`data: ${CHAT_CHUNKS[0]}\n\n`)
        return setTimeout(() => res.destroy(), 20)
      }
      if (!stream) {
        res.writeHead(200, { 'content-type': 'application/json' })
        return res.end(chat ? CHAT_WHOLE : MESSAGE_WHOLE)
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      if (chat) res.end(`${CHAT_CHUNKS.map((c) => `data: ${c}\n\n`).join('')}data: [DONE]\n\n`)
      else res.end(MESSAGE_EVENTS.map(([name, data]) => `event: ${name}\ndata: ${data}\n\n`).join(''))
    })
  })
  await new Promise<void>((r) => provider.listen(0, '127.0.0.1', r))
  const url = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`
  const catalogue: Catalogue = {
    models: [
      simModel('double/chat', [simEndpoint(url, 'openai-chat', { provider: 'double' })]),
      simModel('double/messages', [simEndpoint(url, 'anthropic-messages', { provider: 'double' })]),
      simModel('double/one-chunk', [
        simEndpoint(url, 'openai-chat', { provider: 'double', upstream_model: 'one-chunk' }),
      ]),
      simModel('double/cut-then-anthropic', [
        simEndpoint(url, 'openai-chat', { provider: 'double-cut', upstream_model: 'cut' }),
        simEndpoint(url, 'anthropic-messages', { provider: 'double' }),
      ]),
    ],
  }
  app = await buildTestApp(env.t.db, { QUEUE_PREFIX: prefix }, catalogue)
  base = `${await app.listen({ port: 0, host: '127.0.0.1' })}/api/v1`
  drain = startDrain(env.t.db, env.t.url, prefix)
})
afterAll(async () => {
  await drain?.stop()
  await app?.closeAll()
  await new Promise((r) => provider?.close(r))
})

const key = () => env.tenant.keys.user
const post = (path: string, body: object, headers: Record<string, string> = {}) =>
  fetch(`${base}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key()}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  })
const hi = [{ role: 'user', content: 'hi' }]
const CHAT = { model: 'double/chat', messages: hi }
const MESSAGES = { model: 'double/messages', max_tokens: 64, messages: hi }

/** Roster's cost members as the chat door adds them to a usage (what the test takes out to compare). */
const ROSTER_CHAT_USAGE = /,"cost":[0-9.e-]+,"is_byok":false,"cost_details":\{[^}]*\}/
/** The generation of a reply, once drained. */
async function generation(id: string) {
  let row: Record<string, unknown> | undefined
  await waitFor(
    async () => {
      const res = await fetch(`${base}/generation?id=${encodeURIComponent(id)}`, {
        headers: { authorization: `Bearer ${key()}` },
      })
      if (res.status === 200) row = ((await res.json()) as { data: Record<string, unknown> }).data
      return !!row
    },
    { timeoutMs: 10_000, intervalMs: 50, what: `generation ${id}` },
  )
  return row!
}

describe('/chat/completions from an openai-chat endpoint', () => {
  it('answers a whole reply with the provider’s bytes, its id, model and cost Roster’s', async () => {
    const res = await post('/chat/completions', CHAT)
    const text = await res.text()
    expect(res.status, text).toBe(200)
    expect(res.headers.get('x-roster-reply-path')).toBe('pass-through')
    const reply = JSON.parse(text) as { id: string; model: string; usage: Record<string, unknown> }
    expect(reply.id).toMatch(/^chatcmpl-/)
    expect(reply.model).toBe('double/chat')
    // 5 tokens in at 1e-6, 3 out at 2e-6.
    expect(reply.usage).toMatchObject({ prompt_tokens: 5, completion_tokens: 3, cost: 0.000011, is_byok: false })
    // Every other byte is the provider's: its spacing, its escape, its own field.
    const theirs = CHAT_WHOLE.replace('"chatcmpl-provider-1"', `"${reply.id}"`).replace(
      '"gpt-x-2026-01-01"',
      '"double/chat"',
    )
    expect(text.replace(ROSTER_CHAT_USAGE, '')).toBe(theirs)
    expect(clientType('openai', 'ChatCompletion')(reply)).toEqual([])
    // The generation is found by the id the client got, and says which way the reply went.
    expect(await generation(reply.id)).toMatchObject({ pass_through: true, tokens_prompt: 5, tokens_completion: 3 })
  })

  it('forwards a stream’s chunks as they came, holding how it finished and its usage until it is accounted', async () => {
    const res = await post('/chat/completions', { ...CHAT, stream: true })
    const text = await res.text()
    expect(res.headers.get('x-roster-reply-path')).toBe('pass-through')
    const datas = text
      .split('\n\n')
      .filter(Boolean)
      .map((b) => b.replace(/^data: /, ''))
    expect(datas.at(-1)).toBe('[DONE]')
    const id = (JSON.parse(datas[0]!) as { id: string }).id
    const theirs = CHAT_CHUNKS.map((c) =>
      c.replace('"chatcmpl-provider-2"', `"${id}"`).replace('"gpt-x-2026-01-01"', '"double/chat"'),
    )
    expect(datas.slice(0, -1).map((d) => d.replace(ROSTER_CHAT_USAGE, ''))).toEqual(theirs)
    expect(datas.at(-2)).toMatch(ROSTER_CHAT_USAGE)
    // The openai client reads it as it reads any stream.
    const client = new OpenAI({ apiKey: key(), baseURL: base, maxRetries: 0 })
    let said = ''
    for await (const c of await client.chat.completions.create({
      ...CHAT,
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    }))
      said += c.choices[0]?.delta.content ?? ''
    expect(said).toBe('Hello é')
    expect(await generation(id)).toMatchObject({ pass_through: true, streamed: true, tokens_completion: 3 })
  })

  it('leaves the stream to the door when the provider’s first words come with its end, or its call breaks before it said anything', async () => {
    const client = new OpenAI({ apiKey: key(), baseURL: base, maxRetries: 0 })
    const read = async (model: string) => {
      const { data, response } = await client.chat.completions
        .create({ model, messages: [{ role: 'user', content: 'hi' }], stream: true })
        .withResponse()
      let text = ''
      let id = ''
      let finish: string | null | undefined
      for await (const c of data) {
        id ||= c.id
        text += c.choices[0]?.delta.content ?? ''
        finish = c.choices[0]?.finish_reason ?? finish
      }
      return { text, id, finish, path: response.headers.get('x-roster-reply-path') }
    }
    // Everything in the chunk the pass holds for the record: the door writes the stream, whole.
    const once = await read('double/one-chunk')
    expect(once).toMatchObject({ text: 'All at once', finish: 'stop', path: 'translated' })
    expect(await generation(once.id)).toMatchObject({ pass_through: false })
    // The first endpoint's opening chunk held, then its connection lost: the next (Anthropic's) answers, translated.
    const fell = await read('double/cut-then-anthropic')
    expect(fell).toMatchObject({ text: 'Hi é', finish: 'stop', path: 'translated' })
    const g = await generation(fell.id)
    expect(g).toMatchObject({ pass_through: false, provider_name: 'double' })
  })

  it('translates where the request changes what the reply holds, or asks', async () => {
    for (const [body, headers] of [
      [{ ...CHAT, reasoning: { exclude: true } }, {}],
      [{ ...CHAT, tools: [{ type: 'openrouter:datetime' }] }, {}],
      [{ ...CHAT, plugins: [{ id: 'response-healing' }] }, {}],
      [CHAT, { 'x-openrouter-metadata': 'enabled' }],
      [CHAT, { 'x-roster-pass-through': 'off' }],
    ] as [object, Record<string, string>][]) {
      const res = await post('/chat/completions', body, headers)
      const text = await res.text()
      expect(res.status, text).toBe(200)
      expect(res.headers.get('x-roster-reply-path'), JSON.stringify([body, headers])).toBe('translated')
      expect(text).not.toContain('x_provider')
      expect(JSON.parse(text)).toMatchObject({
        model: 'double/chat',
        choices: [{ message: { content: 'Hello é world' } }],
      })
    }
  })
})

describe('/messages from an anthropic-messages endpoint', () => {
  it('answers a whole Message with the provider’s bytes, its id, model and cost Roster’s', async () => {
    const client = new Anthropic({ apiKey: key(), baseURL: base.replace(/\/v1$/, ''), maxRetries: 0 })
    const { data: message, response } = await client.messages
      .create({ ...MESSAGES, messages: [{ role: 'user', content: 'hi' }] })
      .withResponse()
    expect(response.headers.get('x-roster-reply-path')).toBe('pass-through')
    expect(message.id).toMatch(/^msg_/)
    expect(message.model).toBe('double/messages')
    expect(message.content).toEqual([{ type: 'text', text: 'Hi é' }])
    expect((message as unknown as Record<string, unknown>).x_trace).toBe('t-1')
    expect(message.usage).toMatchObject({ input_tokens: 7, output_tokens: 2, inference_geo: 'eu', cost: 0.000011 })
    expect(clientType('anthropic', 'Message')(message)).toEqual([])
    expect(await generation(message.id)).toMatchObject({ pass_through: true, tokens_prompt: 7 })
  })

  it('forwards a stream’s events as they came, its ids and cost Roster’s, to the Anthropic client', async () => {
    const res = await post('/messages', { ...MESSAGES, stream: true })
    const text = await res.text()
    expect(res.headers.get('x-roster-reply-path')).toBe('pass-through')
    const events = text
      .split('\n\n')
      .filter(Boolean)
      .map((b) => [/^event: (.*)$/m.exec(b)![1]!, /^data: (.*)$/m.exec(b)![1]!] as const)
    expect(events.map(([name]) => name)).toEqual(MESSAGE_EVENTS.map(([name]) => name))
    // Unchanged but for the Message's id and model, and the cost in the final usage.
    expect(events.slice(1, 5)).toEqual(MESSAGE_EVENTS.slice(1, 5))
    expect(events[6]).toEqual(MESSAGE_EVENTS[6])
    expect(events[5]![1]).toBe(MESSAGE_EVENTS[5]![1].replace(/\}\}$/, ',"cost":0.000011}}'))
    const start = JSON.parse(events[0]![1]) as { message: { id: string; model: string } }
    expect(start.message.model).toBe('double/messages')
    expect(events[0]![1]).toBe(
      MESSAGE_EVENTS[0]![1]
        .replace('"msg_provider_1"', `"${start.message.id}"`)
        .replace('"claude-x-2026"', '"double/messages"'),
    )
    const client = new Anthropic({ apiKey: key(), baseURL: base.replace(/\/v1$/, ''), maxRetries: 0 })
    const final = await client.messages
      .stream({ ...MESSAGES, messages: [{ role: 'user', content: 'hi' }] })
      .finalMessage()
    expect(final.content).toEqual([{ type: 'text', text: 'Hi é' }])
    expect(await generation(start.message.id)).toMatchObject({ pass_through: true, streamed: true })
  })
})
