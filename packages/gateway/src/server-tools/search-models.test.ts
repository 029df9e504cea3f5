import { describe, expect, it } from 'vitest'
import { OutputItems$inboundSchema } from '@openrouter/sdk/models'
import { Catalogue } from '../catalogue.js'
import { serverToolKinds } from './index.js'

const endpoint = (provider: string) => ({
  provider,
  protocol: 'openai-chat' as const,
  base_url: 'http://127.0.0.1:9/v1',
  upstream_model: 'm',
})
const catalogue = Catalogue.parse({
  models: [
    {
      id: 'anthropic/claude-sonnet-4',
      name: 'Claude Sonnet 4',
      description: 'Balanced model for coding and agents',
      context_length: 200_000,
      pricing: { input: '0.000003', output: '0.000015' },
      capabilities: { tools: true, reasoning: true, images: true },
      endpoints: [endpoint('anthropic')],
    },
    {
      id: 'openai/gpt-4o-mini',
      name: 'GPT-4o mini',
      context_length: 128_000,
      pricing: { input: '0.00000015', output: '0.0000006' },
      capabilities: { tools: true, images: true },
      endpoints: [endpoint('openai')],
    },
    {
      id: 'local/tiny',
      name: 'Tiny local model',
      context_length: 8_192,
      pricing: { input: '0', output: '0' },
      capabilities: { tools: false },
      endpoints: [endpoint('ollama')],
    },
  ],
})
const kind = serverToolKinds({
  webFetch: { allowPrivateNetworks: false, maxBytes: 1024, timeoutMs: 1_000 },
  search: { timeoutMs: 1_000 },
}).get('openrouter:experimental__search_models')!
const tool = (parameters: unknown = {}) => kind.offer(kind.parameters.parse(parameters), { catalogue })
const run = async (args: Record<string, unknown>, parameters?: unknown) =>
  (await tool(parameters).run(args, { signal: new AbortController().signal })) as any

describe('openrouter:experimental__search_models', () => {
  it('browses the catalogue with no arguments, at most max_results, saying how many matched', async () => {
    const all = await run({})
    expect([all.total_results, all.showing]).toEqual([3, 3])
    expect(all.models.map((m: any) => m.id)).toEqual(catalogue.models.map((m) => m.id))
    expect(all.models[0]).toEqual({
      id: 'anthropic/claude-sonnet-4',
      name: 'Claude Sonnet 4',
      description: 'Balanced model for coding and agents',
      context_length: 200_000,
      pricing: { prompt_per_million: 3, completion_per_million: 15 },
      capabilities: ['tools', 'reasoning', 'images'],
      providers: ['anthropic'],
    })
    const one = await run({}, { max_results: 1 })
    expect([one.total_results, one.showing, one.models.length]).toEqual([3, 1, 1])
  })

  it('filters by words, provider, capabilities, context and price; wrong-typed arguments are ignored', async () => {
    expect((await run({ query: 'coding agents' })).models.map((m: any) => m.id)).toEqual(['anthropic/claude-sonnet-4'])
    expect((await run({ provider: 'OpenAI' })).models.map((m: any) => m.id)).toEqual(['openai/gpt-4o-mini'])
    expect((await run({ capabilities: ['reasoning'] })).total_results).toBe(1)
    expect((await run({ capabilities: ['tools'], max_prompt_price: 1 })).models.map((m: any) => m.id)).toEqual([
      'openai/gpt-4o-mini',
    ])
    expect((await run({ min_context_length: 100_000, max_completion_price: 10 })).total_results).toBe(1)
    expect((await run({ query: 42, min_context_length: 'big' })).total_results).toBe(3)
    expect((await run({ query: 'no such model anywhere' })).models).toEqual([])
  })

  it('shows its call as the official client reads the item', async () => {
    const args = { query: 'claude' }
    const output = await run(args)
    const item = OutputItems$inboundSchema.parse({
      type: 'openrouter:experimental__search_models',
      id: 'st_1',
      status: 'completed',
      ...tool().itemFields!(args, output),
    }) as any
    expect(item).toMatchObject({ arguments: '{"query":"claude"}', query: 'claude' })
    expect(kind.parameters.safeParse({ max_results: 21 }).success).toBe(false)
  })
})

describe('openrouter:tool_search', () => {
  const fn = (name: string, description: string, param = 'x', paramDescription = '') => ({
    name,
    description,
    parameters: { type: 'object', properties: { [param]: { type: 'string', description: paramDescription } } },
  })
  const kinds = serverToolKinds({
    webFetch: { allowPrivateNetworks: false, maxBytes: 1024, timeoutMs: 1_000 },
    search: { timeoutMs: 1_000 },
  })
  const search = kinds.get('openrouter:tool_search')!
  it('finds withheld functions by name, description or parameter, the most matched first, and offers them from then on', async () => {
    const deferred = {
      withheld: [
        fn('get_weather', 'Forecast for a city', 'city'),
        fn('book_table', 'Reserve a restaurant table', 'when', 'the date and time'),
        fn('add_event', 'Add an event to the calendar', 'date', 'the date and time of the event'),
      ],
      offered: [fn('take_note', 'Note something')],
    }
    const tool = search.offer(search.parameters.parse({ max_results: 2 }), { catalogue, deferred })
    const out = (await tool.run({ query: 'calendar event date' }, { signal: new AbortController().signal })) as any
    expect(out.tools.map((t: any) => t.name)).toEqual(['add_event', 'book_table'])
    expect(deferred.offered.map((f) => f.name)).toEqual(['take_note', 'add_event', 'book_table'])
    await tool.run({ query: 'calendar' }, { signal: new AbortController().signal })
    expect(deferred.offered).toHaveLength(3) // offered once
    expect(
      ((await tool.run({ query: 'WEATHER' }, { signal: new AbortController().signal })) as any).tools[0].name,
    ).toBe('get_weather')
    expect(await tool.run({ query: ' ' }, { signal: new AbortController().signal })).toEqual({
      error: 'query is empty',
    })
    expect(((await tool.run({ query: 'spaceship' }, { signal: new AbortController().signal })) as any).tools).toEqual(
      [],
    )
  })
})
