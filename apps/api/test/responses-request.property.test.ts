import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { generateSync } from 'json-schema-faker'
import { useTestTenant } from '@roster/testing'
import { DEMO_MODELS, sseEvents, useDemoGateway } from './helpers.js'
import { eventErrors, openResponsesSchemas, requestErrors, responseErrors } from './open-responses.js'

// Bodies valid under the published schema's request shape (CreateResponseBody), generated from the
// schema itself: each is served (a valid Response or stream) or refused with a 400 that names a
// field it carries; never a 5xx.
const env = useTestTenant()
const gateway = useDemoGateway(() => env.t.db, { replyTokens: 4 })

/**
 * The schema the bodies are generated from: CreateResponseBody with its 10 MB strings and 128-item
 * lists capped, so a run's body is small (each is still checked against the real schema below).
 */
const generatedFrom = JSON.parse(
  JSON.stringify(
    { $ref: '#/components/schemas/CreateResponseBody', components: { schemas: openResponsesSchemas } },
    (key, value) => (key === 'maxLength' ? Math.min(value, 64) : key === 'maxItems' ? Math.min(value, 4) : value),
  ),
)
/** A body the schema accepts, from a seed (json-schema-faker's generator is seeded, so fast-check can replay it). */
const schemaBody = fc
  .integer({ min: 1, max: 2 ** 31 - 1 })
  .map(
    (seed) =>
      generateSync(generatedFrom, { seed, optionalsProbability: 0.5, maxDepth: 6, maxDefaultItems: 3 }) as Record<
        string,
        unknown
      >,
  )

const clamp = (v: unknown, min: number, max: number) => (typeof v === 'number' ? Math.min(max, Math.max(min, v)) : v)
/**
 * The schema allows numbers and states Roster refuses by its documented limits (temperature 0–2,
 * previous_response_id, background…). Most bodies would stop there, so most runs move those fields
 * inside the limits first; the body is still one the schema accepts, and now reaches routing, the
 * providers and the reply.
 */
function withinLimits(body: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {
    ...body,
    temperature: clamp(body.temperature, 0, 2),
    top_p: clamp(body.top_p, 0, 1),
    presence_penalty: clamp(body.presence_penalty, -2, 2),
    frequency_penalty: clamp(body.frequency_penalty, -2, 2),
    max_tool_calls: clamp(body.max_tool_calls, 1, 30),
  }
  for (const key of Object.keys(out)) if (out[key] === undefined) delete out[key]
  if (out.previous_response_id != null) out.previous_response_id = null
  if (out.background === true) out.background = false
  return out
}
/** Three runs in four: within Roster's limits, on a model the catalogue has (the schema's model is any string). */
const requestBody = fc.oneof(
  { arbitrary: schemaBody, weight: 1 },
  {
    arbitrary: fc
      .tuple(schemaBody, fc.constantFrom(...DEMO_MODELS))
      .map(([body, model]) => ({ ...withinLimits(body), model })),
    weight: 3,
  },
)

describe('POST /responses with any body the Open Responses schema accepts', () => {
  it('serves it or refuses it with a 400 naming one of its fields, never a 5xx', async () => {
    let served = 0
    await fc.assert(
      fc.asyncProperty(requestBody, async (body) => {
        fc.pre(requestErrors(body).length === 0)
        const res = await gateway.app.inject({
          method: 'POST',
          url: '/api/v1/responses',
          headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' },
          payload: body,
        })
        const context = `${res.statusCode} ${res.body.slice(0, 600)}\nfor ${JSON.stringify(body).slice(0, 1500)}`
        expect(res.statusCode, context).toBeLessThan(500)
        if (res.statusCode === 200) {
          served++
          if ((body as Record<string, unknown>).stream === true) {
            const { events, done } = sseEvents(res.body)
            expect(done, context).toBe(true)
            for (const e of events) expect(eventErrors(e.data), context).toEqual([])
          } else expect(responseErrors(res.json()), context).toEqual([])
          return
        }
        expect(res.statusCode, context).toBe(400)
        const { message } = res.json().error
        // A missing model is named as the field Roster needs; any other refusal names a field the body has.
        const named = [...Object.keys(body), 'model'].some((field) =>
          new RegExp(`(^|[^a-z_])${field}([^a-z_]|$)`).test(message),
        )
        expect(named, `the refusal names none of the body's fields: ${context}`).toBe(true)
      }),
      { numRuns: 150 },
    )
    // The property says nothing if every body stops at validation: most must be served.
    expect(served).toBeGreaterThan(50)
  })
})
