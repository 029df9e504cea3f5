import { describe, expect, it } from 'vitest'
import type { Delta } from '../deltas.js'
import { GatewayError } from '../errors.js'
import { anthropic } from './anthropic-messages.js'
import { chatUsage, openaiChat } from './openai-chat.js'
import { openaiResponses } from './openai-responses.js'

// What providers do that the recordings (packages/upstream-sim/recordings) do not all show, each
// as the events a provider sends, through the adapter that reads them.

const feed = (translate: ReturnType<typeof openaiResponses.streamer>, events: object[], end = true): Delta[] => [
  ...events.flatMap((e) => translate({ data: JSON.stringify(e) })),
  ...(end ? translate('end') : []),
]
const args = (deltas: Delta[]) => deltas.flatMap((d) => (d.type === 'tool_call' ? [d.arguments] : [])).join('')

describe('OpenAI Responses streams', () => {
  const call = { id: 'fc_1', type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '' }
  const full = '{"city":"Paris"}'

  it('takes a call’s arguments from its .done events when none were streamed (LM Studio), once', () => {
    const deltas = feed(openaiResponses.streamer('lmstudio'), [
      { type: 'response.output_item.added', output_index: 0, item: call },
      { type: 'response.function_call_arguments.done', output_index: 0, item_id: 'fc_1', arguments: full },
      { type: 'response.output_item.done', output_index: 0, item: { ...call, arguments: full } },
    ])
    expect(args(deltas)).toBe(full)
  })

  it('adds only what a .done holds beyond the streamed pieces, and nothing when they were all streamed', () => {
    const streamed = feed(openaiResponses.streamer('openai'), [
      { type: 'response.output_item.added', output_index: 0, item: call },
      { type: 'response.function_call_arguments.delta', output_index: 0, delta: '{"city":' },
      { type: 'response.function_call_arguments.done', output_index: 0, arguments: full },
      { type: 'response.output_item.done', output_index: 0, item: { ...call, arguments: full } },
    ])
    expect(args(streamed)).toBe(full)
  })

  it('takes a message’s text and a reasoning item’s text from their .done items when nothing was streamed', () => {
    const deltas = feed(openaiResponses.streamer('openai'), [
      { type: 'response.output_item.added', output_index: 0, item: { id: 'rs', type: 'reasoning', summary: [] } },
      {
        type: 'response.output_item.done',
        output_index: 0,
        item: { id: 'rs', type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 'Think.' }] },
      },
      {
        type: 'response.output_item.done',
        output_index: 1,
        item: { id: 'm', type: 'message', content: [{ type: 'output_text', text: 'Hi.', annotations: [] }] },
      },
    ])
    expect(
      deltas
        .filter((d) => d.type === 'reasoning')
        .map((d) => (d as { delta: string }).delta)
        .join(''),
    ).toBe('Think.')
    expect(deltas).toContainEqual({ type: 'text', delta: 'Hi.', logprobs: undefined })
  })

  it('reads a failure wherever it is put: the event’s top, its `error`, a failed response’s `error`', () => {
    const cases: [object, number, string][] = [
      [{ type: 'error', code: 'rate_limit_exceeded', message: 'slow down', param: null }, 429, 'rate_limit_exceeded'],
      [
        { type: 'error', error: { type: 'insufficient_quota', code: 'insufficient_quota', message: 'no quota' } },
        502,
        'payment_required',
      ],
      [
        { type: 'response.failed', response: { status: 'failed', error: { code: 'server_error', message: 'oops' } } },
        502,
        'provider_unavailable',
      ],
      [{ type: 'error', error: { type: 'invalid_prompt', message: 'flagged' } }, 400, 'invalid_request'],
    ]
    for (const [event, status, type] of cases) {
      let thrown: unknown
      try {
        feed(openaiResponses.streamer('acme'), [event])
      } catch (err) {
        thrown = err
      }
      expect(thrown, JSON.stringify(event)).toBeInstanceOf(GatewayError)
      const e = thrown as GatewayError
      expect([e.status, e.errorType], JSON.stringify(event)).toEqual([status, type])
      expect(e.message).toMatch(/^acme /)
    }
  })
})

describe('Chat Completions', () => {
  it('counts reasoning inside completion_tokens, unless the total says it is apart (xAI)', () => {
    // OpenAI: reasoning within completion_tokens, total = prompt + completion.
    expect(
      chatUsage({
        prompt_tokens: 15,
        completion_tokens: 78,
        total_tokens: 93,
        completion_tokens_details: { reasoning_tokens: 64 },
      }),
    ).toMatchObject({ input: 15, output: 78, reasoning: 64 })
    // xAI: total = prompt + completion + reasoning.
    expect(
      chatUsage({
        prompt_tokens: 12,
        completion_tokens: 1,
        total_tokens: 303,
        completion_tokens_details: { reasoning_tokens: 290 },
      }),
    ).toMatchObject({ input: 12, output: 291, reasoning: 290 })
    // DeepSeek's cache hits, where prompt_tokens_details says nothing.
    expect(
      chatUsage({ prompt_tokens: 374, completion_tokens: 61, total_tokens: 435, prompt_cache_hit_tokens: 256 }),
    ).toMatchObject({ input: 374, cached: 256 })
  })

  it('finishes a stream that ends with [DONE] and no finish reason as its content says; one without [DONE] is unfinished', () => {
    const chunk = (delta: object) => ({ choices: [{ index: 0, delta }] })
    const called = openaiChat.streamer('openrouter')
    const done = [
      ...called({
        data: JSON.stringify(chunk({ tool_calls: [{ index: 0, id: 'c', function: { name: 'f', arguments: '{}' } }] })),
      }),
      ...called({ data: '[DONE]' }),
      ...called('end'),
    ]
    expect(done.filter((d) => d.type === 'finish')).toEqual([{ type: 'finish', reason: 'tool_calls' }])
    const cut = openaiChat.streamer('openrouter')
    const deltas = [...cut({ data: JSON.stringify(chunk({ content: 'Hi' })) }), ...cut('end')]
    expect(deltas.some((d) => d.type === 'finish')).toBe(false)
  })
})

describe('Anthropic streams', () => {
  const start = (index: number, block: object) => ({ type: 'content_block_start', index, content_block: block })
  const delta = (index: number, d: object) => ({ type: 'content_block_delta', index, delta: d })

  it('shows a server tool as the provider’s item, never as a client’s call, and closes one whose result never came', () => {
    const deltas = feed(anthropic.streamer('anthropic'), [
      start(0, { type: 'server_tool_use', id: 'srv_1', name: 'web_search', input: {} }),
      delta(0, { type: 'input_json_delta', partial_json: '{"query":"x"}' }),
      { type: 'content_block_stop', index: 0 },
      { type: 'message_delta', delta: { stop_reason: 'pause_turn' } },
    ])
    expect(deltas.some((d) => d.type === 'tool_call')).toBe(false)
    const items = deltas.filter((d) => d.type === 'provider_item')
    expect(items.map((d) => [d.item.type, d.item.status, d.done])).toEqual([
      ['web_search_call', 'in_progress', false],
      ['web_search_call', 'in_progress', true],
    ])
    expect(items[0]!.item).toMatchObject({ action: { type: 'search', query: 'x' } })
  })

  it('gives a citation the span of its text block, and keeps redacted thinking as it came', () => {
    const deltas = feed(anthropic.streamer('anthropic'), [
      start(0, { type: 'redacted_thinking', data: 'EmwKAhgBEgy' }),
      { type: 'content_block_stop', index: 0 },
      start(1, { type: 'text', text: '' }),
      delta(1, {
        type: 'citations_delta',
        citation: { type: 'web_search_result_location', url: 'https://a.example', title: 'A', cited_text: 'x' },
      }),
      delta(1, { type: 'text_delta', text: 'Cited.' }),
      { type: 'content_block_stop', index: 1 },
    ])
    expect(deltas[0]).toEqual({ type: 'reasoning_redacted', data: 'EmwKAhgBEgy', item: 'b:0' })
    const cited = deltas.find((d) => d.type === 'annotation')
    expect(cited).toMatchObject({
      annotation: { type: 'url_citation', url: 'https://a.example', title: 'A' },
      covers: 'Cited.'.length,
    })
  })
})
