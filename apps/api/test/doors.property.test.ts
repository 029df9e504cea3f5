import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { generateSync } from 'json-schema-faker'
import { useTestTenant } from '@roster/testing'
import { DEMO_MODELS, useDemoGateway } from './helpers.js'
import { clientSchema, clientType } from './client-schemas.js'

// Requests the clients' own types allow (generated from the openai and Anthropic clients'
// declarations), sent to the doors: each is served, with a reply valid under the client's reply
// type, or refused with a 4xx in the door's error shape; never a 5xx.
const env = useTestTenant()
const gateway = useDemoGateway(() => env.t.db, { replyTokens: 4 })

/** Bodies from a client's request type, strings and lists capped so each stays small. */
function bodies(client: 'openai' | 'anthropic', type: string) {
  const schema = JSON.parse(
    JSON.stringify(clientSchema(client, type), (key, value) =>
      key === 'maxLength' ? Math.min(value, 32) : key === 'maxItems' ? Math.min(value, 3) : value,
    ),
  )
  return fc.integer({ min: 1, max: 2 ** 31 - 1 }).map(
    (seed) =>
      generateSync(schema, {
        seed,
        optionalsProbability: 0.4,
        maxDepth: 5,
        maxDefaultItems: 2,
        alwaysFakeOptionals: false,
      }) as Record<string, unknown>,
  )
}
const int = (v: unknown, min: number) => (typeof v === 'number' ? Math.max(min, Math.round(v)) : v)
const clamp = (v: unknown, min: number, max: number) => (typeof v === 'number' ? Math.min(max, Math.max(min, v)) : v)
const drop = (body: Record<string, unknown>) => {
  for (const key of Object.keys(body)) if (body[key] === undefined) delete body[key]
  return body
}
/**
 * The types allow numbers where the APIs take integers, and values outside their limits; most runs
 * move those inside (and give a model the catalogue has, and a user turn), so they reach the engine,
 * a provider and the reply. The body is still one the client's type accepts.
 */
const chatWithin = (b: Record<string, unknown>): Record<string, unknown> =>
  drop({
    ...b,
    max_tokens: int(b.max_tokens, 1),
    max_completion_tokens: int(b.max_completion_tokens, 1),
    top_logprobs: clamp(int(b.top_logprobs, 0), 0, 20),
    seed: int(b.seed, 0),
    n: undefined,
    temperature: clamp(b.temperature, 0, 2),
    top_p: clamp(b.top_p, 0, 1),
    presence_penalty: clamp(b.presence_penalty, -2, 2),
    frequency_penalty: clamp(b.frequency_penalty, -2, 2),
    messages: [
      ...((b.messages as { role: string }[]) ?? []).filter((m) => m.role !== 'function'),
      { role: 'user', content: 'hi' },
    ],
  })
const messagesWithin = (b: Record<string, unknown>): Record<string, unknown> => {
  const thinking = b.thinking as { type: string; budget_tokens?: number } | undefined
  return drop({
    ...b,
    max_tokens: int(b.max_tokens, 1),
    top_k: int(b.top_k, 0),
    temperature: clamp(b.temperature, 0, 1),
    top_p: clamp(b.top_p, 0, 1),
    thinking: thinking?.type === 'enabled' ? { ...thinking, budget_tokens: int(thinking.budget_tokens, 1) } : thinking,
    messages: [...((b.messages as object[]) ?? []), { role: 'user', content: 'hi' }],
  })
}
/** One run in four as the type gives it; the others within the limits, on a model the catalogue serves, streaming off. */
const onModel = (
  arb: fc.Arbitrary<Record<string, unknown>>,
  within: (b: Record<string, unknown>) => Record<string, unknown>,
) =>
  fc.oneof(
    { arbitrary: arb, weight: 1 },
    {
      arbitrary: fc
        .tuple(arb, fc.constantFrom(...DEMO_MODELS))
        .map(([b, model]) => ({ ...within(b), model, stream: false })),
      weight: 3,
    },
  )

const send = (url: string, body: object) =>
  gateway.app.inject({
    method: 'POST',
    url,
    headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' },
    payload: body,
  })

/**
 * Sends generated requests to a door: each is served with a reply the client's type accepts, or
 * refused with a 4xx whose body `refusal` holds; never a 5xx. Enough are served to reach the engine.
 */
async function holds(
  url: string,
  requests: fc.Arbitrary<Record<string, unknown>>,
  reply: (value: unknown) => string[],
  refusal: (status: number) => object,
) {
  let served = 0
  await fc.assert(
    fc.asyncProperty(requests, async (body) => {
      const res = await send(url, body)
      const context = `${res.statusCode} ${res.body.slice(0, 500)}\nfor ${JSON.stringify(body).slice(0, 1200)}`
      expect(res.statusCode, context).toBeLessThan(500)
      if (res.statusCode === 200) {
        served++
        expect(reply(res.json()), context).toEqual([])
      } else expect(res.json(), context).toMatchObject(refusal(res.statusCode))
    }),
    { numRuns: 150 },
  )
  expect(served).toBeGreaterThan(5)
}

describe('the doors with any request their clients’ types allow', () => {
  it('/chat/completions serves it (a reply the openai client’s type accepts) or refuses it with a 4xx, never a 5xx', async () => {
    await holds(
      '/api/v1/chat/completions',
      onModel(bodies('openai', 'ChatCompletionCreateParamsNonStreaming'), chatWithin),
      clientType('openai', 'ChatCompletion'),
      (status) => ({
        error: { code: status, message: expect.any(String), metadata: { error_type: expect.any(String) } },
      }),
    )
  })

  it('/messages serves it (a Message the Anthropic client’s type accepts) or refuses it with a 4xx in its shape, never a 5xx', async () => {
    await holds(
      '/api/v1/messages',
      onModel(bodies('anthropic', 'MessageCreateParamsNonStreaming'), messagesWithin),
      clientType('anthropic', 'Message'),
      () => ({
        type: 'error',
        error: { type: expect.stringMatching(/_error$|^request_too_large$/), message: expect.any(String) },
      }),
    )
  })
})
