import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import OpenAI from 'openai'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import { useTestTenant } from '@roster/testing'
import { buildTestApp, simEndpoint, simModel } from './helpers.js'
import { responseErrors, schemaErrors } from './open-responses.js'

// POST /responses/compact: a conversation given whole, summarised by its model, handed back as
// the schema's CompactResource; nothing is stored, and the compaction item sent back later is read
// to the model as its summary.
const env = useTestTenant()
let sim: Simulator
let app: Awaited<ReturnType<typeof buildTestApp>>
let baseURL: string

beforeAll(async () => {
  sim = await startSimulator({ replyTokens: 8 })
  app = await buildTestApp(env.t.db, {}, { models: [simModel('roster-sim/chat', [simEndpoint(sim.url)])] })
  baseURL = `${await app.listen({ port: 0, host: '127.0.0.1' })}/api/v1`
})
afterAll(async () => {
  await app?.closeAll()
  await sim?.close()
})

const post = (path: string, body: object) =>
  fetch(`${baseURL}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
const upstream = () => sim.stats.lastBody['/v1/chat/completions'] as { messages: { role: string; content: unknown }[] }

const conversation = [
  { role: 'user', content: 'My name is Ada and I like tea.' },
  { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Noted, Ada.' }] },
  { role: 'user', content: [{ type: 'input_text', text: 'Plan a trip to Lisbon.' }] },
]

describe('POST /responses/compact', () => {
  it('compacts a conversation into the schema’s CompactResource: the user’s messages and one compaction item', async () => {
    const res = await post('/responses/compact', {
      model: 'roster-sim/chat',
      input: conversation,
      instructions: 'Be helpful.',
    })
    expect(res.status).toBe(200)
    const body = (await res.json()) as any
    expect(schemaErrors('CompactResource', body)).toEqual([])
    expect(body.object).toBe('response.compaction')
    expect(body.output.map((o: any) => o.type)).toEqual(['message', 'message', 'compaction'])
    expect(body.output[0]).toMatchObject({
      role: 'user',
      status: 'completed',
      content: [{ type: 'input_text', text: 'My name is Ada and I like tea.' }],
    })
    expect(body.output[2].encrypted_content).toMatch(/^rcmp1\./)
    expect(body.usage).toMatchObject({ input_tokens: expect.any(Number), output_tokens: 8 })
    // The model was asked to summarise the whole conversation, under its instructions.
    const asked = upstream().messages
    expect(asked[0]).toMatchObject({
      role: 'system',
      content: expect.stringMatching(/compact conversations[\s\S]*Be helpful\./),
    })
    expect(asked.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user', 'user'])
  })

  it('reads a compaction item sent back to /responses to the model as its summary; an altered one is a 400 naming it', async () => {
    const compacted = (await (
      await post('/responses/compact', { model: 'roster-sim/chat', input: conversation })
    ).json()) as any
    const next = await post('/responses', {
      model: 'roster-sim/chat',
      input: [...compacted.output, { role: 'user', content: 'And the hotel?' }],
    })
    expect(next.status).toBe(200)
    expect(responseErrors(await next.json())).toEqual([])
    const sent = upstream().messages
    expect(sent.map((m) => m.role)).toEqual(['user', 'user', 'user', 'user'])
    expect(JSON.stringify(sent[2]!.content)).toMatch(/^"Summary of the earlier conversation \(compacted\):\\n.+/)

    const item = compacted.output[2]
    const altered = {
      ...item,
      encrypted_content:
        item.encrypted_content.slice(0, -4) + (item.encrypted_content.endsWith('AAAA') ? 'BBBB' : 'AAAA'),
    }
    const bad = await post('/responses', {
      model: 'roster-sim/chat',
      input: [altered, { role: 'user', content: 'hi' }],
    })
    expect(bad.status).toBe(400)
    expect(((await bad.json()) as any).error.message).toMatch(
      /^\/input\/0 is a compaction item this Roster cannot read/,
    )
  })

  it('works through the openai client', async () => {
    const openai = new OpenAI({ apiKey: env.tenant.keys.user, baseURL, maxRetries: 0 })
    const compacted = await openai.responses.compact({ model: 'roster-sim/chat', input: 'Remember: the code is 42.' })
    expect(compacted.output.at(-1)).toMatchObject({ type: 'compaction', encrypted_content: expect.any(String) })
  })

  it('refuses a request without model, with a previous_response_id, or with a model not served, changing nothing', async () => {
    const before = sim.stats.requests['/v1/chat/completions'] ?? 0
    const noModel = await post('/responses/compact', { input: conversation })
    expect(noModel.status).toBe(400)
    expect(((await noModel.json()) as any).error).toMatchObject({
      message: expect.stringMatching(/\/model/),
      metadata: { error_type: 'invalid_request' },
    })
    const previous = await post('/responses/compact', { model: 'roster-sim/chat', previous_response_id: 'resp_1' })
    expect(previous.status).toBe(400)
    expect(((await previous.json()) as any).error.message).toMatch(/previous_response_id must be null/)
    const unknown = await post('/responses/compact', { model: 'nobody/none', input: 'hi' })
    expect(unknown.status).toBe(400)
    expect(sim.stats.requests['/v1/chat/completions'] ?? 0).toBe(before)
  })
})
