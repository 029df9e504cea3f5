import { describe, expect, it } from 'vitest'
import { ChatToolCalls } from './chat-tool-calls.js'
import type { Delta } from '../deltas.js'
import { PROVIDER_ITEM } from '../wire.js'

const calls = (pieces: unknown[][]) => {
  const t = new ChatToolCalls()
  const out: Delta[] = []
  for (const chunk of pieces) for (const p of chunk) out.push(...t.piece(p))
  out.push(...t.finish())
  return out
}
/** The function calls the deltas make, each by the index it was given. */
function functions(out: Delta[]) {
  const byIndex = new Map<number, { id?: string; name?: string; args: string }>()
  for (const d of out) {
    if (d.type !== 'tool_call') continue
    const c = byIndex.get(d.index) ?? { args: '' }
    c.id ??= d.id
    c.name ??= d.name
    c.args += d.arguments
    byIndex.set(d.index, c)
  }
  return [...byIndex.values()]
}

describe("a Chat Completions stream's tool calls", () => {
  it('tells parallel calls without index apart by their ids (Mistral, Gemini)', () => {
    const out = calls([
      [
        { id: 'a', type: 'function', function: { name: 'f', arguments: '{"a":1,"b":2}' } },
        { id: 'b', type: 'function', function: { name: 'g', arguments: '{"a":2,"b":1}' } },
      ],
    ])
    expect(functions(out)).toEqual([
      { id: 'a', name: 'f', args: '{"a":1,"b":2}' },
      { id: 'b', name: 'g', args: '{"a":2,"b":1}' },
    ])
  })

  it('continues the last call with a piece that names neither index nor id, and the call its id names', () => {
    const out = calls([
      [{ id: 'a', function: { name: 'f', arguments: '{"x"' } }],
      [{ function: { arguments: ':1}' } }],
      [{ id: 'b', function: { name: 'g', arguments: '{' } }],
      [{ id: 'a', function: { arguments: '' } }],
      [{ id: 'b', function: { arguments: '}' } }],
    ])
    expect(functions(out)).toEqual([
      { id: 'a', name: 'f', args: '{"x":1}' },
      { id: 'b', name: 'g', args: '{}' },
    ])
  })

  it("goes by index where given (OpenAI's pieces name only it), and starts a call where an index comes back with another id", () => {
    const out = calls([
      [{ index: 0, id: 'a', type: 'function', function: { name: 'f', arguments: '' } }],
      [{ index: 1, id: 'b', type: 'function', function: { name: 'g', arguments: '{}' } }],
      [{ index: 0, function: { arguments: '{"q":1}' } }],
      [{ index: 0, id: 'c', type: 'function', function: { name: 'h', arguments: '{}' } }],
    ])
    expect(functions(out)).toEqual([
      { id: 'a', name: 'f', args: '{"q":1}' },
      { id: 'b', name: 'g', args: '{}' },
      { id: 'c', name: 'h', args: '{}' },
    ])
  })

  it('makes a custom call the provider’s custom_tool_call, its input joined, and a kind no one knows <kind>_tool_call; never a function', () => {
    const out = calls([
      [{ index: 0, id: 'c1', type: 'custom', custom: { name: 'apply', input: '*** Begin' } }],
      [{ index: 0, custom: { input: ' Patch' } }],
      [{ index: 1, id: 'x1', type: 'telepathy', telepathy: { thought: 'hi' } }],
    ])
    expect(out.some((d) => d.type === 'tool_call')).toBe(false)
    const done = out.filter((d) => d.type === 'provider_item' && d.done)
    expect(done.map((d) => d.type === 'provider_item' && JSON.parse(JSON.stringify(d.item)))).toEqual([
      {
        type: 'custom_tool_call',
        id: expect.any(String),
        call_id: 'c1',
        name: 'apply',
        input: '*** Begin Patch',
        status: 'completed',
      },
      {
        type: 'telepathy_tool_call',
        id: expect.any(String),
        call_id: 'x1',
        telepathy: { thought: 'hi' },
        status: 'completed',
      },
    ])
    const first = done[0]!
    expect(first.type === 'provider_item' && first.item[PROVIDER_ITEM]).toMatchObject({
      ranByProvider: false,
      chatToolCall: { id: 'c1', type: 'custom', custom: { name: 'apply', input: '*** Begin Patch' } },
    })
  })
})
