import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { sseEvent } from '@roster/protocol'
import { EventStreamDecoder, readEventStream } from './event-stream.js'

describe('the one reader of Server-Sent Events', () => {
  it('puts back together bytes split anywhere, even inside a character', () => {
    const bytes = Buffer.from('event: a\ndata: {"t":"é😀"}\n\n: keepalive\n\ndata: [DONE]\n\n')
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: bytes.length - 1 }), { maxLength: 12 }), (cuts) => {
        const decoder = new EventStreamDecoder()
        const seen: { event?: string; data: string }[] = []
        let at = 0
        for (const cut of [...cuts.sort((a, b) => a - b), bytes.length]) {
          seen.push(...decoder.push(bytes.subarray(at, cut)).map((e) => ({ event: e.event, data: e.data })))
          at = cut
        }
        seen.push(...decoder.end())
        expect(seen).toEqual([
          { event: 'a', data: '{"t":"é😀"}' },
          { event: undefined, data: '[DONE]' },
        ])
      }),
    )
  })

  it('drops a byte-order mark before the first event, and only there', () => {
    const decoder = new EventStreamDecoder()
    expect(decoder.push(Buffer.from('\uFEFFdata: 1\n\n')).map((e) => e.data)).toEqual(['1'])
    expect(decoder.push('data: \uFEFF2\n\n').map((e) => e.data)).toEqual(['\uFEFF2'])
  })

  it('reads what the writer writes, pulled from a body', async () => {
    async function* body() {
      yield sseEvent({ n: 1 })
      yield Buffer.from(sseEvent({ n: 2 }, 'named'))
    }
    const read: unknown[] = []
    for await (const e of readEventStream(body(), (data, event) => ({ ...JSON.parse(data), event }))) read.push(e)
    expect(read).toEqual([
      { n: 1, event: undefined },
      { n: 2, event: 'named' },
    ])
  })

  it('ends the stream with the error of a data it cannot parse', async () => {
    async function* body() {
      yield 'data: {"ok":true}\n\ndata: not json\n\n'
    }
    const read: unknown[] = []
    await expect(
      (async () => {
        for await (const e of readEventStream(body(), (data) => JSON.parse(data) as unknown)) read.push(e)
      })(),
    ).rejects.toThrow(SyntaxError)
    expect(read).toEqual([{ ok: true }])
  })
})
