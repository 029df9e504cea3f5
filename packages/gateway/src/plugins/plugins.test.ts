import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { Catalogue } from '../catalogue.js'
import type { InputItem, ResponsesRequest } from '../request.js'
import { middleOut } from './context-compression.js'
import { pluginUses, withFilesRead } from './index.js'
import { healJson } from './response-healing.js'
import { routedModel } from './routers.js'
import { linksIn } from './web.js'

describe('response-healing', () => {
  it.each([
    ['{"name": "Alice", "age": 30', { name: 'Alice', age: 30 }],
    ['```json\n{"name": "Bob"}\n```', { name: 'Bob' }],
    ['Here\'s the data you requested:\n{"name": "Charlie", "age": 25}', { name: 'Charlie', age: 25 }],
    ['{"name": "David", "age": 35,}', { name: 'David', age: 35 }],
    ["{name: 'Eve', age: 40}", { name: 'Eve', age: 40 }],
    ['Sure! ```\n[1, 2, 3,]\n``` Anything else?', [1, 2, 3]],
  ])('repairs %j', (text, value) => {
    expect(JSON.parse(healJson(text)!)).toEqual(value)
  })

  it('leaves prose that holds no JSON alone', () => {
    for (const text of ['I cannot help with that.', 'yes', '42', '']) expect(healJson(text)).toBeUndefined()
  })

  it('answers JSON or nothing, whatever the text', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (text) => {
        const healed = healJson(text)
        if (healed !== undefined) expect(typeof JSON.parse(healed)).toBe('object')
      }),
    )
  })
})

describe('context-compression (middle-out)', () => {
  const msg = (n: number): InputItem => ({ role: 'user', content: `message ${n} ${'x'.repeat(100)}` })
  const call = (id: string): InputItem => ({ type: 'function_call', call_id: id, name: 'f', arguments: '{}' })
  const out = (id: string): InputItem => ({ type: 'function_call_output', call_id: id, output: 'ok' })

  it('leaves out items from the middle until it fits, keeping the first and the latest', () => {
    const items = Array.from({ length: 10 }, (_, i) => msg(i))
    const kept = middleOut(items, () => 1, 4)
    expect(kept).toHaveLength(4)
    expect(kept[0]).toBe(items[0])
    expect(kept.at(-1)).toBe(items[9])
    expect(middleOut(items, () => 1, 10)).toBe(items)
    // A hundred thousand items (a quadratic fit would not end within the test's time).
    const many = Array.from({ length: 100_000 }, (_, i) => msg(i))
    expect(middleOut(many, () => 1, 10)).toHaveLength(10)
  })

  it('never leaves a call without its result, or a result without its call', () => {
    fc.assert(
      fc.property(fc.array(fc.boolean(), { minLength: 2, maxLength: 30 }), fc.nat(30), (shape, keep) => {
        const items = shape.flatMap((isCall, i) => (isCall ? [call(`c${i}`), out(`c${i}`)] : [msg(i)]))
        const kept = middleOut(items, () => 1, keep)
        const ids = (type: string) =>
          kept
            .filter((x) => x.type === type)
            .map((x) => String((x as { call_id?: unknown }).call_id))
            .sort()
        expect(ids('function_call')).toEqual(ids('function_call_output'))
        expect(kept[0]).toBe(items[0])
      }),
    )
  })
})

const endpoint = {
  provider: 'p',
  protocol: 'openai-chat' as const,
  base_url: 'http://127.0.0.1:9/v1',
  upstream_model: 'm',
}
const model = (id: string, input: string, caps: Record<string, boolean> = {}) => ({
  id,
  name: id,
  context_length: 100_000,
  pricing: { input, output: input },
  capabilities: { tools: true, reasoning: false, images: false, ...caps },
  endpoints: [endpoint],
})
// Best first, as the catalogue is listed.
const catalogue = Catalogue.parse({
  models: [
    model('lab/frontier', '0.00001', { images: true, reasoning: true }),
    model('lab/strong', '0.000003', { images: true }),
    model('lab/mid', '0.000001'),
    model('lab/small', '0.0000002'),
    model('other/tiny', '0.00000005', { tools: false }),
  ],
})
const auto = (plugins: object[], extra: Partial<ResponsesRequest> = {}) =>
  routedModel(catalogue, { model: 'openrouter/auto', input: 'x', plugins, ...extra } as ResponsesRequest)

describe('the routers', () => {
  it('auto-router: the best model of the cost band asked for, within the allowed models', () => {
    expect(auto([{ id: 'auto-router', cost_tier: 'max' }])).toBe('lab/frontier')
    expect(auto([{ id: 'auto-router', cost_tier: 'low' }])).toBe('other/tiny')
    expect(auto([{ id: 'auto-router', cost_tier: 'high' }])).toBe('lab/mid')
    // The default tradeoff (9) keeps the cheapest fifth.
    expect(auto([{ id: 'auto-router' }])).toBe('other/tiny')
    expect(auto([{ id: 'auto-router', cost_quality_tradeoff: 0 }])).toBe('lab/strong')
    expect(auto([{ id: 'auto-router', allowed_models: ['lab/*'], cost_tier: 'low' }])).toBe('lab/small')
    expect(auto([{ id: 'auto-router', excluded_models: ['lab/frontier'], cost_tier: 'max' }])).toBe('lab/strong')
    // A request with tools rules out the model that cannot call them; one with images, those without.
    expect(auto([{ id: 'auto-router', cost_tier: 'low' }], { tools: [{ type: 'function', name: 'f' }] as never })).toBe(
      'lab/small',
    )
    const image = [{ role: 'user', content: [{ type: 'input_image', image_url: 'data:image/png;base64,AA' }] }]
    expect(auto([{ id: 'auto-beta-router', cost_tier: 'low' }], { input: image as never })).toBe('lab/strong')
  })

  it('pareto-router: the cheapest of the quality tier, or the best under max_price', () => {
    expect(auto([{ id: 'pareto-router' }])).toBe('lab/strong')
    expect(auto([{ id: 'pareto-router', min_coding_score: 0 }])).toBe('other/tiny')
    expect(auto([{ id: 'pareto-router', max_price: 1 }])).toBe('lab/mid')
    expect(auto([{ id: 'pareto-router', max_price: 0 }])).toBe('other/tiny')
  })

  it('switchyard-router: the best model able to serve the request; no router or a disabled one: none chosen', () => {
    expect(auto([{ id: 'switchyard-router', algorithm: 'capability' }])).toBe('lab/frontier')
    expect(auto([])).toBeUndefined()
    expect(auto([{ id: 'auto-router', enabled: false }])).toBeUndefined()
    expect(auto([{ id: 'auto-router', cost_tier: 'cheap' }])).toBeUndefined()
    // A router that may choose nothing refuses, never falling back to a model its entry ruled out.
    expect(() => auto([{ id: 'auto-router', allowed_models: ['nobody/*'] }])).toThrow(/no model it may choose/)
    expect(() =>
      auto([{ id: 'auto-router', allowed_models: ['other/*'] }], { tools: [{ type: 'function', name: 'f' }] as never }),
    ).toThrow(/no model it may choose/)
  })
})

describe('plugins as a request gives them', () => {
  const uses = (plugins: object[]) => pluginUses({ input: 'x', plugins } as ResponsesRequest)
  it('reads each enabled entry by its plugin, and refuses what it cannot serve with a 400 naming it', () => {
    expect(uses([{ id: 'response-healing' }, { id: 'web', enabled: false }]).map((u) => u.plugin.id)).toEqual([
      'response-healing',
    ])
    expect(() => uses([{ id: 'wizardry' }])).toThrow(/wizardry is not served by this Roster \(served: /)
    expect(() => uses([{ id: 'auto-router', cost_tier: 'cheap' }])).toThrow(/\/plugins\/0 auto-router: /)
    expect(() => uses([{ id: 'response-healing' }, { id: 'response-healing' }])).toThrow(/given twice/)
  })

  it('finds the links a message names for web-fetch', () => {
    expect(linksIn('see https://a.example/x, and (https://b.example/y?q=1). Also https://a.example/x')).toEqual([
      'https://a.example/x',
      'https://b.example/y?q=1',
    ])
  })
})

describe('file-parser', () => {
  const withFile = (part: object, plugins: object[] = [{ id: 'file-parser' }]) =>
    ({
      model: 'm',
      plugins,
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'read this' },
            { type: 'input_file', ...part },
          ],
        },
      ],
    }) as unknown as ResponsesRequest
  const text = (req: ResponsesRequest) => ((req.input as any[])[0].content as any[]).map((p) => p.text)

  it('reads a text file into a text part naming it, from a data: URL or bare base64', async () => {
    const csv = Buffer.from('a,b\n1,2\n').toString('base64')
    expect(
      text(await withFilesRead(withFile({ filename: 'n.csv', file_data: `data:text/csv;base64,${csv}` }))),
    ).toEqual(['read this', '[n.csv]\na,b\n1,2\n'])
    expect(
      text(await withFilesRead(withFile({ filename: 'notes.md', file_data: Buffer.from('# hi').toString('base64') }))),
    ).toEqual(['read this', '[notes.md]\n# hi'])
    const req = withFile({ filename: 'n.txt', file_data: 'data:text/plain;base64,aGk=' })
    const before = JSON.stringify(req)
    await withFilesRead(req)
    expect(JSON.stringify(req)).toBe(before) // the given request is never changed
  })

  it('refuses what it cannot read, naming the file, before any model is called', async () => {
    const refusals: [object, RegExp][] = [
      [
        { filename: 'x.png', file_data: 'data:image/png;base64,iVBORw0KGgo=' },
        /x\.png \(image\/png\) is of a kind file-parser does not read/,
      ],
      [
        { filename: 'broken.pdf', file_data: 'data:application/pdf;base64,JVBERi0xLjQKZ2FyYmFnZQ==' },
        /broken\.pdf is not a PDF that can be read/,
      ],
      [{ filename: 'far.pdf', file_url: 'https://example.org/far.pdf' }, /far\.pdf needs file_data/],
    ]
    for (const [part, message] of refusals) await expect(withFilesRead(withFile(part))).rejects.toThrow(message)
    await expect(
      withFilesRead(
        withFile({ filename: 'n.txt', file_data: 'aGk=' }, [{ id: 'file-parser', pdf: { engine: 'mistral-ocr' } }]),
      ),
    ).rejects.toThrow(/the PDF engine mistral-ocr is not served by this Roster; use pdf-text/)
  })
})
