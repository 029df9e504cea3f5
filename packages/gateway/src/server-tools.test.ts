import { createServer, type Server } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { serverTools } from './server-tools.js'

let server: Server
let origin: string
beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === '/moved') return res.writeHead(302, { location: '/page' }).end()
    if (req.url === '/big') return res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(10_000))
    res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>hello from a page</h1>')
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`
})
afterAll(() => new Promise<void>((r) => server.close(() => r())))

const signal = new AbortController().signal
const tools = (allowPrivateNetworks: boolean) => serverTools({ allowPrivateNetworks, maxBytes: 2048, timeoutMs: 2_000 })

describe('server tools', () => {
  it('datetime answers now in the asked time zone, and names an unknown zone', async () => {
    const datetime = tools(false).get('openrouter:datetime')!
    const out = (await datetime.run({ timezone: 'Europe/Paris' }, signal)) as any
    expect(Math.abs(Date.parse(out.datetime) - Date.now())).toBeLessThan(5_000)
    expect(out.timezone).toBe('Europe/Paris')
    expect(await datetime.run({ timezone: 'Mars/Olympus' }, signal)).toMatchObject({ timezone: 'UTC', note: 'unknown time zone Mars/Olympus; UTC shown' })
  })

  it('web_fetch refuses loopback, private and link-local addresses, by literal or by name, and other schemes', async () => {
    const fetch = tools(false).get('openrouter:web_fetch')!
    for (const url of [`${origin}/page`, 'http://localhost:1/', 'http://[::1]:1/', 'http://10.1.2.3/', 'http://169.254.169.254/latest/meta-data', 'http://192.168.0.1/']) {
      const out = (await fetch.run({ url }, signal)) as any
      expect(out.error, url).toMatch(/refused/)
    }
    expect(await fetch.run({ url: 'file:///etc/passwd' }, signal)).toEqual({ error: 'only http and https URLs are fetched, not file:' })
    expect(await fetch.run({ url: 'not a url' }, signal)).toEqual({ error: 'url is not a valid URL' })
  })

  it('web_fetch (private networks allowed) follows redirects and truncates at the size limit', async () => {
    const fetch = tools(true).get('openrouter:web_fetch')!
    expect(await fetch.run({ url: `${origin}/moved` }, signal)).toMatchObject({ status: 200, content: '<h1>hello from a page</h1>', truncated: false, url: `${origin}/page` })
    const big = (await fetch.run({ url: `${origin}/big` }, signal)) as any
    expect(big.content).toHaveLength(2048)
    expect(big.truncated).toBe(true)
  })
})
