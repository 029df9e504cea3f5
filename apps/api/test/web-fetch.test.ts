import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { createServer, type Server } from 'node:http'
import { randomInt } from 'node:crypto'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import type { Catalogue } from '@roster/gateway'
import { describeNeeding, useTestTenant } from '@roster/testing'
import { buildTestApp, simEndpoint, simModel } from './helpers.js'
import { responseErrors } from './open-responses.js'

// The web_fetch server tool against a real host at a public address: a web server in a network
// namespace of this test's own, joined to this machine by a veth pair (the address is routed to
// the pair only, so nothing leaves the machine). The model (the upstream simulator) asks for a
// page, and for pages that redirect to the loopback and to the cloud metadata address.
const env = useTestTenant()
const id = `${process.pid % 100_000}`
const ns = `roster-wf-${id}`
const [hostIf, nsIf] = [`rwf${id}h`, `rwf${id}n`]
// A /30 in 11.0.0.0/8: public space, so web_fetch's guard does not refuse it, and only this pair routes it.
const [b, c] = [randomInt(1, 250), randomInt(0, 63) * 4]
const [hostIp, nsIp] = [`11.${b}.${c}.1`, `11.${b}.${c}.2`]

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: 'pipe' })
let pageServer: ChildProcess
let loopback: Server
let loopbackHits = 0
const sims: Simulator[] = []
let app: Awaited<ReturnType<typeof buildTestApp>>

beforeAll(async () => {
  ip('netns', 'add', ns)
  ip('link', 'add', hostIf, 'type', 'veth', 'peer', 'name', nsIf)
  ip('link', 'set', nsIf, 'netns', ns)
  ip('addr', 'add', `${hostIp}/30`, 'dev', hostIf)
  ip('link', 'set', hostIf, 'up')
  ip('netns', 'exec', ns, 'ip', 'addr', 'add', `${nsIp}/30`, 'dev', nsIf)
  ip('netns', 'exec', ns, 'ip', 'link', 'set', nsIf, 'up')
  ip('netns', 'exec', ns, 'ip', 'link', 'set', 'lo', 'up')

  // A server on this machine's loopback that a redirect must never reach.
  loopback = createServer((_req, res) => {
    loopbackHits++
    res.end('secret')
  })
  await new Promise<void>((r) => loopback.listen(0, '127.0.0.1', r))
  const loopbackPort = (loopback.address() as { port: number }).port

  const routes = {
    '/page': [200, { 'content-type': 'text/html' }, '<h1>a page from the test host</h1>'],
    '/to-loopback': [302, { location: `http://127.0.0.1:${loopbackPort}/secret` }, ''],
    '/to-localhost': [302, { location: `http://localhost:${loopbackPort}/secret` }, ''],
    '/to-metadata': [302, { location: 'http://169.254.169.254/latest/meta-data/' }, ''],
    '/hop': [301, { location: '/page' }, ''],
  }
  const program = `const routes = ${JSON.stringify(routes)};
    require('node:http').createServer((req, res) => { const [s, h, b] = routes[req.url] ?? [404, {}, 'no']; res.writeHead(s, h).end(b) })
      .listen(8080, ${JSON.stringify(nsIp)}, () => console.log('listening'))`
  pageServer = spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', program], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  await new Promise<void>((resolve, reject) => {
    pageServer.stdout!.once('data', () => resolve())
    pageServer.once('exit', (code) => reject(new Error(`the test host's server exited (${code})`)))
  })

  const models = []
  for (const path of Object.keys(routes)) {
    const sim = await startSimulator({ sampleUrl: `http://${nsIp}:8080${path}` })
    sims.push(sim)
    models.push(simModel(`test/fetch${path.replace('/', '-')}`, [simEndpoint(sim.url)]))
  }
  app = await buildTestApp(env.t.db, {}, { models } satisfies Catalogue)
}, 30_000)

afterAll(async () => {
  await app?.closeAll()
  await Promise.all(sims.map((s) => s.close()))
  pageServer?.kill()
  loopback?.close()
  try {
    ip('netns', 'del', ns)
  } catch {}
  try {
    ip('link', 'del', hostIf)
  } catch {}
})

/** Asks the model behind `model` a question; it calls web_fetch once, and Roster runs the fetch. */
async function fetchThrough(model: string) {
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1/responses',
    headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' },
    payload: { model, input: 'what does the page say?', tools: [{ type: 'openrouter:web_fetch' }] },
  })
  expect(res.statusCode, res.body).toBe(200)
  const body = res.json()
  expect(responseErrors(body)).toEqual([])
  const item = body.output.find((o: any) => o.type === 'openrouter:web_fetch')
  expect(item.status).toBe('completed')
  return JSON.parse(item.output)
}

// A network namespace of its own: iproute2, and root to make it.
await describeNeeding(['iproute2', 'root'], 'web_fetch against a host at a public address', () => {
  it('fetches a page from a host at a public IPv4 address, following a redirect', async () => {
    expect(await fetchThrough('test/fetch-page')).toMatchObject({
      status: 200,
      content: '<h1>a page from the test host</h1>',
      url: `http://${nsIp}:8080/page`,
    })
    expect(await fetchThrough('test/fetch-hop')).toMatchObject({ status: 200, url: `http://${nsIp}:8080/page` })
  })

  it('refuses a redirect to the loopback, by address or by name, and to the metadata address', async () => {
    expect((await fetchThrough('test/fetch-to-loopback')).error).toMatch(
      /^refused: 127\.0\.0\.1 is a private or loopback address/,
    )
    expect((await fetchThrough('test/fetch-to-localhost')).error).toMatch(
      /^refused: localhost resolves to (127\.0\.0\.1|::1)/,
    )
    expect((await fetchThrough('test/fetch-to-metadata')).error).toMatch(/^refused: 169\.254\.169\.254/)
    expect(loopbackHits).toBe(0)
  })
})
