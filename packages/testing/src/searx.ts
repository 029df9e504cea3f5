import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from './node-process.js'
import { waitFor } from './wait.js'

// A real searx server (Debian's `searx` package: SearXNG's parent, with the same JSON search API),
// run as its own process for a test, its one engine pointed at a search engine the test stands in
// for (no search engine is reachable from these machines). searx queries it as it would any JSON
// search API (its `json_engine`), and answers Roster's queries in its own format.

export interface SearxEngine {
  /** The engine's search URL, `{query}` where the query goes (http allowed: it is the test's own). */
  searchUrl: string
  /** Where in its JSON answer the results are, and in each result its URL, title and text. */
  resultsQuery: string
  urlQuery: string
  titleQuery: string
  contentQuery: string
}

export interface Searx {
  url: string
  stop(): Promise<void>
}

/** Debian's interpreter: the package's modules are under its dist-packages, not another Python's. */
export const SEARX_PYTHON = '/usr/bin/python3'

const settings = (port: number, engine: SearxEngine) => `general:
  debug: false
  instance_name: "roster-test"
search:
  safe_search: 0
  autocomplete: ""
  default_lang: ""
server:
  port: ${port}
  bind_address: "127.0.0.1"
  secret_key: "roster-test-${port}"
  base_url: false
  image_proxy: false
  http_protocol_version: "1.0"
  method: "GET"
ui:
  static_path: "/usr/share/python3-searx/static"
  templates_path: "/usr/share/python3-searx/templates"
  default_theme: oscar
  default_locale: ""
outgoing:
  request_timeout: 3.0
  useragent_suffix: ""
  pool_connections: 10
  pool_maxsize: 10
engines:
  - name: test engine
    engine: json_engine
    shortcut: te
    categories: general
    search_url: ${JSON.stringify(engine.searchUrl)}
    results_query: ${JSON.stringify(engine.resultsQuery)}
    url_query: ${JSON.stringify(engine.urlQuery)}
    title_query: ${JSON.stringify(engine.titleQuery)}
    content_query: ${JSON.stringify(engine.contentQuery)}
    enable_http: true
locales:
  en: English
doi_resolvers:
  oadoi.org: "https://oadoi.org/"
default_doi_resolver: "oadoi.org"
`

export async function startSearx(engine: SearxEngine): Promise<Searx> {
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), 'roster-searx-'))
  const file = join(dir, 'settings.yml')
  writeFileSync(file, settings(port, engine))
  let output = ''
  const child: ChildProcess = spawn(SEARX_PYTHON, ['-m', 'searx.webapp'], {
    env: { PATH: process.env.PATH, SEARX_SETTINGS_PATH: file, SEARX_DEBUG: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  child.stdout!.on('data', (d) => (output += d))
  child.stderr!.on('data', (d) => (output += d))
  const url = `http://127.0.0.1:${port}`
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r))
      child.kill('SIGTERM')
      await exited
    }
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`searx exited (${child.exitCode}): ${output.slice(-800)}`)
        return fetch(`${url}/config`).then(
          (r) => r.ok,
          () => false,
        )
      },
      { timeoutMs: 30_000, intervalMs: 100, what: 'searx to answer' },
    )
  } catch (err) {
    await stop()
    throw err
  }
  return { url, stop }
}
