import { describe, expect, it } from 'vitest'
import { Catalogue } from './catalogue.js'
import { Router } from './routing.js'
import { ResponsesRequest } from './request.js'

const endpoint = (provider: string, extra: object = {}) => ({
  provider,
  protocol: 'openai-chat',
  base_url: `http://${provider}.test/v1`,
  upstream_model: 'm',
  ...extra,
})
const catalogue = Catalogue.parse({
  models: [
    {
      id: 'a/one',
      name: 'one',
      context_length: 1000,
      pricing: { input: '0.000002', output: '0.000004' },
      endpoints: [
        endpoint('red'),
        endpoint('green', { pricing: { input: '0.000001', output: '0.000002' } }),
        endpoint('blue', { tiers: ['priority'] }),
        endpoint('gold', { tiers: ['ultrafast'] }),
      ],
    },
    {
      id: 'a/two',
      name: 'two',
      context_length: 1000,
      pricing: { input: '0.0000005', output: '0.000001' },
      endpoints: [endpoint('cheap')],
    },
    {
      id: 'a/plain',
      name: 'text only',
      context_length: 1000,
      pricing: { input: '0.0000001', output: '0.0000001' },
      capabilities: { tools: false, images: false },
      endpoints: [endpoint('plain')],
    },
  ],
})
const req = (body: object) => ResponsesRequest.parse({ input: 'x', ...body })
const providers = (r: { candidates: { endpoint: { provider: string } }[] }) =>
  r.candidates.map((c) => c.endpoint.provider)

describe('Router', () => {
  it('refuses unknown models by name and spreads equal endpoints when there is no session', () => {
    const router = new Router(catalogue)
    expect(() => router.route(req({ model: 'a/one', models: ['nobody/x'] }), undefined)).toThrow(/nobody\/x/)
    const firsts = new Set(
      Array.from({ length: 4 }, () => providers(router.route(req({ model: 'a/one' }), undefined))[0]),
    )
    expect(firsts).toEqual(new Set(['red', 'green']))
  })

  it('keeps a session on one endpoint (sticky), and different sessions spread', () => {
    const router = new Router(catalogue)
    const of = (s: string) => providers(router.route(req({ model: 'a/one' }), s))[0]
    for (const s of ['alpha', 'beta', 'gamma']) expect(new Set(Array.from({ length: 5 }, () => of(s))).size).toBe(1)
    expect(new Set(Array.from({ length: 40 }, (_, i) => of(`s${i}`)))).toEqual(new Set(['red', 'green']))
  })

  it('applies only, ignore, order and allow_fallbacks', () => {
    const router = new Router(catalogue)
    expect(providers(router.route(req({ model: 'a/one', provider: { only: ['green'] } }), undefined))).toEqual([
      'green',
    ])
    expect(providers(router.route(req({ model: 'a/one', provider: { ignore: ['red'] } }), undefined))).toEqual([
      'green',
    ])
    expect(providers(router.route(req({ model: 'a/one', provider: { order: ['green', 'red'] } }), undefined))).toEqual([
      'green',
      'red',
    ])
    expect(
      providers(router.route(req({ model: 'a/one', provider: { order: ['red'], allow_fallbacks: false } }), undefined)),
    ).toEqual(['red'])
    expect(() => router.route(req({ model: 'a/one', provider: { only: ['nobody'] } }), undefined)).toThrow(
      /no endpoint/,
    )
    expect(() => router.route(req({ model: 'a/one', provider: { order: 'red' } }), undefined)).toThrow(
      /\/provider order/,
    )
  })

  it('sorts by price within a model, or across models with partition none; max_price filters per million tokens', () => {
    const router = new Router(catalogue)
    expect(
      providers(router.route(req({ model: 'a/one', models: ['a/two'], provider: { sort: 'price' } }), undefined)),
    ).toEqual(['green', 'red', 'cheap'])
    expect(
      providers(
        router.route(
          req({ model: 'a/one', models: ['a/two'], provider: { sort: { by: 'price', partition: 'none' } } }),
          undefined,
        ),
      ),
    ).toEqual(['cheap', 'green', 'red'])
    // The deprecated alias: route "sort" is partition "none".
    expect(
      providers(
        router.route(req({ model: 'a/one', models: ['a/two'], route: 'sort', provider: { sort: 'price' } }), undefined),
      )[0],
    ).toBe('cheap')
    expect(
      providers(router.route(req({ model: 'a/one', provider: { max_price: { prompt: 1.5 } } }), undefined)),
    ).toEqual(['green'])
  })

  it('sorts by measured latency, unmeasured endpoints first so they get measured', () => {
    const router = new Router(catalogue)
    const [red, green] = catalogue.models[0]!.endpoints
    router.stats.record(red!, 50)
    expect(providers(router.route(req({ model: 'a/one', provider: { sort: 'latency' } }), undefined))).toEqual([
      'green',
      'red',
    ])
    router.stats.record(green!, 200)
    expect(providers(router.route(req({ model: 'a/one', provider: { sort: 'latency' } }), undefined))).toEqual([
      'red',
      'green',
    ])
  })

  it('serves tiers: fast is priority, ultrafast prefers ultrafast then priority then default', () => {
    const router = new Router(catalogue)
    expect(providers(router.route(req({ model: 'a/one', service_tier: 'fast' }), 's'))[0]).toBe('blue')
    const ultra = providers(router.route(req({ model: 'a/one', service_tier: 'ultrafast' }), 's'))
    expect(ultra.slice(0, 2)).toEqual(['gold', 'blue'])
    expect(ultra).toHaveLength(4)
    expect(providers(router.route(req({ model: 'a/one' }), 's')).sort()).toEqual(['green', 'red'])
  })

  it('routes only to models that can take what the request carries (tools, image input)', () => {
    const router = new Router(catalogue)
    const tools = [{ type: 'function', name: 'f', parameters: {} }]
    expect(providers(router.route(req({ model: 'a/plain', models: ['a/two'], tools }), undefined))).toEqual(['cheap'])
    expect(() => router.route(req({ model: 'a/plain', tools }), undefined)).toThrow(/a\/plain cannot take tools/)
    const image = [{ role: 'user', content: [{ type: 'input_image', image_url: 'https://x.test/a.png' }] }]
    expect(() => router.route(req({ model: 'a/two', input: image }), undefined)).toThrow(/cannot take image input/)
    expect(providers(router.route(req({ model: 'a/plain' }), undefined))).toEqual(['plain'])
  })

  it('sends an image in a tool result only to an endpoint whose protocol carries one (Chat Completions tool messages carry text)', () => {
    const model = (id: string, endpoints: object[]) => ({
      id,
      name: id,
      context_length: 1000,
      pricing: { input: '0.000001', output: '0.000001' },
      capabilities: { images: true },
      endpoints,
    })
    const mixed = Catalogue.parse({
      models: [
        model('a/mixed', [endpoint('chatty'), endpoint('responder', { protocol: 'openai-responses' })]),
        model('a/chat-only', [endpoint('chatty')]),
      ],
    })
    const router = new Router(mixed)
    const input = [
      { type: 'function_call', call_id: 'c', name: 'view', arguments: '{}' },
      {
        type: 'function_call_output',
        call_id: 'c',
        output: [{ type: 'input_image', image_url: 'https://x.test/a.png' }],
      },
    ]
    for (let i = 0; i < 4; i++)
      expect(providers(router.route(req({ model: 'a/mixed', input }), undefined))).toEqual(['responder'])
    // Without the image, both endpoints serve it, in turn.
    const text = [input[0], { type: 'function_call_output', call_id: 'c', output: 'seen' }]
    expect(providers(router.route(req({ model: 'a/mixed', input: text }), undefined))).toHaveLength(2)
    // Both before and after its one route is cached.
    router.route(req({ model: 'a/chat-only' }), undefined)
    expect(() => router.route(req({ model: 'a/chat-only', input }), undefined)).toThrow(
      /a\/chat-only: no endpoint takes images in tool results/,
    )
    // An image in a tool's output is image input: a model that cannot take images is no candidate.
    expect(() => new Router(catalogue).route(req({ model: 'a/plain', input }), undefined)).toThrow(
      /a\/plain cannot take image input/,
    )
  })
})
