import { describe, expect, it } from 'vitest'
import { GatewayError } from '../errors.js'
import { REDACTED_THINKING, type ReasoningItem } from '../wire.js'
import { reasoningDetails, reasoningFromDetails, reasoningStateDetail } from './reasoning-details.js'

const item = (fields: Partial<ReasoningItem> = {}): ReasoningItem => ({
  type: 'reasoning',
  id: 'rs_1',
  summary: [],
  ...fields,
})
const said = (text: string) => [{ type: 'summary_text' as const, text }]

describe('reasoning_details', () => {
  it("names each reasoning item by what its state is: Anthropic's signature, redacted data, OpenAI's encrypted content", () => {
    expect(reasoningDetails(item({ summary: said('hm'), encrypted_content: 'EqkE' }), 0)).toEqual([
      { type: 'reasoning.text', text: 'hm', signature: 'EqkE', index: 0 },
    ])
    expect(reasoningDetails({ ...item({ encrypted_content: 'EtgB' }), [REDACTED_THINKING]: true }, 1)).toEqual([
      { type: 'reasoning.encrypted', data: 'EtgB', index: 1 },
    ])
    expect(reasoningDetails(item({ summary: said('plan'), encrypted_content: 'gAAAAABo' }), 2)).toEqual([
      { type: 'reasoning.summary', summary: 'plan', index: 2 },
      { type: 'reasoning.encrypted', data: 'gAAAAABo', index: 2 },
    ])
    expect(reasoningDetails(item({ summary: said('plain') }), 0)).toEqual([
      { type: 'reasoning.text', text: 'plain', index: 0 },
    ])
    expect(reasoningDetails(item(), 0)).toEqual([])
    expect(reasoningStateDetail(item({ encrypted_content: 'EqkE' }), 3)).toEqual({
      type: 'reasoning.text',
      signature: 'EqkE',
      index: 3,
    })
    expect(reasoningStateDetail(item(), 3)).toBeUndefined()
  })

  it('gives them back as reasoning items, pieces of one index joined, kinds it does not make left out', () => {
    const back = reasoningFromDetails(
      [
        { type: 'reasoning.text', text: 'I will ', index: 0 },
        { type: 'reasoning.text', text: 'call it.', index: 0 },
        { type: 'reasoning.text', signature: 'EqkE', index: 0 },
        { type: 'reasoning.encrypted', data: 'EtgB', index: 1 },
        { type: 'reasoning.summary', summary: 'plan', index: 2 },
        { type: 'reasoning.encrypted', data: 'gAAAAABo', index: 2 },
        { type: 'openrouter.server_tool_call', index: 3 },
      ],
      '/messages/1',
    )
    expect(back).toEqual([
      { type: 'reasoning', summary: [{ type: 'summary_text', text: 'I will call it.' }], encrypted_content: 'EqkE' },
      { type: 'reasoning', summary: [], encrypted_content: 'EtgB' },
      { type: 'reasoning', summary: [{ type: 'summary_text', text: 'plan' }], encrypted_content: 'gAAAAABo' },
    ])
    expect(reasoningFromDetails(undefined, '/m')).toEqual([])
  })

  it('refuses what is not details, naming where', () => {
    const refused = (v: unknown) => {
      try {
        reasoningFromDetails(v, '/messages/1')
      } catch (e) {
        return e
      }
    }
    expect(refused('x')).toBeInstanceOf(GatewayError)
    expect((refused([5]) as Error).message).toMatch('/messages/1/reasoning_details/0 must be an object')
    expect((refused([{ type: 'reasoning.text', text: 5 }]) as Error).message).toMatch(
      '/messages/1/reasoning_details/0/text must be a string',
    )
  })
})
