import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import {
  maxToolSteps,
  parseResponsesRequest,
  partitionFromRoute,
  ResponsesFields,
  ResponsesRequest,
  sessionKey,
  tierPreference,
} from './request.js'

const ok = (body: unknown) => ResponsesRequest.safeParse(body).success
const issues = (body: unknown) =>
  ResponsesRequest.safeParse(body).error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`) ?? []

describe('the Responses request', () => {
  it('accepts what @openrouter/sdk sends, injected defaults included', () => {
    expect(
      ok({
        model: 'openai/gpt-4o-mini',
        input: 'Say hi',
        max_output_tokens: 32,
        service_tier: 'auto',
        store: false,
        stream: false,
      }),
    ).toBe(true)
    expect(
      ok({
        model: 'm',
        input: [{ role: 'user', content: [{ type: 'input_text', text: 'hi' }] }],
        service_tier: null,
        store: false,
        stream: true,
      }),
    ).toBe(true)
  })

  it('accepts what the openai client sends, and fields it does not know', () => {
    const body = {
      model: 'm',
      input: [
        { type: 'message', role: 'developer', content: 'Be brief.' },
        { role: 'user', content: 'weather?' },
        { type: 'function_call', call_id: 'c1', name: 'get_weather', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: 'sunny' },
      ],
      tools: [{ type: 'function', name: 'get_weather', parameters: { type: 'object', properties: {} }, strict: true }],
      tool_choice: { type: 'function', name: 'get_weather' },
      text: { format: { type: 'json_schema', name: 'x', schema: {} }, verbosity: 'low' },
      reasoning: { effort: 'low', summary: 'auto' },
      safety_identifier: 'abc',
      background: false,
    }
    expect(issues(body)).toEqual([])
  })

  it('applies the spec’s limits', () => {
    const base = { model: 'm', input: 'x' }
    expect(ok({ ...base, max_tool_calls: 30 })).toBe(true)
    expect(ok({ ...base, max_tool_calls: 31 })).toBe(false)
    expect(ok({ ...base, session_id: 's'.repeat(256), user: 'u'.repeat(256) })).toBe(true)
    expect(ok({ ...base, session_id: 's'.repeat(257) })).toBe(false)
    expect(ok({ ...base, user: 'u'.repeat(257) })).toBe(false)
    expect(ok({ ...base, stop: ['a', 'b', 'c', 'd'] })).toBe(true)
    expect(ok({ ...base, stop: ['a', 'b', 'c', 'd', 'e'] })).toBe(false)
    expect(ok({ ...base, stop_server_tools_when: [] })).toBe(false)
    expect(
      ok({
        ...base,
        stop_server_tools_when: [
          { type: 'step_count_is', step_count: 3 },
          { type: 'max_cost', max_cost_in_dollars: 0.5 },
        ],
      }),
    ).toBe(true)
    expect(ok({ ...base, stop_server_tools_when: [{ type: 'step_count_is' }] })).toBe(false)
    expect(ok({ ...base, service_tier: 'ultrafast' })).toBe(true)
    expect(ok({ ...base, service_tier: 'turbo' })).toBe(false)
  })

  it('refuses a non-null previous_response_id with a message that says why', () => {
    expect(ok({ model: 'm', input: 'x', previous_response_id: null })).toBe(true)
    expect(issues({ model: 'm', input: 'x', previous_response_id: 'resp_1' }).join()).toMatch(/not stored/)
  })

  it('needs a model, and echo_upstream_body only with streaming', () => {
    expect(issues({ input: 'x' }).join()).toMatch(/model/)
    expect(ok({ models: ['a/b', 'c/d'], input: 'x' })).toBe(true)
    expect(issues({ model: 'm', input: 'x', debug: { echo_upstream_body: true } }).join()).toMatch(/stream/)
    expect(ok({ model: 'm', input: 'x', stream: true, debug: { echo_upstream_body: true } })).toBe(true)
  })

  it('holds metadata to 16 pairs, keys of 64 without brackets, values of 512', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string({ minLength: 1, maxLength: 70 }), fc.string({ maxLength: 520 }), { maxKeys: 20 }),
        (metadata) => {
          const valid =
            Object.keys(metadata).length <= 16 &&
            Object.entries(metadata).every(([k, v]) => k.length <= 64 && !/[[\]]/.test(k) && v.length <= 512)
          expect(ok({ model: 'm', input: 'x', metadata })).toBe(valid)
        },
      ),
    )
  })
})

describe('checking only the fields a request carries', () => {
  const same = (body: unknown) => {
    const full = ResponsesRequest.safeParse(body)
    const sparse = parseResponsesRequest(body)
    expect(sparse.success).toBe(full.success)
    if (full.success) expect(sparse.data).toEqual(full.data)
    else expect(sparse.error?.issues).toEqual(full.error.issues)
  }
  // Values aimed at each field's limits, valid and not.
  const aimed = fc.record(
    {
      model: fc.oneof(fc.string({ maxLength: 3 }), fc.constant('m'.repeat(201)), fc.integer()),
      models: fc.array(fc.string({ maxLength: 3 }), { maxLength: 17 }),
      input: fc.oneof(
        fc.string(),
        fc.array(
          fc.record({
            role: fc.constantFrom('user', 'developer', 'robot'),
            content: fc.oneof(fc.string(), fc.constant(null), fc.integer()),
          }),
          { maxLength: 3 },
        ),
      ),
      stream: fc.oneof(fc.boolean(), fc.constant('yes')),
      max_tool_calls: fc.oneof(fc.integer({ min: -1, max: 40 }), fc.constant(null)),
      stop: fc.oneof(fc.string(), fc.array(fc.string(), { maxLength: 6 }), fc.constant(null)),
      metadata: fc.dictionary(fc.string({ maxLength: 66 }), fc.string({ maxLength: 514 }), { maxKeys: 18 }),
      session_id: fc.string({ maxLength: 260 }),
      previous_response_id: fc.oneof(fc.constant(null), fc.string()),
      service_tier: fc.constantFrom('auto', 'fast', 'ultrafast', 'turbo', null),
      temperature: fc.oneof(fc.double({ min: -1, max: 3, noNaN: true }), fc.constant(null)),
      stop_server_tools_when: fc.array(
        fc.record({ type: fc.constantFrom('step_count_is', 'max_cost'), step_count: fc.integer({ min: 0, max: 3 }) }),
        { maxLength: 2 },
      ),
      debug: fc.record({ echo_upstream_body: fc.oneof(fc.boolean(), fc.constant(1)) }),
      preset: fc.string({ maxLength: 3 }),
      background: fc.jsonValue(),
    },
    { requiredKeys: [] },
  )
  // Any JSON at all under the schema's field names and a few others.
  const names = [...Object.keys(ResponsesFields.shape), 'background', 'safety_identifier']
  const anything = fc.dictionary(fc.constantFrom(...names), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 8 })

  it('answers as the whole schema does: the same data, or the same issues', () => {
    fc.assert(fc.property(aimed, same), { numRuns: 500 })
    fc.assert(fc.property(anything, same), { numRuns: 500 })
    for (const body of [null, 'x', 3, [], [{ model: 'm' }], {}]) same(body)
  })

  it('fills in defaults for fields that were not sent', () => {
    const parsed = parseResponsesRequest({ model: 'm', input: 'x' })
    expect(parsed.success && parsed.data.stream).toBe(false)
  })
})

describe('request helpers', () => {
  it('defaults max_tool_calls to 30 and ignores it when stop conditions are given', () => {
    expect(maxToolSteps(ResponsesRequest.parse({ model: 'm' }))).toBe(30)
    expect(maxToolSteps(ResponsesRequest.parse({ model: 'm', max_tool_calls: 4 }))).toBe(4)
    expect(
      maxToolSteps(
        ResponsesRequest.parse({
          model: 'm',
          max_tool_calls: 4,
          stop_server_tools_when: [{ type: 'step_count_is', step_count: 2 }],
        }),
      ),
    ).toBeUndefined()
  })

  it('maps service tiers, the deprecated route alias and the session key', () => {
    expect(tierPreference('fast')).toEqual(tierPreference('priority'))
    expect(tierPreference('ultrafast')).toEqual(['ultrafast', 'priority', 'default'])
    expect(tierPreference('auto')).toEqual(['default'])
    expect(partitionFromRoute('fallback')).toBe('model')
    expect(partitionFromRoute('sort')).toBe('none')
    expect(partitionFromRoute(null)).toBeUndefined()
    expect(sessionKey(ResponsesRequest.parse({ model: 'm', session_id: 'body' }), 'header')).toBe('body')
    expect(sessionKey(ResponsesRequest.parse({ model: 'm' }), 'header')).toBe('header')
  })
})
