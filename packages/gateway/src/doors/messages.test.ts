import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { sseEvent } from '@roster/protocol'
import { MessageInProgress } from '../items-in-progress.js'
import { MessagesStream } from './messages.js'

/** A content_block_delta as its object serialized would be, `type` first (what the template must equal). */
const serialized = (index: number, delta: object) =>
  sseEvent(JSON.stringify({ type: 'content_block_delta', index, delta }), 'content_block_delta')

describe('the Messages door’s event stream', () => {
  it('writes a text delta from its template as the same text as its object serialized, whatever the text', () => {
    // The events as a message in progress emits them, through the door's own translation.
    const door = new MessagesStream()
    const written: string[] = []
    const message = new MessageInProgress({ emit: (e) => written.push(door.event(e)), addItem: () => 0 })
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        written.length = 0
        message.delta('text', text, undefined)
        expect(written.at(-1)).toBe(serialized(0, { type: 'text_delta', text }))
      }),
      { numRuns: 2_000 },
    )
    // And it is JSON a client reads back (the text may hold `data: ` itself: take the first line's rest).
    const last = written.at(-1)!
    const data = last.slice(last.indexOf('\ndata: ') + '\ndata: '.length, -2)
    expect(JSON.parse(data)).toMatchObject({ type: 'content_block_delta', index: 0 })
  })

  it('numbers a later block’s deltas by that block, and writes a tool call’s input as its object serialized', () => {
    const door = new MessagesStream()
    const written: string[] = []
    const emit = (e: Parameters<MessagesStream['event']>[0]) => written.push(door.event(e))
    const message = new MessageInProgress({ emit, addItem: () => 0 })
    message.delta('text', 'a', undefined)
    message.delta('refusal', 'no', undefined)
    expect(written.at(-1)).toBe(serialized(1, { type: 'text_delta', text: 'no' }))
    const call = {
      type: 'function_call' as const,
      id: 'fc_1',
      call_id: 'call_1',
      name: 'f',
      arguments: '',
      status: 'in_progress' as const,
    }
    written.push(door.event({ type: 'response.output_item.added', output_index: 1, item: call }))
    written.push(
      door.event({ type: 'response.function_call_arguments.delta', item_id: 'fc_1', output_index: 1, delta: '{"x":' }),
    )
    expect(written.at(-1)).toBe(serialized(2, { type: 'input_json_delta', partial_json: '{"x":' }))
  })
})
