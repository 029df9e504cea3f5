import { describe, expect, it } from 'vitest'
import { ResponseAssembler } from './assembler.js'
import { logprobsOf } from './deltas.js'
import type { MessageItem } from './wire.js'

const run = (deltas: Parameters<ResponseAssembler['push']>[0][], serverTools: string[] = []) => {
  const events: { type: string; [k: string]: any }[] = []
  const a = new ResponseAssembler((e) => events.push(JSON.parse(JSON.stringify(e))), new Set(serverTools))
  for (const d of deltas) a.push(d)
  const turn = a.endTurn()
  return { a, events, turn, types: events.map((e) => e.type) }
}

describe('ResponseAssembler', () => {
  it('gives reasoning, then text and a refusal in one message, each with its lifecycle', () => {
    const { a, types, events } = run([
      { type: 'reasoning', delta: 'think' },
      { type: 'text', delta: 'Hel' },
      { type: 'text', delta: 'lo' },
      { type: 'refusal', delta: 'no more' },
      { type: 'usage', usage: { input: 3, output: 4, reasoning: 1 } },
      { type: 'finish', reason: 'stop' },
    ])
    expect(types).toEqual([
      'response.output_item.added',
      'response.reasoning_summary_part.added',
      'response.reasoning_summary_text.delta',
      'response.reasoning_summary_text.done',
      'response.reasoning_summary_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.content_part.added',
      'response.refusal.delta',
      'response.refusal.done',
      'response.content_part.done',
      'response.output_item.done',
    ])
    expect(events.find((e) => e.type === 'response.output_text.done')).toMatchObject({
      text: 'Hello',
      output_index: 1,
      content_index: 0,
      logprobs: [],
    })
    expect(events.find((e) => e.type === 'response.refusal.done')).toMatchObject({
      refusal: 'no more',
      content_index: 1,
    })
    expect(a.output.map((o) => o.type)).toEqual(['reasoning', 'message'])
    expect((a.output[1] as MessageItem).content).toEqual([
      { type: 'output_text', text: 'Hello', annotations: [], logprobs: [] },
      { type: 'refusal', refusal: 'no more' },
    ])
    expect(a.usage).toMatchObject({ input: 3, output: 4, reasoning: 1 })
  })

  it("carries each delta's log probabilities to its event, and all of a part's to its done event and the part", () => {
    const lp = (token: string, logprob: number) => ({
      token,
      logprob,
      bytes: [...Buffer.from(token)],
      top_logprobs: [],
    })
    const { a, events } = run([
      { type: 'text', delta: 'Hi', logprobs: [lp('Hi', -0.1)] },
      { type: 'text', delta: ' there' },
      { type: 'text', delta: '!', logprobs: [lp('!', -0.3)] },
      { type: 'finish', reason: 'stop' },
    ])
    expect(events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.logprobs)).toEqual([
      [lp('Hi', -0.1)],
      [],
      [lp('!', -0.3)],
    ])
    expect(events.find((e) => e.type === 'response.output_text.done')!.logprobs).toEqual([
      lp('Hi', -0.1),
      lp('!', -0.3),
    ])
    expect(events.find((e) => e.type === 'response.content_part.done')!.part.logprobs).toEqual([
      lp('Hi', -0.1),
      lp('!', -0.3),
    ])
    expect(((a.output[0] as MessageItem).content[0] as { logprobs: unknown }).logprobs).toEqual([
      lp('Hi', -0.1),
      lp('!', -0.3),
    ])
  })

  it("reads a provider's log probabilities into the one shape, dropping what is not a token with a finite log probability", () => {
    expect(logprobsOf(undefined)).toBeUndefined()
    expect(logprobsOf([])).toBeUndefined()
    expect(logprobsOf('nonsense')).toBeUndefined()
    expect(
      logprobsOf([
        // Chat Completions allows null bytes: they are the token's UTF-8.
        {
          token: 'é',
          logprob: -0.5,
          bytes: null,
          top_logprobs: [{ token: 'e', logprob: -2, bytes: [101] }, { token: 3 }],
        },
        { token: 'x', logprob: null },
        { token: 'y', logprob: Infinity },
        { token: 'z', logprob: -1, bytes: [999], top_logprobs: 'no' },
        null,
      ]),
    ).toEqual([
      { token: 'é', logprob: -0.5, bytes: [195, 169], top_logprobs: [{ token: 'e', logprob: -2, bytes: [101] }] },
      { token: 'z', logprob: -1, bytes: [122], top_logprobs: [] },
    ])
  })

  it('keeps two interleaved function calls apart, and hides server-tool calls from the client', () => {
    const { a, events, turn } = run(
      [
        { type: 'tool_call', index: 0, id: 'c0', name: 'f', arguments: '' },
        { type: 'tool_call', index: 1, id: 'c1', name: 'datetime', arguments: '{"timezone"' },
        { type: 'tool_call', index: 0, arguments: '{"a":' },
        { type: 'tool_call', index: 1, arguments: ':"UTC"}' },
        { type: 'tool_call', index: 0, arguments: '1}' },
        { type: 'finish', reason: 'tool_calls' },
      ],
      ['datetime'],
    )
    expect(a.output).toHaveLength(1)
    expect(a.output[0]).toMatchObject({
      type: 'function_call',
      call_id: 'c0',
      name: 'f',
      arguments: '{"a":1}',
      status: 'completed',
    })
    expect(events.filter((e) => e.type === 'response.function_call_arguments.delta').map((e) => e.delta)).toEqual([
      '{"a":',
      '1}',
    ])
    expect(turn.calls).toEqual([
      { callId: 'c0', name: 'f', arguments: '{"a":1}', server: false },
      { callId: 'c1', name: 'datetime', arguments: '{"timezone":"UTC"}', server: true },
    ])
  })

  it('adds usage across turns and forgets an abandoned one', () => {
    const a = new ResponseAssembler(undefined)
    a.push({ type: 'usage', usage: { input: 5, output: 2 } })
    a.abandonTurn()
    a.push({ type: 'usage', usage: { input: 5, output: 3 } })
    a.endTurn()
    a.push({ type: 'usage', usage: { input: 7, cached: 5, output: 1 } })
    a.endTurn()
    expect(a.usage).toEqual({ input: 12, cached: 5, cacheWrite: 0, output: 4, reasoning: 0, searches: 0 })
  })

  it("counts the provider's web searches as they finish, once each, and not its other actions", () => {
    const a = new ResponseAssembler(undefined)
    const search = (id: string, action: object, done: boolean) =>
      a.push({ type: 'provider_item', key: id, item: { type: 'web_search_call', id, action } as never, done })
    search('ws_1', { type: 'search', query: 'a' }, false)
    search('ws_1', { type: 'search', query: 'a' }, true)
    search('ws_1', { type: 'search', query: 'a' }, true)
    search('ws_2', { type: 'open_page', url: 'https://a.example' }, true)
    a.abandonTurn()
    search('ws_3', { type: 'search', query: 'b' }, true)
    search('ws_4', { type: 'search', query: 'c' }, true)
    a.push({ type: 'provider_item', key: 'mcp', item: { type: 'mcp_call', id: 'mcp' } as never, done: true })
    a.endTurn()
    expect(a.usage.searches).toBe(2)
  })
})

describe('ResponseAssembler, with what real providers send', () => {
  it('keeps a reasoning item the provider sent empty, splits items it names apart, and carries their opaque state', () => {
    const { a, types } = run([
      { type: 'reasoning', delta: '', item: 'oi:0' },
      { type: 'reasoning', delta: 'one', item: 'oi:1', part: 0 },
      { type: 'reasoning', delta: 'two', item: 'oi:1', part: 1 },
      { type: 'reasoning_state', state: 'sig' },
      { type: 'reasoning_redacted', data: 'sealed', item: 'b:2' },
    ])
    expect(a.output).toMatchObject([
      { type: 'reasoning', summary: [] },
      {
        type: 'reasoning',
        summary: [
          { type: 'summary_text', text: 'one' },
          { type: 'summary_text', text: 'two' },
        ],
        encrypted_content: 'sig',
      },
      { type: 'reasoning', summary: [], encrypted_content: 'sealed' },
    ])
    // The empty item: added and done, no parts.
    expect(types.slice(0, 2)).toEqual(['response.output_item.added', 'response.output_item.done'])
  })

  it('gives a call with no arguments `{}` (streamed as a delta too), and places annotations by what they cover', () => {
    const { a, events } = run([
      { type: 'text', delta: 'See the source.' },
      {
        type: 'annotation',
        annotation: { type: 'url_citation', url: 'https://a.example', title: 'A', start_index: 0, end_index: 0 },
        covers: 'the source.'.length,
      },
      { type: 'tool_call', index: 0, id: 'call_1', name: 'ping', arguments: '' },
    ])
    expect((a.output[0] as MessageItem).content[0]).toMatchObject({
      annotations: [{ type: 'url_citation', start_index: 4, end_index: 15 }],
    })
    expect(events.find((e) => e.type === 'response.output_text.annotation.added')).toMatchObject({
      annotation_index: 0,
      annotation: { start_index: 4, end_index: 15 },
    })
    expect(events.filter((e) => e.type === 'response.function_call_arguments.delta').map((e) => e.delta)).toEqual([
      '{}',
    ])
    expect(a.output[1]).toMatchObject({ type: 'function_call', arguments: '{}' })
  })
})
