import { describe, expect, it } from 'vitest'
import { ResponsesRequest } from './request.js'
import { traceOf } from './trace.js'

describe('trace', () => {
  it('names trace and span from the five known keys, passes others as attributes, and gives a W3C traceparent', () => {
    const t = traceOf(
      ResponsesRequest.parse({
        model: 'a/b',
        trace: { trace_id: 'checkout-42', span_name: 'answer', parent_span_id: 'p1', team: 'search', n: 3 },
      }),
    )!
    const [, traceId, spanId] = t.headers.traceparent.split('-')
    expect(traceId).toMatch(/^[0-9a-f]{32}$/)
    // The same caller trace id always maps to the same W3C id, so spans of one trace meet.
    expect(
      traceOf(ResponsesRequest.parse({ model: 'a/b', trace: { trace_id: 'checkout-42' } }))!.headers.traceparent.split(
        '-',
      )[1],
    ).toBe(traceId)
    const records: [object, string][] = []
    t.log({ info: (record, message) => records.push([record, message]) }, { model: 'a/b' })
    expect(records).toEqual([
      [
        {
          trace: {
            trace_id: 'checkout-42',
            span_name: 'answer',
            parent_span_id: 'p1',
            w3c_trace_id: traceId,
            span_id: spanId,
          },
          attributes: { team: 'search', n: 3 },
          model: 'a/b',
        },
        'generation',
      ],
    ])
    expect(traceOf(ResponsesRequest.parse({ model: 'a/b' }))).toBeUndefined()
  })
})
