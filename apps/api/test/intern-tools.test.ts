import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { join } from 'node:path'
import { createServer, type Server } from 'node:http'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import { simulatorCatalogue } from '@roster/gateway'
import {
  catalogueFile,
  lacking,
  makeTenant,
  NodeProcess,
  startStack,
  waitFor,
  type Stack,
  useTestTenant,
} from '@roster/testing'
import { sseEvents } from './helpers.js'
import { runAdminCaptured } from '@roster/cli'

// An intern's tools from remote MCP servers (issue 61), over the whole system as processes (API,
// worker, runtime host) against real MCP servers (the official SDK's, run as processes of their
// own): one with tools (one of which says what credential it was sent), one that hangs, one that
// lies about its schemas and one that answers 50 MB. The intern calls them through the egress with
// its vault's secret put in for the server's host, never seen by the model or kept in a transcript;
// in manual mode each call asks first; a broken server fails its call, saying why, and the turn goes on.
// And its skills: folders of its workspace in the Agent Skills layout, offered by name and
// description, read in full when used, installed through the API or written by the intern itself.
const env = useTestTenant()
let sim: Simulator
let stack: Stack
let internId: string
const servers: Record<string, { process: NodeProcess; url: string }> = {}
const SECRET = `mcp-token-${Date.now()}`
// A SearXNG stand-in (its JSON search API) for the gateway's openrouter:web_search.
let searx: Server
const searches: string[] = []

async function startMcp(mode: string) {
  const process = new NodeProcess(`mcp-${mode}`, join(import.meta.dirname, 'fixtures', 'mcp-server.mjs'), {
    MCP_MODE: mode,
  }).start()
  await process.waitForOutput(/listening \d+/)
  const port = /listening (\d+)/.exec(process.output)![1]
  servers[mode] = { process, url: `http://mcp.test:${port}/mcp` }
}

beforeAll(async () => {
  searx = createServer((req, res) => {
    const url = new URL(req.url!, 'http://x')
    if (url.pathname !== '/search' || url.searchParams.get('format') !== 'json') return res.writeHead(403).end()
    searches.push(url.searchParams.get('q') ?? '')
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        results: [
          { url: 'https://docs.example.org/roster', title: 'Roster interns guide', content: 'How interns work.' },
        ],
      }),
    )
  })
  await new Promise<void>((r) => searx.listen(0, '127.0.0.1', r))
  sim = await startSimulator({ replyTokens: 3 })
  await Promise.all(['tools', 'hang', 'liar', 'huge', 'sessions'].map(startMcp))
  stack = await startStack({
    databaseUrl: env.t.url,
    env: {
      MODEL_CATALOGUE: catalogueFile(simulatorCatalogue(sim.url)),
      INTERN_DEFAULT_MODEL: 'roster-sim/chat',
      EGRESS_PRIVATE_NETWORKS: 'allow',
      EGRESS_HOSTS: 'mcp.test=127.0.0.1,other.test=127.0.0.1',
      SEARXNG_URL: `http://127.0.0.1:${(searx.address() as { port: number }).port}`,
    },
    // Long enough for two turns in a row to share an MCP session, short enough to see one end.
    runtimeEnv: { MCP_TOOL_TIMEOUT_MS: '4000', MCP_SESSION_IDLE_MS: '8000' },
  })
  internId = (await call('POST', '/interns', { name: 'toolsmith', provision: true })).body.id
  await waitFor(async () => (await call('GET', `/interns/${internId}`)).body.status === 'running', {
    timeoutMs: 30_000,
    what: 'the intern to run',
  })
  const stored = await call('PUT', '/vault/secrets/mcp_token', { value: SECRET, hosts: ['mcp.test'] })
  expect(stored.status).toBe(200)
}, 90_000)
afterAll(async () => {
  await stack?.stop()
  await sim?.close()
  await Promise.all(Object.values(servers).map((s) => s.process.kill()))
  await new Promise((r) => searx?.close(r))
})

async function call(method: string, path: string, body?: unknown, key = env.tenant.keys.user) {
  const res = await fetch(`${stack.apiUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : undefined }
}
/** A chat turn: its stream's events' data. */
async function chat(content: string, extra: Record<string, unknown> = {}) {
  const res = await fetch(`${stack.apiUrl}/interns/${internId}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' },
    body: JSON.stringify({ stream: true, messages: [{ role: 'user', content }], ...extra }),
  })
  expect(res.status).toBe(200)
  return sseEvents(await res.text()).events.map((e) => e.data)
}
const textOf = (chunks: any[]) => chunks.map((c) => c.choices?.[0]?.delta?.content ?? '').join('')
const add = (name: string, mode: string, headers: Record<string, string> = {}) =>
  call('POST', `/interns/${internId}/mcp-servers`, { name, url: servers[mode]!.url, headers })

describe("an intern's MCP servers", () => {
  it('are given, read, changed and removed through the API; a credential written in the clear is refused', async () => {
    for (const [bad, why] of [
      [{ name: 'x', url: 'ftp://mcp.test/mcp' }, /http/],
      [{ name: 'x', url: 'http://user:pw@mcp.test/mcp' }, /credentials/],
      [{ name: 'x', url: 'http://mcp.test/{{secret:mcp_token}}' }, /never in the URL/],
      [{ name: 'x', url: 'http://mcp.test/mcp', headers: { Authorization: 'Bearer sk-live-123' } }, /vault/],
      [{ name: 'x', url: 'http://mcp.test/mcp', headers: { 'X-Api-Key': 'abc' } }, /vault/],
      [{ name: 'Bad Name', url: 'http://mcp.test/mcp' }, /name/],
      [{ name: 'x', url: 'http://mcp.test/mcp', headers: { 'X-A': 'a\r\nHost: evil.test' } }, /header value/],
      [{ name: 'x', url: 'http://mcp.test/mcp', extra: true }, /extra|unrecognized/i],
    ] as const) {
      const res = await call('POST', `/interns/${internId}/mcp-servers`, bad)
      expect(res.status, JSON.stringify(bad)).toBe(400)
      expect(res.body.error.message).toMatch(why)
    }
    const made = await add('scratch', 'tools', { 'X-Team': 'platform' })
    expect(made.status).toBe(201)
    expect(made.body).toMatchObject({ name: 'scratch', enabled: true, tools: null, headers: { 'X-Team': 'platform' } })
    expect((await add('scratch', 'tools')).body.error.metadata.reason).toBe('name_taken')
    const other = await makeTenant(env.t.db)
    expect((await call('GET', `/interns/${internId}/mcp-servers`, undefined, other.keys.user)).status).toBe(404)
    const changed = await call('PATCH', `/interns/${internId}/mcp-servers/${made.body.id}`, { enabled: false })
    expect(changed.body.enabled).toBe(false)
    expect((await call('DELETE', `/interns/${internId}/mcp-servers/${made.body.id}`)).body.deleted).toBe(true)
    expect((await call('GET', `/interns/${internId}/mcp-servers/${made.body.id}`)).status).toBe(404)
  })

  it("offer their tools to the intern, which calls them with its vault's credential put in by the egress, never seen by the model", async () => {
    const made = await add('kit', 'tools', { Authorization: 'Bearer {{secret:mcp_token}}' })
    expect(made.status).toBe(201)
    const chunks = await chat(
      '[sim] call mcp__kit__add {"a":2,"b":40}\n[sim] call mcp__kit__whoami {}\n[sim] say Result: {{result}}',
      { session_id: 'mcp-1', approval_mode: 'self-drive' },
    )
    // The server was sent the secret's value; the model was told the placeholder.
    await waitFor(() => servers.tools!.process.output.includes(`AUTH Bearer ${SECRET}`), {
      what: 'the server to see it',
    })
    expect(textOf(chunks)).toBe('Result: you sent Bearer {{secret:mcp_token}}')
    const session = await call('GET', `/interns/${internId}/sessions/mcp-1`)
    const kept = JSON.stringify(session.body)
    expect(kept).toContain('"output":"42"')
    expect(kept).not.toContain(SECRET)
    // Its tools are listed with the server.
    const listed = await call('GET', `/interns/${internId}/mcp-servers/${made.body.id}`)
    expect(listed.body.tools.map((t: any) => t.model_name).sort()).toEqual(['mcp__kit__add', 'mcp__kit__whoami'])
    expect(listed.body.tools_error).toBeNull()
  })

  it('ask first in manual mode, as the shell does', async () => {
    const asked = await chat('[sim] call mcp__kit__add {"a":1,"b":1}\n[sim] say Sum: {{result}}', {
      session_id: 'mcp-2',
      approval_mode: 'manual',
    })
    const question = asked.find((c) => c.choices?.[0]?.delta?.tool_calls)!.choices[0].delta.tool_calls[0]
    expect(JSON.parse(question.function.arguments)).toMatchObject({
      kind: 'permission',
      operation: expect.stringMatching(/^MCP tool add of kit \(mcp\.test:\d+\): \{"a":1,"b":1\}$/),
    })
    const res = await fetch(`${stack.apiUrl}/interns/${internId}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        stream: true,
        session_id: 'mcp-2',
        messages: [{ role: 'tool', tool_call_id: question.id, content: 'reject_once' }],
      }),
    })
    expect(textOf(sseEvents(await res.text()).events.map((e) => e.data))).toMatch(/did not allow/)
  })

  it('that hang, lie about their schemas or answer 50 MB fail their calls, saying why; the turn and the other tools go on', async () => {
    for (const [name, mode] of [
      ['stuck', 'hang'],
      ['fibber', 'liar'],
      ['flood', 'huge'],
    ] as const)
      expect((await add(name, mode)).status).toBe(201)
    const started = Date.now()
    const chunks = await chat(
      [
        '[sim] call mcp__stuck__wait {}',
        '[sim] call mcp__fibber__wrong_output {}',
        '[sim] call mcp__flood__dump {}',
        '[sim] call mcp__fibber__fine {}',
        '[sim] say still here: {{result}}',
      ].join('\n'),
      { session_id: 'mcp-3', approval_mode: 'self-drive' },
    )
    expect(textOf(chunks)).toBe('still here: fine')
    const outputs = (await call('GET', `/interns/${internId}/sessions/mcp-3`)).body.items
      .filter((i: any) => i.item.type === 'function_call_output')
      .map((i: any) => i.item.output as string)
    expect(outputs[0]).toMatch(/stuck failed to run wait: it did not answer within 4 s/)
    expect(outputs[1]).toMatch(/fibber failed to run wrong_output: .*(schema|structured)/i)
    expect(outputs[2]).toMatch(/flood failed to run dump: .*larger than \d+ bytes/)
    expect(outputs[3]).toBe('fine')
    // The tool whose schema lied was never offered to the model (the liar's others were).
    const offered = JSON.stringify(Object.values(sim.stats.lastBody).map((b) => (b as { tools?: unknown }).tools))
    expect(offered).toContain('mcp__fibber__fine')
    expect(offered).not.toContain('bad_schema')
    // The hang cost its timeout, not the egress's 30 s.
    expect(Date.now() - started).toBeLessThan(25_000)
    const fibber = (await call('GET', `/interns/${internId}/mcp-servers`)).body.data.find(
      (s: any) => s.name === 'fibber',
    )
    expect(fibber.tools.map((t: any) => t.name).sort()).toEqual(['fine', 'wrong_output'])
    expect(fibber.tools_error).toMatch(/bad_schema left out: inputSchema\.type: .*object/)
  })

  it('never send the secret to a host it is not bound to: that server offers nothing, and says why', async () => {
    const port = new URL(servers.tools!.url).port
    // The same server under another name: the secret is bound to mcp.test only.
    const elsewhere = await call('POST', `/interns/${internId}/mcp-servers`, {
      name: 'sneaky',
      url: `http://other.test:${port}/mcp`,
      headers: { Authorization: 'Bearer {{secret:mcp_token}}' },
    })
    expect(elsewhere.status).toBe(201)
    const before = servers.tools!.process.output.split(SECRET).length
    await chat('[sim] say hello', { session_id: 'mcp-4', approval_mode: 'self-drive' })
    const seen = await call('GET', `/interns/${internId}/mcp-servers/${elsewhere.body.id}`)
    expect(seen.body.tools).toEqual([])
    expect(seen.body.tools_error).toMatch(/mcp_token is not a secret bound to other\.test/)
    expect(servers.tools!.process.output.split(SECRET).length).toBe(before)
  })

  it('are given, shown and removed with the admin CLI, with the same checks', async () => {
    const admin = async (...args: string[]) => {
      const out = await runAdminCaptured([...args, '--json'], { ...process.env, DATABASE_URL: env.t.url })
      return { code: out.code, body: out.stdout ? JSON.parse(out.stdout) : undefined, stderr: out.stderr }
    }
    const clear = await admin(
      'mcp',
      'add',
      '--intern',
      internId,
      '--name',
      'cli',
      '--url',
      servers.tools!.url,
      '--header',
      'Authorization: Bearer raw-token',
    )
    expect(clear.code).not.toBe(0)
    expect(clear.stderr).toMatch(/vault/)
    const made = await admin(
      ...['mcp', 'add', '--intern', internId, '--name', 'cli', '--url', servers.tools!.url],
      ...['--header', 'Authorization: Bearer {{secret:mcp_token}}', '--header', 'X-Team: ops'],
    )
    expect(made.body).toMatchObject({
      name: 'cli',
      headers: { Authorization: 'Bearer {{secret:mcp_token}}', 'X-Team': 'ops' },
    })
    expect((await call('GET', `/interns/${internId}/mcp-servers/${made.body.id}`)).body.name).toBe('cli')
    expect((await admin('mcp', 'list', '--intern', internId)).body.mcp_servers.map((m: any) => m.name)).toContain('cli')
    expect((await admin('mcp', 'update', made.body.id, '--intern', internId, '--disable')).body.enabled).toBe(false)
    expect((await admin('mcp', 'remove', made.body.id, '--intern', internId)).body.deleted).toBe(true)
  })
})

describe("an intern's MCP sessions", () => {
  it('are kept across turns, ended on the server (DELETE) once idle or the server is removed, and begun afresh', async () => {
    const made = await add('sess', 'sessions')
    expect(made.status).toBe(201)
    const out = () => servers.sessions!.process.output
    const opened = () => [...out().matchAll(/SESSION OPEN (\S+)/g)].map((m) => m[1]!)
    const ping = async (say: string) =>
      textOf(await chat(`[sim] call mcp__sess__ping {}\n[sim] say ${say} {{result}}`, { approval_mode: 'self-drive' }))
    expect(await ping('Got')).toBe('Got pong')
    expect(await ping('Again')).toBe('Again pong')
    // The next turn reused the session: none begun again.
    expect(opened()).toHaveLength(1)
    // Idle past MCP_SESSION_IDLE_MS: ended on the server; the next use begins another.
    await waitFor(() => out().includes(`SESSION CLOSED ${opened()[0]}`), {
      timeoutMs: 30_000,
      what: 'the idle MCP session to be ended',
    })
    expect(await ping('Back')).toBe('Back pong')
    expect(opened()).toHaveLength(2)
    // The server removed: its session is ended as the next turn starts.
    expect((await call('DELETE', `/interns/${internId}/mcp-servers/${made.body.id}`)).body.deleted).toBe(true)
    expect(textOf(await chat('[sim] say Nothing to ping.', { approval_mode: 'self-drive' }))).toBe('Nothing to ping.')
    await waitFor(() => out().includes(`SESSION CLOSED ${opened()[1]}`), {
      timeoutMs: 10_000,
      what: 'the removed server’s session to be ended',
    })
  })
})

// Skills are folders of the intern's workspace, read and written in its sandbox.
const noSandbox = await lacking(
  ['bubblewrap'],
  "the intern skills tests (its workspace's files are read in its sandbox)",
)

describe("an intern's skills", () => {
  const MARKER = 'STEP-MARKER-42'
  const skillMd = (name: string, description = 'Writes release notes from merged pull requests') =>
    `---\nname: ${name}\ndescription: ${description}\n---\n# Release notes\n\n1. ${MARKER}: read template.md and fill it in.\n`

  it.skipIf(noSandbox)(
    'are installed from the API a folder at once, checked as the Agent Skills layout says, listed and removed',
    async () => {
      for (const [files, why] of [
        [[{ path: 'template.md', content: 'x' }], /SKILL\.md/],
        [[{ path: 'SKILL.md', content: skillMd('other-name') }], /folder/],
        [[{ path: 'SKILL.md', content: 'no front matter' }], /front matter/],
        [[{ path: 'SKILL.md', content: '---\nname: release-notes\n---\n' }], /description/],
        [
          [
            { path: 'SKILL.md', content: skillMd('release-notes') },
            { path: '../escape.sh', content: 'x' },
          ],
          /inside/,
        ],
      ] as const) {
        const res = await call('PUT', `/interns/${internId}/skills/release-notes`, { files })
        expect(res.status, JSON.stringify(files).slice(0, 100)).toBe(400)
        expect(res.body.error.message).toMatch(why)
      }
      expect(
        (
          await call('PUT', `/interns/${internId}/skills/Bad_Name`, {
            files: [{ path: 'SKILL.md', content: skillMd('Bad_Name') }],
          })
        ).status,
      ).toBe(400)
      const made = await call('PUT', `/interns/${internId}/skills/release-notes`, {
        files: [
          { path: 'SKILL.md', content: skillMd('release-notes') },
          { path: 'template.md', content: '## Changes\n' },
          { path: 'scripts/collect.sh', content_base64: Buffer.from('#!/bin/sh\necho collected\n').toString('base64') },
        ],
      })
      expect(made.status).toBe(200)
      expect(made.body).toEqual({
        name: 'release-notes',
        description: 'Writes release notes from merged pull requests',
      })
      const listed = await call('GET', `/interns/${internId}/skills`)
      expect(listed.body.data).toContainEqual(made.body)
      expect(listed.body.problems).toEqual([])
    },
  )

  it.skipIf(noSandbox)(
    'are offered by name and description, read in full only when used; the intern makes its own',
    async () => {
      await chat('[sim] say hello', { session_id: 'skills-1', approval_mode: 'self-drive' })
      const offered = JSON.stringify(Object.values(sim.stats.lastBody).map((b) => (b as { tools?: unknown }).tools))
      expect(offered).toContain('release-notes: Writes release notes from merged pull requests')
      expect(offered).not.toContain(MARKER)
      const used = textOf(
        await chat('[sim] call use_skill {"name":"release-notes"}\n[sim] say {{result}}', {
          session_id: 'skills-1',
          approval_mode: 'self-drive',
        }),
      )
      expect(used).toContain(MARKER)
      expect(used).toContain('/workspace/skills/release-notes/scripts/collect.sh')
      expect(used).toContain('/workspace/skills/release-notes/template.md')
      // A skill it writes itself is found at its next turn.
      const own = JSON.stringify({
        path: 'skills/greeter/SKILL.md',
        content: skillMd('greeter', 'Greets people warmly'),
      })
      await chat(`[sim] call write_file ${own}\n[sim] say written`, {
        session_id: 'skills-2',
        approval_mode: 'self-drive',
      })
      expect((await call('GET', `/interns/${internId}/skills`)).body.data.map((s: any) => s.name)).toContain('greeter')
      expect((await call('DELETE', `/interns/${internId}/skills/greeter`)).body).toEqual({
        name: 'greeter',
        deleted: true,
      })
      expect((await call('DELETE', `/interns/${internId}/skills/greeter`)).status).toBe(404)
      expect((await call('GET', `/interns/${internId}/skills`)).body.data.map((s: any) => s.name)).toEqual([
        'release-notes',
      ])
    },
  )
})

describe('web search', () => {
  it("is offered to the intern through the gateway's openrouter:web_search, which runs the search", async () => {
    const said = textOf(
      await chat('[sim] call web_search {"query":"roster interns"}\n[sim] say Found: {{result}}', {
        session_id: 'search-1',
        approval_mode: 'self-drive',
      }),
    )
    expect(searches).toContain('roster interns')
    expect(said).toContain('Roster interns guide')
  })
})
