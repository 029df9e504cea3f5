import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { Catalogue } from '../catalogue.js'
import { presetPanel, readAnalysis } from './fusion.js'

const model = (id: string, price: number, capabilities: object) => ({
  id,
  name: id,
  context_length: 8_192,
  pricing: { input: String(price), output: String(price) },
  capabilities,
  endpoints: [
    { provider: 'p', protocol: 'openai-chat' as const, base_url: 'http://127.0.0.1:9/v1', upstream_model: 'm' },
  ],
})
// Best first, as the catalogue lists its models.
const catalogue = Catalogue.parse({
  models: [
    model('a/best', 0.00003, { tools: true, reasoning: true }),
    model('a/good', 0.00001, { tools: true }),
    model('a/notools', 0.000001, { tools: false }),
    model('a/cheap-thinker', 0.0000001, { tools: true, reasoning: true }),
    model('a/cheap', 0.0000002, { tools: true }),
  ],
})

describe("fusion's panel presets", () => {
  it('fill each preset from the catalogue by its rule, with models able to use tools when the panel has any', () => {
    expect(presetPanel(catalogue, 'general-high', true)).toEqual(['a/best', 'a/good', 'a/cheap-thinker'])
    expect(presetPanel(catalogue, 'general-high', false)).toEqual(['a/best', 'a/good', 'a/notools'])
    expect(presetPanel(catalogue, 'general-budget', true)).toEqual(['a/cheap-thinker', 'a/cheap', 'a/good'])
    expect(presetPanel(catalogue, 'general-fast', true)).toEqual(['a/cheap', 'a/good'])
  })
})

describe("the analyst's answer", () => {
  it('is read from prose or a fence, repaired where almost JSON, its missing lists empty', () => {
    expect(readAnalysis('Here it is:\n```json\n{"consensus": ["x"], "blind_spots": ["y"],}\n```')).toEqual({
      consensus: ['x'],
      contradictions: [],
      partial_coverage: [],
      unique_insights: [],
      blind_spots: ['y'],
    })
    expect(readAnalysis('no analysis today')).toBeUndefined()
    expect(readAnalysis('{"consensus": "not a list"}')).toBeUndefined()
  })

  it('never throws, whatever the analyst wrote', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.json()), (text) => {
        const read = readAnalysis(text)
        if (read) expect(Array.isArray(read.consensus)).toBe(true)
      }),
    )
  })
})
