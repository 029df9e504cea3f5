import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { MessageInProgress } from './items-in-progress.js'
import { openResponsesEvent, splicedEvent } from './stream-writer.js'
import type { StreamEvent } from './wire.js'

describe('an Open Responses event as the stream writes it', () => {
  it('is the same text for a text delta from its template as from its JSON spliced, whatever the text', () => {
    // The delta as a message in progress emits it: a field added there and not to the template fails here.
    let emitted: StreamEvent | undefined
    const message = new MessageInProgress({ emit: (e) => (emitted = e), addItem: () => 0 })
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.nat(1e9), (delta, seq) => {
        message.delta('text', delta, undefined)
        expect(emitted!.type).toBe('response.output_text.delta')
        expect(openResponsesEvent(emitted!, seq)).toBe(splicedEvent(emitted!.type, JSON.stringify(emitted), seq))
      }),
      { numRuns: 2_000 },
    )
  })

  it('carries a delta’s log probabilities, and any other event, as its JSON with the sequence number after the type', () => {
    const withLogprobs: StreamEvent = {
      type: 'response.output_text.delta',
      item_id: 'msg_1',
      output_index: 0,
      content_index: 0,
      delta: 'Hi',
      logprobs: [{ token: 'Hi', logprob: -0.5, bytes: [72, 105], top_logprobs: [] }],
    }
    const text = openResponsesEvent(withLogprobs, 7)
    expect(text.startsWith('event: response.output_text.delta\ndata: ')).toBe(true)
    expect(JSON.parse(text.slice(text.indexOf('data: ') + 6))).toEqual({ ...withLogprobs, sequence_number: 7 })
    const done: StreamEvent = {
      type: 'response.output_text.done',
      item_id: 'msg_1',
      output_index: 0,
      content_index: 0,
      text: 'Hi',
      logprobs: [],
    }
    expect(openResponsesEvent(done, 8)).toBe(
      'event: response.output_text.done\ndata: {"type":"response.output_text.done","sequence_number":8,"item_id":"msg_1","output_index":0,"content_index":0,"text":"Hi","logprobs":[]}\n\n',
    )
  })
})
