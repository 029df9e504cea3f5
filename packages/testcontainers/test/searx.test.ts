import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ResponsesEngine, simulatorCatalogue } from '@roster/gateway'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import { containerTestsProblem, repoRoot, waitFor } from '@roster/testing'

// The search engine of docker-compose.yml in its container: the image built from deploy/searx
// (Debian's searx on ROSTER_DEBIAN_IMAGE, the official debian image by default), started with its
// one engine pointed at a stand-in on a Docker network of the test's own (no search engine is
// reachable from these machines), and asked by Roster's gateway engine through the port it publishes
// on 127.0.0.1: `openrouter:web_search` finds what the stand-in holds, through searx.
const DEBIAN = process.env.ROSTER_DEBIAN_IMAGE ?? 'debian:bookworm-slim'
const NODE = process.env.ROSTER_NODE_IMAGE ?? 'node:20-bookworm-slim'
const IMAGE = process.env.ROSTER_SEARX_IMAGE ?? 'roster-searx:local'
const problem = await containerTestsProblem([DEBIAN, NODE])
if (problem) console.warn(`the search engine's container test cannot run here: ${problem}`)

const docker = (...args: string[]) => {
  const r = spawnSync('docker', args, { encoding: 'utf8', timeout: 600_000, maxBuffer: 64 * 1024 * 1024 })
  return { ok: r.status === 0, out: `${r.stdout ?? ''}${r.stderr ?? ''}`.trim() }
}

// The stand-in engine: a JSON search API answering every query with two pages that name it.
const ENGINE = `require('http').createServer((req, res) => {
  const q = new URL(req.url, 'http://x').searchParams.get('q') || ''
  console.log('query:' + q)
  res.setHeader('content-type', 'application/json')
  res.end(JSON.stringify({ items: [
    { link: 'https://docs.example.org/' + encodeURIComponent(q), name: 'Docs on ' + q, snippet: 'All about ' + q + '.' },
    { link: 'https://blog.example.org/post', name: 'A post', snippet: 'Something else.' },
  ] }))
}).listen(8080)`

const SETTINGS = `general: { debug: false, instance_name: "roster-test" }
search: { safe_search: 0, autocomplete: "", default_lang: "" }
server: { port: 8888, bind_address: "0.0.0.0", secret_key: "${randomBytes(16).toString('hex')}", base_url: false, image_proxy: false, http_protocol_version: "1.0", method: "GET" }
ui: { static_path: "/usr/share/python3-searx/static", templates_path: "/usr/share/python3-searx/templates", default_theme: oscar, default_locale: "" }
outgoing: { request_timeout: 3.0, useragent_suffix: "", pool_connections: 10, pool_maxsize: 10 }
engines:
  - name: stand-in
    engine: json_engine
    shortcut: si
    categories: general
    search_url: "http://engine:8080/search?q={query}"
    results_query: items
    url_query: link
    title_query: name
    content_query: snippet
    enable_http: true
locales: { en: English }
doi_resolvers: { oadoi.org: "https://oadoi.org/" }
default_doi_resolver: "oadoi.org"
`

describe.skipIf(problem)("the search engine's image (deploy/searx)", () => {
  const id = randomBytes(4).toString('hex')
  const network = `roster-searx-${id}`
  const names = { engine: `roster-searx-engine-${id}`, searx: `roster-searx-${id}` }
  const dir = mkdtempSync(join(tmpdir(), 'roster-searx-settings-'))
  let searxUrl: string
  let sim: Simulator

  beforeAll(async () => {
    const built = docker('build', '--build-arg', `BASE_IMAGE=${DEBIAN}`, '-t', IMAGE, join(repoRoot, 'deploy/searx'))
    expect(built.ok, built.out.slice(-3000)).toBe(true)
    expect(docker('network', 'create', network).ok).toBe(true)
    const engine = docker(
      'run',
      '-d',
      '--name',
      names.engine,
      '--network',
      network,
      '--network-alias',
      'engine',
      NODE,
      'node',
      '-e',
      ENGINE,
    )
    expect(engine.ok, engine.out).toBe(true)
    const settings = join(dir, 'settings.yml')
    writeFileSync(settings, SETTINGS)
    chmodSync(dir, 0o755)
    chmodSync(settings, 0o644)
    const searx = docker(
      'run',
      '-d',
      '--name',
      names.searx,
      '--network',
      network,
      '-p',
      '127.0.0.1::8888',
      '-v',
      `${settings}:/etc/searx/settings.yml:ro`,
      IMAGE,
    )
    expect(searx.ok, searx.out).toBe(true)
    const port = docker('port', names.searx, '8888/tcp').out.split('\n')[0]!.split(':').pop()
    searxUrl = `http://127.0.0.1:${port}`
    await waitFor(async () => (await fetch(`${searxUrl}/config`).catch(() => undefined))?.ok === true, {
      timeoutMs: 60_000,
      intervalMs: 250,
      what: `searx in its container to answer (${docker('logs', names.searx).out.slice(-500)})`,
    })
    sim = await startSimulator({ replyTokens: 4 })
  }, 900_000)

  afterAll(async () => {
    docker('rm', '-f', names.searx, names.engine)
    docker('network', 'rm', network)
    rmSync(dir, { recursive: true, force: true })
    await sim?.close()
  })

  it('runs as a user of its own, and writes its settings with a fresh secret when none is mounted', () => {
    const own = docker('run', '--rm', '--entrypoint', 'sh', IMAGE, '-c', 'id -u; command -v python3')
    expect(own.ok, own.out).toBe(true)
    expect(own.out.split('\n')[0]).toBe('10002')
    const made = docker(
      'run',
      '--rm',
      '--entrypoint',
      'sh',
      IMAGE,
      '-c',
      'SEARX_SETTINGS_PATH=/tmp/s.yml; export SEARX_SETTINGS_PATH; timeout 5 sh /usr/local/bin/searx-entrypoint >/dev/null 2>&1; grep secret_key /tmp/s.yml',
    )
    expect(made.out).toMatch(/secret_key: "[0-9a-f]{64}"/)
  })

  it("answers Roster's web search through its engine: the sources on the item are the engine's", async () => {
    const engine = new ResponsesEngine({
      catalogue: simulatorCatalogue(sim.url),
      env: {},
      userHashKey: randomBytes(32),
      search: { searxngUrl: searxUrl, timeoutMs: 10_000 },
    })
    try {
      const res = await engine.respond({
        model: 'roster-sim/chat',
        input: '[sim] call web_search {"query":"roster gateway"}\n[sim] say done',
        tools: [{ type: 'openrouter:web_search' }],
        stream: false,
      } as never)
      const item = res.output[0] as any
      expect(item.type).toBe('openrouter:web_search')
      expect(item.action.query).toBe('roster gateway')
      expect(item.action.sources.map((s: any) => s.url)).toEqual([
        'https://docs.example.org/roster%20gateway',
        'https://blog.example.org/post',
      ])
      // searx asked its engine, in the container next to it.
      expect(docker('logs', names.engine).out).toContain('query:roster gateway')
    } finally {
      await engine.close()
    }
  })
})
