import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startSimulator, type Simulator } from './server.js'

let sim: Simulator
beforeAll(async () => {
  sim = await startSimulator({ replyTokens: 6 })
})
afterAll(async () => sim?.close())

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${sim.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  })

/** Parses an SSE body into its data payloads (and event names). */
async function events(res: Response) {
  const text = await res.text()
  return text
    .split('\n\n')
    .filter(Boolean)
    .map((block) => ({ event: /^event: (.+)$/m.exec(block)?.[1], data: /^data: (.+)$/m.exec(block)?.[1] ?? '' }))
}

const weather = {
  name: 'get_weather',
  parameters: {
    type: 'object',
    properties: {
      city: { type: 'string', minLength: 2 },
      days: { type: 'integer', minimum: 1 },
      unit: { enum: ['c', 'f'] },
    },
    required: ['city', 'days', 'unit'],
  },
}

describe('OpenAI Chat Completions', () => {
  const ask = { model: 'sim/chat', messages: [{ role: 'user', content: 'hello there' }] }

  it('answers deterministically, with usage', async () => {
    const [a, b] = await Promise.all(
      [post('/v1/chat/completions', ask), post('/v1/chat/completions', ask)].map(async (r) => (await r).json()),
    )
    expect(a.choices[0].message.content).toBe(b.choices[0].message.content)
    expect(a.choices[0].message.content.split(' ')).toHaveLength(6)
    expect(a.usage).toMatchObject({ prompt_tokens: 2, completion_tokens: 6, total_tokens: 8 })
    expect(a.choices[0].finish_reason).toBe('stop')
  })

  it('streams the same text, usage on request, then [DONE]', async () => {
    const whole = (await (await post('/v1/chat/completions', ask)).json()).choices[0].message.content
    const res = await post('/v1/chat/completions', { ...ask, stream: true, stream_options: { include_usage: true } })
    expect(res.headers.get('content-type')).toBe('text/event-stream')
    const evs = await events(res)
    expect(evs.at(-1)!.data).toBe('[DONE]')
    const chunks = evs.slice(0, -1).map((e) => JSON.parse(e.data))
    expect(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('')).toBe(whole)
    expect(chunks.at(-1).usage.completion_tokens).toBe(6)
  })

  it('calls an offered tool with arguments valid for its schema, unless told not to or after a result', async () => {
    const tools = [{ type: 'function', function: weather }]
    const call = (await (await post('/v1/chat/completions', { ...ask, tools })).json()).choices[0]
    expect(call.finish_reason).toBe('tool_calls')
    const args = JSON.parse(call.message.tool_calls[0].function.arguments)
    expect(args).toEqual({ city: 'sample', days: 1, unit: 'c' })
    expect(args.city.length).toBeGreaterThanOrEqual(2)
    const none = (await (await post('/v1/chat/completions', { ...ask, tools, tool_choice: 'none' })).json()).choices[0]
    expect(none.finish_reason).toBe('stop')
    const after = {
      ...ask,
      tools,
      messages: [
        ...ask.messages,
        { role: 'assistant', tool_calls: [call.message.tool_calls[0]] },
        { role: 'tool', tool_call_id: 'x', content: 'sunny' },
      ],
    }
    expect((await (await post('/v1/chat/completions', after)).json()).choices[0].finish_reason).toBe('stop')
  })

  it('stops at max_tokens with finish_reason length, and at a stop sequence', async () => {
    const short = await (await post('/v1/chat/completions', { ...ask, max_tokens: 2 })).json()
    expect(short.choices[0].finish_reason).toBe('length')
    expect(short.usage.completion_tokens).toBe(2)
    const whole: string = (await (await post('/v1/chat/completions', ask)).json()).choices[0].message.content
    const stop = whole.split(' ').slice(2, 4).join(' ')
    const stopped = await (await post('/v1/chat/completions', { ...ask, stop: [stop] })).json()
    expect(stopped.choices[0].finish_reason).toBe('stop')
    expect(stopped.choices[0].message.content).toBe(whole.slice(0, whole.indexOf(stop)).trimEnd())
  })
})

describe('log probabilities', () => {
  const ask = { model: 'sim/chat', messages: [{ role: 'user', content: 'hello there' }] }

  it('Chat Completions gives one per token when asked, with the alternatives asked for, in both modes', async () => {
    const none = await (await post('/v1/chat/completions', ask)).json()
    expect(none.choices[0].logprobs).toBeNull()
    const whole = await (await post('/v1/chat/completions', { ...ask, logprobs: true, top_logprobs: 3 })).json()
    const content = whole.choices[0].logprobs.content
    expect(content.map((l: { token: string }) => l.token).join('')).toBe(whole.choices[0].message.content)
    for (const l of content) {
      expect(l.logprob).toBeLessThanOrEqual(0)
      expect(Buffer.from(l.bytes).toString()).toBe(l.token)
      expect(l.top_logprobs).toHaveLength(3)
      expect(l.top_logprobs[0]).toEqual({ token: l.token, logprob: l.logprob, bytes: l.bytes })
      expect(l.top_logprobs[1].logprob).toBeLessThan(l.logprob)
    }
    const chunks = (
      await events(await post('/v1/chat/completions', { ...ask, stream: true, logprobs: true, top_logprobs: 3 }))
    )
      .filter((e) => e.data !== '[DONE]')
      .map((e) => JSON.parse(e.data))
    const streamed = chunks.flatMap((c) => c.choices[0]?.logprobs?.content ?? [])
    expect(streamed).toEqual(content)
  })

  it('Responses gives them when include asks, on the deltas, the done event and the part', async () => {
    const body = { model: 'sim/resp', input: 'hello there', include: ['message.output_text.logprobs'], top_logprobs: 2 }
    const whole = await (await post('/v1/responses', body)).json()
    const part = whole.output[0].content[0]
    expect(part.logprobs.map((l: { token: string }) => l.token).join('')).toBe(part.text)
    expect(part.logprobs[0].top_logprobs).toHaveLength(2)
    const evs = (await events(await post('/v1/responses', { ...body, stream: true }))).map((e) => JSON.parse(e.data))
    const deltas = evs.filter((e) => e.type === 'response.output_text.delta').flatMap((e) => e.logprobs)
    expect(deltas).toEqual(part.logprobs)
    expect(evs.find((e) => e.type === 'response.output_text.done').logprobs).toEqual(part.logprobs)
    const without = await (await post('/v1/responses', { ...body, include: [] })).json()
    expect(without.output[0].content[0].logprobs).toEqual([])
  })
})

describe('OpenAI Responses', () => {
  it('streams numbered events in the item and content-part lifecycle', async () => {
    const res = await post('/v1/responses', { model: 'sim/resp', input: 'say something', stream: true })
    const evs = (await events(res)).map((e) => ({ name: e.event, ...JSON.parse(e.data) }))
    expect(evs.map((e) => e.sequence_number)).toEqual(evs.map((_, i) => i))
    expect(evs.every((e) => e.name === e.type)).toBe(true)
    expect(evs[0].type).toBe('response.created')
    expect(evs.at(-1).type).toBe('response.completed')
    const deltas = evs.filter((e) => e.type === 'response.output_text.delta')
    expect(deltas.every((d) => Array.isArray(d.logprobs))).toBe(true)
    expect(deltas.map((d) => d.delta).join('')).toBe(evs.find((e) => e.type === 'response.output_text.done').text)
    expect(evs.at(-1).response.usage.output_tokens).toBe(6)
  })

  it('answers a function call item when tools are offered', async () => {
    const body = await (
      await post('/v1/responses', { model: 'm', input: 'weather?', tools: [{ type: 'function', ...weather }] })
    ).json()
    expect(body.output[0]).toMatchObject({ type: 'function_call', name: 'get_weather' })
    expect(JSON.parse(body.output[0].arguments)).toEqual({ city: 'sample', days: 1, unit: 'c' })
  })
})

describe('Anthropic Messages', () => {
  const ask = {
    model: 'sim/claude',
    max_tokens: 100,
    system: [{ type: 'text', text: 'You are brief.', cache_control: { type: 'ephemeral' } }],
    messages: [{ role: 'user', content: 'hi' }],
  }

  it('reports a cache write, then a cache read for the same prompt', async () => {
    const first = await (await post('/v1/messages', ask)).json()
    const second = await (await post('/v1/messages', ask)).json()
    expect(first.usage.cache_creation_input_tokens).toBeGreaterThan(0)
    expect(first.usage.cache_read_input_tokens).toBe(0)
    expect(second.usage.cache_read_input_tokens).toBe(first.usage.cache_creation_input_tokens)
  })

  it('streams named events, tool input as JSON deltas that assemble into valid arguments', async () => {
    const res = await post('/v1/messages', {
      ...ask,
      stream: true,
      tools: [{ name: 'get_weather', input_schema: weather.parameters }],
    })
    const evs = (await events(res)).map((e) => ({ name: e.event, ...JSON.parse(e.data) }))
    expect(evs.map((e) => e.type)).toEqual([
      'message_start',
      'content_block_start',
      ...evs.slice(2, -3).map(() => 'content_block_delta'),
      'content_block_stop',
      'message_delta',
      'message_stop',
    ])
    const json = evs
      .filter((e) => e.delta?.type === 'input_json_delta')
      .map((e) => e.delta.partial_json)
      .join('')
    expect(JSON.parse(json)).toEqual({ city: 'sample', days: 1, unit: 'c' })
    expect(evs.find((e) => e.type === 'message_delta').delta.stop_reason).toBe('tool_use')
  })
})

describe('the demo npm start runs (x-sim-demo)', () => {
  const demo = { 'x-sim-demo': 'true' }
  const tools = [{ type: 'function', function: weather }]
  it('says what it is and how to connect a real model, and calls no tool unasked', async () => {
    const res = await post(
      '/v1/chat/completions',
      { model: 'sim/chat', messages: [{ role: 'user', content: 'Hello! What can you do?' }], tools },
      demo,
    )
    const body = (await res.json()) as any
    expect(body.choices[0].finish_reason).toBe('stop')
    expect(body.choices[0].message.tool_calls).toBeUndefined()
    expect(body.choices[0].message.content).toMatch(/^I am Roster's built-in upstream simulator, not a language model/)
    expect(body.choices[0].message.content).toMatch(/OPENAI_API_KEY or ANTHROPIC_API_KEY\), an Ollama server/)
    expect(body.usage.completion_tokens).toBeGreaterThan(20)
  })

  it('still follows a script, calls a tool the request demands, and stops at max_tokens', async () => {
    const said = (await (
      await post(
        '/v1/chat/completions',
        { model: 'sim/chat', messages: [{ role: 'user', content: '[sim] say Hi.' }] },
        demo,
      )
    ).json()) as any
    expect(said.choices[0].message.content).toBe('Hi.')
    const forced = (await (
      await post(
        '/v1/chat/completions',
        { model: 'sim/chat', messages: [{ role: 'user', content: 'weather?' }], tools, tool_choice: 'required' },
        demo,
      )
    ).json()) as any
    expect(forced.choices[0].message.tool_calls[0].function.name).toBe('get_weather')
    const cut = (await (
      await post(
        '/v1/chat/completions',
        { model: 'sim/chat', messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 },
        demo,
      )
    ).json()) as any
    expect(cut.choices[0].finish_reason).toBe('length')
    expect(cut.usage.completion_tokens).toBe(3)
  })
})

describe('settings and faults', () => {
  const ask = { model: 'm', messages: [{ role: 'user', content: 'x' }] }

  it('answers 429 with Retry-After, and 500/503 in the protocol’s error shape', async () => {
    const limited = await post('/v1/chat/completions', ask, { 'x-sim-fault': '429' })
    expect(limited.status).toBe(429)
    expect(limited.headers.get('retry-after')).toBe('2')
    expect((await limited.json()).error.type).toBe('rate_limit_exceeded')
    const overloaded = await post('/v1/messages', { ...ask, max_tokens: 5 }, { 'x-sim-fault': '503' })
    expect(overloaded.status).toBe(503)
    expect((await overloaded.json()).error.type).toBe('overloaded_error')
  })

  it('fails the first n calls of a conversation whose prompt says `[sim] fail <status> <n>`, then answers', async () => {
    const scripted = (content: string) => ({ model: 'm', messages: [{ role: 'user', content }] })
    const prompt = `again please\n[sim] fail 503 2\n[sim] say Third time.`
    const statuses = []
    for (let i = 0; i < 3; i++) statuses.push((await post('/v1/chat/completions', scripted(prompt))).status)
    expect(statuses).toEqual([503, 503, 200])
    // Counted per conversation: another one with the same script fails afresh.
    expect((await post('/v1/chat/completions', scripted(`${prompt} `))).status).toBe(503)
    const limited = await post('/v1/responses', { model: 'm', input: '[sim] fail 429 1' })
    expect(limited.status).toBe(429)
    expect(limited.headers.get('retry-after')).toBe('2')
    expect((await post('/v1/responses', { model: 'm', input: '[sim] fail 429 1' })).status).toBe(200)
  })

  it('cuts a stream in the middle, and can hang until the caller gives up', async () => {
    // A cut stream either fails while reading or ends early; either way it never completes.
    const text = await post('/v1/chat/completions', { ...ask, stream: true }, { 'x-sim-fault': 'cut' })
      .then((r) => r.text())
      .catch(() => 'connection dropped')
    expect(text).not.toContain('[DONE]')
    const hung = fetch(`${sim.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-sim-fault': 'timeout' },
      body: JSON.stringify(ask),
      signal: AbortSignal.timeout(200),
    })
    await expect(hung).rejects.toThrow(/aborted|timeout/i)
  })

  it('paces tokens and delays the first byte as configured', async () => {
    const started = performance.now()
    await (
      await post(
        '/v1/chat/completions',
        { ...ask, stream: true },
        { 'x-sim-latency-ms': '60', 'x-sim-tokens-per-second': '100', 'x-sim-reply-tokens': '5' },
      )
    ).text()
    expect(performance.now() - started).toBeGreaterThanOrEqual(60 + 40)
  })

  it('requires its api key when one is set, by Bearer or x-api-key', async () => {
    const locked = await startSimulator({ apiKey: 'sk-sim' })
    try {
      const call = (headers: Record<string, string>) =>
        fetch(`${locked.url}/v1/messages`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify({ ...ask, max_tokens: 5 }),
        })
      expect((await call({})).status).toBe(401)
      expect((await call({ authorization: 'Bearer sk-sim' })).status).toBe(200)
      expect((await call({ 'x-api-key': 'sk-sim' })).status).toBe(200)
      expect((await call({ 'x-api-key': 'sk-wrong' })).status).toBe(401)
    } finally {
      await locked.close()
    }
  })
})

describe('a script in the prompt', () => {
  const script =
    'do as scripted\n[sim] call get_weather {"city":"Oslo","days":2,"unit":"c"}\n[sim] call get_weather {"city":"Bergen","days":1,"unit":"f"}\n[sim] say Both looked up.'
  const tools = {
    chat: [{ type: 'function', function: weather }],
    responses: [{ type: 'function', ...weather }],
    messages: [{ name: weather.name, input_schema: weather.parameters }],
  }

  it('plays one line a turn, counting tool results, in each protocol', async () => {
    // Chat Completions
    const chat = async (messages: object[]) =>
      (await (await post('/v1/chat/completions', { model: 'sim', messages, tools: tools.chat })).json()).choices[0]
    let turn = await chat([{ role: 'user', content: script }])
    expect(JSON.parse(turn.message.tool_calls[0].function.arguments)).toEqual({ city: 'Oslo', days: 2, unit: 'c' })
    const first = turn.message
    turn = await chat([
      { role: 'user', content: script },
      first,
      { role: 'tool', tool_call_id: first.tool_calls[0].id, content: 'rain' },
    ])
    expect(JSON.parse(turn.message.tool_calls[0].function.arguments).city).toBe('Bergen')
    turn = await chat([
      { role: 'user', content: script },
      first,
      { role: 'tool', tool_call_id: 'a', content: 'rain' },
      turn.message,
      { role: 'tool', tool_call_id: 'b', content: 'sun' },
    ])
    expect([turn.finish_reason, turn.message.content]).toEqual(['stop', 'Both looked up.'])

    // Responses
    const responses = async (input: object[]) =>
      (await (await post('/v1/responses', { model: 'sim', input, tools: tools.responses })).json()).output
    const out = await responses([
      { role: 'user', content: script },
      { type: 'function_call', call_id: 'c1', name: 'get_weather', arguments: '{}' },
      { type: 'function_call_output', call_id: 'c1', output: 'rain' },
    ])
    expect(JSON.parse(out.find((o: any) => o.type === 'function_call').arguments).city).toBe('Bergen')

    // Anthropic Messages
    const messages = async (msgs: object[]) =>
      await (
        await post('/v1/messages', { model: 'sim', max_tokens: 100, messages: msgs, tools: tools.messages })
      ).json()
    const done = await messages([
      { role: 'user', content: script },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'get_weather', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'rain' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't2', name: 'get_weather', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't2', content: 'sun' }] },
    ])
    expect([done.stop_reason, done.content[0].text]).toEqual(['end_turn', 'Both looked up.'])
  })

  it('quotes the latest tool result where a say line writes {{result}}, in each protocol', async () => {
    const quoting = '[sim] call get_weather {"city":"Oslo"}\n[sim] say It said: {{result}}.'
    const chat = await (
      await post('/v1/chat/completions', {
        model: 'sim',
        tools: tools.chat,
        messages: [
          { role: 'user', content: quoting },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'a', type: 'function', function: { name: 'get_weather', arguments: '{}' } }],
          },
          { role: 'tool', tool_call_id: 'a', content: 'rain, 4 °C' },
        ],
      })
    ).json()
    expect(chat.choices[0].message.content).toBe('It said: rain, 4 °C.')
    const responses = await (
      await post('/v1/responses', {
        model: 'sim',
        tools: tools.responses,
        input: [
          { role: 'user', content: quoting },
          { type: 'function_call', call_id: 'c1', name: 'get_weather', arguments: '{}' },
          { type: 'function_call_output', call_id: 'c1', output: 'sun' },
        ],
      })
    ).json()
    expect(responses.output.find((o: any) => o.type === 'message').content[0].text).toBe('It said: sun.')
    const messages = await (
      await post('/v1/messages', {
        model: 'sim',
        max_tokens: 100,
        tools: tools.messages,
        messages: [
          { role: 'user', content: quoting },
          { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'get_weather', input: {} }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'fog' }] },
        ],
      })
    ).json()
    expect(messages.content[0].text).toBe('It said: fog.')
  })

  it('answers in text when the scripted tool is not offered, and as usual past the script', async () => {
    const res = await (
      await post('/v1/chat/completions', {
        model: 'sim',
        messages: [{ role: 'user', content: '[sim] call shell {"command":"ls"}' }],
      })
    ).json()
    expect(res.choices[0].message.content).toBe('(script: the tool shell is not offered)')
    const past = await (
      await post('/v1/chat/completions', {
        model: 'sim',
        messages: [
          { role: 'user', content: '[sim] say one' },
          { role: 'tool', tool_call_id: 'x', content: 'r' },
        ],
      })
    ).json()
    expect(past.choices[0].message.content.split(' ')).toHaveLength(6)
  })
})
