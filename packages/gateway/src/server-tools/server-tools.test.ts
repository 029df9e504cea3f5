import { createServer, type Server } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OutputItems$inboundSchema } from '@openrouter/sdk/models'
import type { Catalogue } from '../catalogue.js'
import { isForbiddenAddress, serverToolKinds, type ServerTool } from './index.js'

let server: Server
let origin: string
beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === '/moved') return res.writeHead(302, { location: '/page' }).end()
    if (req.url === '/big') return res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(10_000))
    if (req.url === '/titled')
      return res.writeHead(200, { 'content-type': 'text/html' }).end('<title>A\n  titled page</title><p>body</p>')
    res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>hello from a page</h1>')
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`
})
afterAll(() => new Promise<void>((r) => server.close(() => r())))

const signal = new AbortController().signal
const ctx = { signal }
const catalogue: Catalogue = { models: [] }
/** The tool one entry of `type` offers, with its parameters (read as a request's are). */
function offered(type: string, parameters: unknown = {}, allowPrivateNetworks = false): ServerTool {
  const kind = serverToolKinds({
    webFetch: { allowPrivateNetworks, maxBytes: 2048, timeoutMs: 2_000 },
    search: { timeoutMs: 2_000 },
  }).get(type as `openrouter:${string}`)!
  return kind.offer(kind.parameters.parse(parameters), { catalogue })
}

describe('the addresses web_fetch connects to', () => {
  it('allows public IPv4 and IPv6 addresses', () => {
    for (const a of [
      '8.8.8.8',
      '1.1.1.1',
      '93.184.216.34',
      '11.22.33.2',
      '100.63.255.255',
      '100.128.0.0',
      '172.32.0.1',
      '198.20.0.1',
      '223.255.255.255',
      '2606:4700:4700::1111',
      '2001:4860:4860::8888',
      '2a00:1450:4001::1',
    ]) {
      expect(isForbiddenAddress(a), a).toBe(false)
    }
  })

  it('refuses every private, loopback, link-local, shared, mapped and special-purpose range', () => {
    const refused = [
      '0.0.0.0',
      '0.1.2.3',
      '10.0.0.1',
      '10.255.255.255',
      '100.64.0.1',
      '100.127.255.255',
      '127.0.0.1',
      '127.255.255.254',
      '169.254.169.254',
      '172.16.0.1',
      '172.31.255.255',
      '192.0.0.8',
      '192.0.2.1',
      '192.88.99.1',
      '192.168.1.1',
      '198.18.0.1',
      '198.19.255.255',
      '198.51.100.7',
      '203.0.113.9',
      '224.0.0.1',
      '239.255.255.250',
      '240.0.0.1',
      '255.255.255.255',
      '::',
      '::1',
      '::127.0.0.1',
      '::ffff:127.0.0.1',
      '::ffff:8.8.8.8',
      '::ffff:169.254.169.254',
      '64:ff9b::a9fe:a9fe',
      '64:ff9b:1::1',
      '100::1',
      '2001::1',
      '2001:db8::1',
      '2002:7f00:1::1',
      'fc00::1',
      'fd12:3456::1',
      'fe80::1',
      'fec0::1',
      'ff02::1',
      'localhost',
      'not an address',
    ]
    for (const a of refused) expect(isForbiddenAddress(a), a).toBe(true)
  })
})

describe('server tools', () => {
  it('datetime answers now in the asked time zone, and names an unknown zone', async () => {
    const datetime = offered('openrouter:datetime')
    const out = (await datetime.run({ timezone: 'Europe/Paris' }, ctx)) as any
    expect(Math.abs(Date.parse(out.datetime) - Date.now())).toBeLessThan(5_000)
    expect(out.timezone).toBe('Europe/Paris')
    expect(await datetime.run({ timezone: 'Mars/Olympus' }, ctx)).toMatchObject({
      timezone: 'UTC',
      note: 'unknown time zone Mars/Olympus; UTC shown',
    })
  })

  it('web_fetch refuses loopback, private and link-local addresses, by literal or by name, and other schemes', async () => {
    const fetch = offered('openrouter:web_fetch')
    for (const url of [
      `${origin}/page`,
      'http://localhost:1/',
      'http://[::1]:1/',
      'http://10.1.2.3/',
      'http://169.254.169.254/latest/meta-data',
      'http://192.168.0.1/',
    ]) {
      const out = (await fetch.run({ url }, ctx)) as any
      expect(out.error, url).toMatch(/refused/)
    }
    expect(await fetch.run({ url: 'file:///etc/passwd' }, ctx)).toEqual({
      error: 'only http and https URLs are fetched, not file:',
    })
    expect(await fetch.run({ url: 'not a url' }, ctx)).toEqual({ error: 'url is not a valid URL' })
  })

  it('web_fetch (private networks allowed) follows redirects and truncates at the size limit', async () => {
    const fetch = offered('openrouter:web_fetch', {}, true)
    expect(await fetch.run({ url: `${origin}/moved` }, ctx)).toMatchObject({
      status: 200,
      content: '<h1>hello from a page</h1>',
      truncated: false,
      url: `${origin}/page`,
    })
    const big = (await fetch.run({ url: `${origin}/big` }, ctx)) as any
    expect(big.content).toHaveLength(2048)
    expect(big.truncated).toBe(true)
  })

  it("datetime takes the entry's time zone when the model names none, and refuses an entry's unknown zone", async () => {
    const datetime = offered('openrouter:datetime', { timezone: 'Asia/Tokyo' })
    const out = (await datetime.run({}, ctx)) as any
    expect(out.timezone).toBe('Asia/Tokyo')
    const item = OutputItems$inboundSchema.parse({
      type: 'openrouter:datetime',
      id: 'st_1',
      status: 'completed',
      ...datetime.itemFields!({}, out),
    }) as any
    expect(item).toMatchObject({ datetime: out.datetime, timezone: 'Asia/Tokyo' })
    expect(() => offered('openrouter:datetime', { timezone: 'Mars/Olympus' })).toThrow(/is not an IANA time zone/)
  })

  it("web_fetch keeps to the entry's domains, caps content by max_content_tokens, and shows its page as the official client reads it", async () => {
    const only = offered('openrouter:web_fetch', { allowed_domains: ['example.org'] }, true)
    expect(await only.run({ url: `${origin}/page` }, ctx)).toEqual({
      error: 'refused: 127.0.0.1 is not among the allowed domains (example.org)',
    })
    const blocked = offered('openrouter:web_fetch', { blocked_domains: ['127.0.0.1'] }, true)
    expect(((await blocked.run({ url: `${origin}/page` }, ctx)) as any).error).toBe(
      'refused: 127.0.0.1 is a blocked domain',
    )
    const capped = offered('openrouter:web_fetch', { max_content_tokens: 100 }, true)
    expect(((await capped.run({ url: `${origin}/big` }, ctx)) as any).content).toHaveLength(400)
    const titled = offered('openrouter:web_fetch', {}, true)
    const out = await titled.run({ url: `${origin}/titled` }, ctx)
    const item = OutputItems$inboundSchema.parse({
      type: 'openrouter:web_fetch',
      id: 'st_1',
      status: 'completed',
      ...titled.itemFields!({ url: `${origin}/titled` }, out),
    }) as any
    expect(item).toMatchObject({ url: `${origin}/titled`, title: 'A titled page', httpStatus: 200 })
    expect(item.content).toContain('<p>body</p>')
    const refused = offered('openrouter:web_fetch').itemFields!({ url: 'http://10.0.0.1/' }, { error: 'refused: x' })
    expect(
      OutputItems$inboundSchema.parse({ type: 'openrouter:web_fetch', status: 'completed', ...refused }),
    ).toMatchObject({
      url: 'http://10.0.0.1/',
      error: 'refused: x',
    })
    for (const bad of [
      { allowed_domains: ['a.org'], blocked_domains: ['b.org'] },
      { max_uses: 0 },
      { max_content_tokens: -1 },
    ])
      expect(() => offered('openrouter:web_fetch', bad)).toThrow()
  })
})
