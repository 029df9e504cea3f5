import { describe, expect, it } from 'vitest'
import type { Catalogue, CatalogueModel } from './catalogue.js'
import { anthropicModelsPage, AnthropicModelsQuery } from './model-directory.js'

const model = (id: string, created: number) =>
  ({
    id,
    name: id,
    created,
    context_length: 8000,
    pricing: {},
    capabilities: {},
    endpoints: [],
  }) as unknown as CatalogueModel
// Newest first: e (5), d (4), c (3), b (2), a (1).
const catalogue: Catalogue = { models: ['a', 'b', 'c', 'd', 'e'].map((id, i) => model(`x/${id}`, i + 1)) }
const page = (q: Record<string, unknown>) => anthropicModelsPage(catalogue, AnthropicModelsQuery.parse(q))
const ids = (p: ReturnType<typeof page>) => p.data.map((m) => m.id)

describe("the models list in Anthropic's page shape", () => {
  it('pages newest first by after_id, and back by before_id, as the Anthropic client pages', () => {
    const first = page({ limit: '2' })
    expect(first).toMatchObject({ has_more: true, first_id: 'x/e', last_id: 'x/d' })
    expect(first.data[0]).toEqual({
      type: 'model',
      id: 'x/e',
      display_name: 'x/e',
      created_at: '1970-01-01T00:00:05.000Z',
    })
    const second = page({ limit: 2, after_id: first.last_id })
    expect(ids(second)).toEqual(['x/c', 'x/b'])
    const last = page({ limit: 2, after_id: second.last_id })
    expect(last).toMatchObject({ has_more: false, first_id: 'x/a', last_id: 'x/a' })
    expect(ids(page({ limit: 2, before_id: 'x/b' }))).toEqual(['x/d', 'x/c'])
    expect(page({ limit: 2, before_id: 'x/b' }).has_more).toBe(true)
    expect(page({ limit: 2, before_id: 'x/d' })).toMatchObject({ has_more: false, first_id: 'x/e' })
    expect(ids(page({}))).toHaveLength(5)
  })

  it('answers an id it does not know with an empty page, and refuses a limit out of range', () => {
    expect(page({ after_id: 'x/nobody' })).toEqual({ data: [], has_more: false, first_id: null, last_id: null })
    expect(AnthropicModelsQuery.safeParse({ limit: '0' }).success).toBe(false)
    expect(AnthropicModelsQuery.safeParse({ limit: '1001' }).success).toBe(false)
  })
})
