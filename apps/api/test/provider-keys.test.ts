import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import OpenAI from 'openai'
import Anthropic from '@anthropic-ai/sdk'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import { KEYED_PROVIDERS } from '@roster/gateway'
import { startApi, useTestTenant, type ApiProcess } from '@roster/testing'

// Real models from a provider key alone (issue 56): an API started with nothing but provider keys
// and a reachable Ollama serves those providers' models, priced from models.dev's catalogue, to the
// official clients, by Roster's names and by the providers' own. The simulator stands in for each
// provider (its base URL variable points at it) and for Ollama's model API: every call it takes
// must carry that provider's key.
const env = useTestTenant()
let sim: Simulator
let api: ApiProcess

beforeAll(async () => {
  sim = await startSimulator({
    replyTokens: 3,
    ollama: [
      { name: 'llama3.2:latest', capabilities: ['completion', 'tools'], contextLength: 131_072 },
      { name: 'llava:7b', capabilities: ['completion', 'vision'], contextLength: 4_096 },
    ],
  })
  const keys = Object.fromEntries(
    KEYED_PROVIDERS.flatMap((p) => [
      [p.keys[0]!, `sk-${p.name}-test`],
      [p.baseUrlEnv, `${sim.url}/v1`],
    ]),
  )
  api = await startApi({ databaseUrl: env.t.url, env: { ...keys, OLLAMA_BASE_URL: sim.url } })
}, 60_000)
afterAll(async () => {
  await api?.stop()
  await sim?.close()
})

const headers = () => ({ authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' })

describe('models from provider keys', () => {
  it('lists every keyed provider’s models and Ollama’s, with prices, context and capabilities', async () => {
    const listed = (await (await fetch(`${api.url}/models`, { headers: headers() })).json()) as {
      data: { id: string; context_length: number; pricing: { prompt: string; completion: string } }[]
    }
    const ids = listed.data.map((m) => m.id)
    for (const id of ['openai/gpt-4o-mini', 'anthropic/claude-sonnet-4', 'ollama/llama3.2', 'ollama/llava:7b'])
      expect(ids).toContain(id)
    for (const provider of ['google/', 'mistralai/', 'groq/'])
      expect(ids.some((id) => id.startsWith(provider))).toBe(true)
    const mini = listed.data.find((m) => m.id === 'openai/gpt-4o-mini')!
    expect(Number(mini.pricing.prompt)).toBeGreaterThan(0)
    expect(listed.data.find((m) => m.id === 'ollama/llama3.2')).toMatchObject({
      context_length: 131_072,
      pricing: { prompt: '0', completion: '0' },
    })
  })

  it('answers the openai client by the provider’s own name, through that provider, with its key', async () => {
    const openai = new OpenAI({ apiKey: env.tenant.keys.user, baseURL: api.url, maxRetries: 0 })
    const before = sim.stats.credentials.length
    const response = await openai.responses.create({ model: 'gpt-4o-mini', input: 'Hello!' })
    expect(response.status).toBe('completed')
    expect(response.output_text.length).toBeGreaterThan(0)
    expect(sim.stats.lastBody['/v1/responses']).toMatchObject({ model: 'gpt-4o-mini' })
    expect(sim.stats.credentials.slice(before)).toEqual(['sk-openai-test'])
  })

  it('answers the Anthropic client by Claude’s dated name', async () => {
    const anthropic = new Anthropic({
      apiKey: env.tenant.keys.user,
      baseURL: api.url.replace(/\/v1$/, ''),
      maxRetries: 0,
    })
    const before = sim.stats.credentials.length
    const message = await anthropic.messages.create({
      model: 'claude-sonnet-4-20250514',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Hello!' }],
    })
    expect(message.content[0]).toMatchObject({ type: 'text' })
    expect(sim.stats.lastBody['/v1/messages']).toMatchObject({ model: 'claude-sonnet-4-20250514' })
    expect(sim.stats.credentials.slice(before)).toEqual(['sk-anthropic-test'])
  })

  it('reaches each of the other providers (OpenRouter for what no direct key covers), and Ollama with no key, on Chat Completions', async () => {
    const listed = (await (await fetch(`${api.url}/models`, { headers: headers() })).json()) as {
      data: { id: string }[]
    }
    const pick = (prefix: string) => listed.data.find((m) => m.id.startsWith(prefix))!.id
    for (const [model, credential] of [
      [pick('google/'), 'sk-google-test'],
      [pick('mistralai/'), 'sk-mistralai-test'],
      [pick('groq/'), 'sk-groq-test'],
      // No DeepSeek key: its models come through OpenRouter.
      [pick('deepseek/'), 'sk-openrouter-test'],
      ['ollama/llama3.2', ''],
    ] as const) {
      const before = sim.stats.credentials.length
      const res = await fetch(`${api.url}/chat/completions`, {
        method: 'POST',
        headers: headers(),
        body: JSON.stringify({ model, messages: [{ role: 'user', content: '[sim] say Reached.' }] }),
      })
      expect(res.status, `${model}: ${await res.clone().text()}`).toBe(200)
      const body = (await res.json()) as { model: string; choices: { message: { content: string } }[] }
      expect(body.model).toBe(model)
      expect(body.choices[0]!.message.content).toBe('Reached.')
      expect(sim.stats.credentials.slice(before), model).toEqual([credential])
    }
  })

  it('serves openrouter/auto as the best model for the request, naming the one chosen', async () => {
    const res = await fetch(`${api.url}/chat/completions`, {
      method: 'POST',
      headers: headers(),
      body: JSON.stringify({ model: 'openrouter/auto', messages: [{ role: 'user', content: '[sim] say Routed.' }] }),
    })
    expect(res.status, await res.clone().text()).toBe(200)
    const body = (await res.json()) as { model: string }
    // Anthropic's first: its newest model is the catalogue's best.
    expect(body.model).toMatch(/^anthropic\//)
  })
})
