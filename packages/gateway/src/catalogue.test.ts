import { describe, expect, it } from 'vitest'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { OpenRouter } from '@openrouter/sdk'
import { createServer } from 'node:http'
import { catalogueIdOf, loadCatalogue, simulatorCatalogue } from './catalogue.js'
import { modelsList } from './model-directory.js'

const write = (content: unknown) => {
  const path = join(mkdtempSync(join(tmpdir(), 'catalogue-')), 'models.json')
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content))
  return path
}
const model = {
  id: 'openai/gpt-4o-mini',
  name: 'GPT-4o mini',
  context_length: 128000,
  pricing: { input: '0.00000015', output: '0.0000006' },
  endpoints: [
    {
      provider: 'openai',
      protocol: 'openai-chat',
      base_url: 'https://api.openai.invalid/v1',
      upstream_model: 'gpt-4o-mini',
      api_key_env: 'OPENAI_API_KEY',
    },
  ],
}

describe('the model catalogue', () => {
  it('loads a valid file and fills defaults', async () => {
    const c = await loadCatalogue(write({ models: [model] }), { OPENAI_API_KEY: 'sk-test' })
    expect(c.models[0]!.endpoints[0]!.tiers).toEqual(['default'])
    expect(c.models[0]!.capabilities.tools).toBe(true)
  })

  it('names every problem with its path, and never a credential', async () => {
    const bad = {
      models: [
        { ...model, pricing: { input: 'cheap', output: '1' } },
        { ...model, endpoints: [] },
      ],
    }
    const err = await loadCatalogue(write(bad), { OPENAI_API_KEY: 'sk-secret' }).catch((e: Error) => e)
    expect(String(err)).toMatch(/models\.0\.pricing\.input/)
    expect(String(err)).toMatch(/models\.1\.endpoints/)
    expect(String(err)).toMatch(/listed twice/)
    expect(String(err)).not.toContain('sk-secret')
    await expect(loadCatalogue(write('{not json'))).rejects.toThrow(/cannot be read as JSON/)
    await expect(loadCatalogue(write({ models: [model] }), {})).rejects.toThrow(/needs OPENAI_API_KEY/)
  })

  it('takes web_search on the protocols whose providers have a web search tool only', async () => {
    const env = { OPENAI_API_KEY: 'sk-test' }
    const on = (protocol: string) => ({
      models: [{ ...model, endpoints: [{ ...model.endpoints[0], protocol, web_search: true }] }],
    })
    expect((await loadCatalogue(write(on('openai-responses')), env)).models[0]!.endpoints[0]!.web_search).toBe(true)
    await expect(loadCatalogue(write(on('anthropic-messages')), env)).resolves.toBeDefined()
    await expect(loadCatalogue(write(on('openai-chat')), env)).rejects.toThrow(
      /models\.0\.endpoints\.0\.web_search.*Chat Completions has no web search tool/s,
    )
  })

  it("maps a provider's own model names to models, per provider, and refuses an alias that is taken", async () => {
    const env = { OPENAI_API_KEY: 'sk-test' }
    const other = { ...model, id: 'openai/gpt-5' }
    const c = await loadCatalogue(
      write({
        models: [
          { ...model, aliases: { openai: ['gpt-4o-mini'] } },
          { ...other, aliases: { anthropic: ['gpt-4o-mini'] } },
        ],
      }),
      env,
    )
    expect(catalogueIdOf(c, 'openai', 'gpt-4o-mini')).toBe('openai/gpt-4o-mini')
    expect(catalogueIdOf(c, 'anthropic', 'gpt-4o-mini')).toBe('openai/gpt-5')
    // A model's id is its name on every door; a name nothing answers to is no model.
    expect(catalogueIdOf(c, 'openai', 'openai/gpt-5')).toBe('openai/gpt-5')
    expect(catalogueIdOf(c, 'anthropic', 'openai/gpt-4o-mini')).toBe('openai/gpt-4o-mini')
    expect(catalogueIdOf(c, 'openai', 'gpt-5')).toBeUndefined()
    const taken = write({
      models: [
        { ...model, aliases: { openai: ['mini', 'openai/gpt-5'] } },
        { ...other, aliases: { openai: ['mini'] } },
      ],
    })
    const err = String(await loadCatalogue(taken, env).catch((e: Error) => e))
    expect(err).toMatch(/models\.0\.aliases\.openai\.1: openai\/gpt-5 is a model's id/)
    expect(err).toMatch(/models\.1\.aliases\.openai\.0: mini is already an alias of openai\/gpt-4o-mini/)
  })

  it('lists models in the shape the official client accepts', async () => {
    const body = JSON.stringify(modelsList(simulatorCatalogue('http://127.0.0.1:1')))
    const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(body))
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    try {
      const { port } = server.address() as { port: number }
      const client = new OpenRouter({
        apiKey: 'k',
        serverURL: `http://127.0.0.1:${port}/api/v1`,
        retryConfig: { strategy: 'none' },
      })
      const page = await client.models.list()
      const models = page.result.data
      expect(models.map((m) => m.id)).toEqual(['roster-sim/chat', 'roster-sim/responses', 'roster-sim/messages'])
      expect(models[0]!.name).toMatch(/simulator/)
      expect(models[0]!.pricing.prompt).toBe('0.000001')
      expect(models[0]!.contextLength).toBe(128000)
    } finally {
      server.close()
    }
  })
})

describe('the demo catalogue docker-compose serves', () => {
  it('is the simulator catalogue, valid, pointing at the compose simulator service', async () => {
    const file = join(import.meta.dirname, '../../../deploy/demo-catalogue.json')
    expect(await loadCatalogue(file, {})).toEqual(simulatorCatalogue('http://upstream-sim:3300'))
  })
})
