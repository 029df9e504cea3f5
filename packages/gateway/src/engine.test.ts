import { describe, expect, it } from 'vitest'
import { Cancellation } from './cancellation.js'
import { Catalogue, simulatorCatalogue, type Endpoint } from './catalogue.js'
import { ResponsesEngine } from './engine.js'
import { gatewayError, GatewayError } from './errors.js'
import { parseResponsesRequest, type ResponsesRequest } from './request.js'
import type { StreamSink } from './stream-writer.js'
import type { CallHooks, Transport } from './upstream.js'

// The engine on its own: no HTTP, no database. Its transport is scripted per test, and replies are
// what an OpenAI Chat Completions provider sends (the catalogue's model speaks that protocol).

type Answer = (call: {
  endpoint: Endpoint
  body: Record<string, unknown>
  hooks: CallHooks
  n: number
}) => Promise<Buffer | undefined>

class ScriptedTransport implements Transport {
  readonly calls: { provider: string; body: Record<string, unknown> }[] = []
  constructor(private readonly answer: Answer) {}
  call(endpoint: Endpoint, _adapter: unknown, body: object, hooks: CallHooks = {}) {
    const b = body as Record<string, unknown>
    this.calls.push({ provider: endpoint.provider, body: b })
    return this.answer({ endpoint, body: b, hooks, n: this.calls.length })
  }
  async close() {}
}

/** roster-sim/chat served by two providers, `first` then `second`. */
function catalogue(): Catalogue {
  const sim = simulatorCatalogue('http://provider.invalid')
  const chat = sim.models.find((m) => m.id === 'roster-sim/chat')!
  const endpoint = chat.endpoints[0]!
  return Catalogue.parse({
    models: [
      {
        ...chat,
        endpoints: [
          { ...endpoint, provider: 'first' },
          { ...endpoint, provider: 'second' },
        ],
      },
    ],
  })
}

const engineWith = (answer: Answer) => {
  const transport = new ScriptedTransport(answer)
  const engine = new ResponsesEngine({ catalogue: catalogue(), env: {}, userHashKey: Buffer.alloc(32, 1), transport })
  return { engine, transport }
}

const request = (fields: Record<string, unknown>): ResponsesRequest => {
  const parsed = parseResponsesRequest({ model: 'roster-sim/chat', ...fields })
  if (!parsed.success) throw new Error(parsed.error.message)
  return parsed.data
}

const usage = { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 }
const completion = (message: Record<string, unknown>, finish = 'stop') =>
  Buffer.from(
    JSON.stringify({
      id: 'up-1',
      object: 'chat.completion',
      created: 0,
      model: 'chat',
      choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: finish }],
      usage,
    }),
  )
const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  Buffer.from(
    `data: ${JSON.stringify({ id: 'up-1', object: 'chat.completion.chunk', created: 0, model: 'chat', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`,
  )
const usageChunk = () =>
  Buffer.from(
    `data: ${JSON.stringify({ id: 'up-1', object: 'chat.completion.chunk', created: 0, model: 'chat', choices: [], usage })}\n\n`,
  )

/** A sink that keeps the Open Responses events written to it. */
function collectingSink() {
  let text = ''
  const sink: StreamSink = {
    open() {},
    write(chunk) {
      text += chunk
      return true
    },
    cork() {},
    uncork() {},
    drain: async () => {},
    end() {},
  }
  const events = () =>
    text
      .split('\n\n')
      .filter((block) => block.includes('data: ') && !block.includes('data: [DONE]'))
      .map(
        (block) =>
          JSON.parse(block.slice(block.indexOf('data: ') + 6)) as {
            type: string
            delta?: string
            response?: { status: string; error?: unknown }
          },
      )
  return { sink, events }
}

describe('the engine on its own', () => {
  it('falls back to the next endpoint when one is unavailable, and reports who served', async () => {
    const { engine, transport } = engineWith(async ({ endpoint }) => {
      if (endpoint.provider === transport.calls[0]!.provider) throw gatewayError('provider_unavailable', 'down')
      return completion({ content: 'hello there' })
    })
    const response = await engine.respond(request({ input: 'hi' }), { metadata: { service: true, openrouter: false } })
    expect(transport.calls.map((c) => c.provider).sort()).toEqual(['first', 'second'])
    expect(response.status).toBe('completed')
    expect(response.output).toMatchObject([
      { type: 'message', content: [{ type: 'output_text', text: 'hello there' }] },
    ])
    expect(JSON.stringify(response.service_metadata)).toContain(
      `${transport.calls[1]!.provider} served roster-sim/chat on attempt 2`,
    )
  })

  it('does not fall back on a refusal of the request itself: the caller gets it', async () => {
    const { engine, transport } = engineWith(async () => {
      throw gatewayError('invalid_request', 'bad tool schema')
    })
    const failure = await engine.respond(request({ input: 'hi' })).catch((err: unknown) => err)
    expect(failure).toBeInstanceOf(GatewayError)
    expect((failure as GatewayError).errorType).toBe('invalid_request')
    expect(transport.calls).toHaveLength(1)
  })

  it("streams the provider's chunks as Open Responses events, as they come", async () => {
    const { engine } = engineWith(async ({ hooks }) => {
      hooks.onStart?.()
      for (const piece of [
        chunk({ role: 'assistant', content: '' }),
        chunk({ content: 'hel' }),
        chunk({ content: 'lo' }),
        chunk({}, 'stop'),
        usageChunk(),
      ]) {
        await hooks.onChunk!(piece)
      }
      return undefined
    })
    const { sink, events } = collectingSink()
    await engine.stream(request({ input: 'hi', stream: true }), {}, sink)
    const seen = events()
    expect(seen[0]!.type).toBe('response.created')
    expect(seen.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta)).toEqual(['hel', 'lo'])
    expect(seen.at(-1)).toMatchObject({ type: 'response.completed', response: { status: 'completed' } })
  })

  it('ends a stream that failed after its first event with response.failed, and tries no other endpoint', async () => {
    const { engine, transport } = engineWith(async ({ hooks }) => {
      hooks.onStart?.()
      await hooks.onChunk!(chunk({ role: 'assistant', content: 'par' }))
      throw gatewayError('provider_unavailable', 'the connection was cut')
    })
    const { sink, events } = collectingSink()
    await engine.stream(request({ input: 'hi', stream: true }), {}, sink)
    expect(transport.calls).toHaveLength(1)
    expect(events().at(-1)).toMatchObject({ type: 'response.failed', response: { status: 'failed' } })
  })

  it('runs a server tool between turns and gives the model its result', async () => {
    const { engine, transport } = engineWith(async ({ n }) =>
      n === 1
        ? completion(
            {
              content: null,
              tool_calls: [
                { id: 'call_1', type: 'function', function: { name: 'datetime', arguments: '{"timezone":"UTC"}' } },
              ],
            },
            'tool_calls',
          )
        : completion({ content: 'It is now.' }),
    )
    const response = await engine.respond(
      request({ input: 'what time is it?', tools: [{ type: 'openrouter:datetime' }] }),
    )
    expect(transport.calls).toHaveLength(2)
    const second = transport.calls[1]!.body.messages as { role: string; content?: unknown; tool_call_id?: string }[]
    const result = second.find((m) => m.role === 'tool')
    expect(result?.tool_call_id).toBe('call_1')
    expect(JSON.parse(String(result?.content))).toMatchObject({ timezone: 'UTC' })
    expect(response.output.map((o) => o.type)).toContain('message')
    expect(response.status).toBe('completed')
  })

  it('hands a function tool call back to the client instead of looping', async () => {
    const { engine, transport } = engineWith(async () =>
      completion(
        {
          content: null,
          tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } }],
        },
        'tool_calls',
      ),
    )
    const response = await engine.respond(
      request({
        input: 'look it up',
        tools: [
          { type: 'function', name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } },
        ],
      }),
    )
    expect(transport.calls).toHaveLength(1)
    expect(response.output).toMatchObject([
      { type: 'function_call', name: 'lookup', call_id: 'call_9', arguments: '{"q":"x"}' },
    ])
  })

  it('cancels the provider call when the client goes away, and writes nothing more', async () => {
    const cancel = new Cancellation()
    let cancelledUpstream = false
    const { engine } = engineWith(({ hooks }) => {
      hooks.onStart?.()
      void hooks.onChunk!(chunk({ role: 'assistant', content: 'a' }))
      return new Promise((_resolve, reject) => {
        hooks.cancel!.onCancel(() => {
          cancelledUpstream = true
          reject(gatewayError('unmapped', 'the client went away'))
        })
      })
    })
    const { sink, events } = collectingSink()
    const streaming = engine.stream(request({ input: 'hi', stream: true }), { cancel }, sink)
    await new Promise<void>((resolve) => setImmediate(resolve))
    const before = events().length
    cancel.cancel()
    await streaming
    expect(cancelledUpstream).toBe(true)
    expect(events()).toHaveLength(before)
    expect(events().some((e) => e.type === 'response.completed' || e.type === 'response.failed')).toBe(false)
  })
})

describe('what the engine makes of a request before routing it', () => {
  const generation = () => ({
    keyId: null,
    workspaceId: 'ws-1',
    accountId: null,
    userId: null,
    internId: null,
    sessionId: null,
    httpReferer: null,
    appTitle: null,
    userAgent: null,
    presetId: null as string | null,
    limits: [],
    keepContent: false,
  })

  it('merges the preset it names through the port, resolves its names, and changes nothing of the caller’s', async () => {
    const transport = new ScriptedTransport(async () => completion({ content: 'hi' }))
    const asked: [string, string][] = []
    const engine = new ResponsesEngine({
      catalogue: catalogue(),
      env: {},
      userHashKey: Buffer.alloc(32, 1),
      transport,
      presets: async (workspaceId, slug) => {
        asked.push([workspaceId, slug])
        return slug === 'terse'
          ? { presetId: 'p-1', config: { model: 'roster-sim/chat', max_output_tokens: 7 }, systemPrompt: 'Be terse.' }
          : undefined
      },
    })
    const body = request({ model: '@preset/terse', input: 'hello' })
    const given = structuredClone(body)
    const opts = { generation: generation() }
    const res = await engine.respond(body, opts)
    expect(res.model).toBe('roster-sim/chat')
    expect(asked).toEqual([['ws-1', 'terse']])
    expect(opts.generation.presetId).toBe('p-1')
    expect(transport.calls[0]!.body).toMatchObject({ max_tokens: 7 })
    expect(body).toEqual(given)
    // openrouter/auto is the catalogue's best, named in the answer; the request keeps its own name.
    const auto = request({ model: 'openrouter/auto', input: 'hello' })
    expect((await engine.respond(auto, { generation: generation() })).model).toBe('roster-sim/chat')
    expect(auto.model).toBe('openrouter/auto')
    // No preset of that slug: 404.
    await expect(
      engine.respond(request({ model: '@preset/none', input: 'x' }), { generation: generation() }),
    ).rejects.toMatchObject({
      status: 404,
      errorType: 'not_found',
    })
  })

  it('answers an unknown model 404 "model: <name>" where the door asks it to (Anthropic’s way), else routing refuses it', async () => {
    const { engine } = engineWith(async () => completion({ content: 'hi' }))
    await expect(
      engine.respond(request({ model: 'nobody/knows', input: 'x' }), { names: 'anthropic', unknownModel: 'not_found' }),
    ).rejects.toMatchObject({ status: 404, errorType: 'not_found', message: 'model: nobody/knows' })
    await expect(engine.respond(request({ model: 'nobody/knows', input: 'x' }))).rejects.toMatchObject({
      status: 400,
    })
  })
})
