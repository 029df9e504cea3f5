import { createServer, type Server } from 'node:http'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { OpenRouter } from '@openrouter/sdk'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import { simulatorCatalogue } from '@roster/gateway'
import { catalogueFile, describeNeeding, makeTenant, startStack, type Stack, useTestTenant } from '@roster/testing'

// `openrouter:bash` on a real stack: the API hands each command to a runtime host (its own process),
// which runs it in a bubblewrap sandbox of the request (or of its session): never in the API. The
// sandbox has no network, holds a fork bomb and a disk filler to their limits, and is the request's alone.
const env = useTestTenant()
let sim: Simulator
let stack: Stack
let web: Server
let webPort: number

await describeNeeding(['bubblewrap'], 'openrouter:bash in runtime hosts’ sandboxes', () => {
  beforeAll(async () => {
    sim = await startSimulator({ replyTokens: 3 })
    // A web server the sandboxes' network policies name (as allowed.test and other.test, both this machine).
    web = createServer((req, res) =>
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`hello from ${req.headers.host}`),
    )
    await new Promise<void>((r) => web.listen(0, '127.0.0.1', r))
    webPort = (web.address() as { port: number }).port
    stack = await startStack({
      databaseUrl: env.t.url,
      env: { MODEL_CATALOGUE: catalogueFile(simulatorCatalogue(sim.url)) },
      runtimeEnv: {
        COMMAND_TIMEOUT_MS: '5000',
        SANDBOX_FILE_MB: '4',
        SANDBOX_WORKSPACE_MB: '16',
        EGRESS_PRIVATE_NETWORKS: 'allow',
        EGRESS_HOSTS: 'allowed.test=127.0.0.1,other.test=127.0.0.1',
        GATEWAY_SANDBOX_EGRESS_PORTS: `80,443,${webPort}`,
      },
    })
  }, 60_000)
  afterAll(async () => {
    await stack?.stop()
    await sim?.close()
    await new Promise<void>((r) => (web ? web.close(() => r()) : r()))
  })

  const BASH = { type: 'openrouter:bash', parameters: { engine: 'openrouter' } }
  /** POST /responses to the stack's API as `key`. */
  const respond = (body: object, key = env.tenant.keys.user) =>
    fetch(`${stack.apiUrl}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'roster-sim/chat', ...body }),
    })
  const client = () =>
    new OpenRouter({ apiKey: env.tenant.keys.user, serverURL: stack.apiUrl, retryConfig: { strategy: 'none' } })
  const send = async (command: string, extra: object = {}, key = env.tenant.keys.user) => {
    const res = await respond(
      { input: `[sim] call bash ${JSON.stringify({ command })}\n[sim] say done`, tools: [BASH], ...extra },
      key,
    )
    const body = (await res.json()) as any
    expect(res.status, JSON.stringify(body)).toBe(200)
    return body.output.find((o: any) => o.type === 'openrouter:bash')
  }

  it('runs the command on a runtime host, its item parsed by the official client', async () => {
    const res = (await client().responses.send({
      responsesRequest: {
        model: 'roster-sim/chat',
        input: '[sim] call bash {"command":"echo hello > f.txt; cat f.txt; echo $$ >&2; exit 3"}\n[sim] say done',
        tools: [BASH as never],
      },
    })) as any
    const item = res.output[0]
    expect(item).toMatchObject({ type: 'openrouter:bash', status: 'completed', stdout: 'hello\n', exitCode: 3 })
    // The first process of its own PID namespace: the sandbox's, not the API's or the host's.
    expect(Number(item.stderr.trim())).toBeLessThan(10)
    expect(res.outputText).toBe('done')
  })

  it('has no network, and holds a fork bomb to its limits while the host goes on', async () => {
    const port = new URL(stack.apiUrl).port
    const net = await send(`(exec 3<>/dev/tcp/127.0.0.1/${port}) 2>/dev/null && echo reached || echo cut off`)
    expect(net.stdout).toBe('cut off\n')
    const bomb = await send('b() { b | b & }; b; sleep 2; echo survived')
    expect(bomb.exitCode === 0 && bomb.stdout.includes('survived') ? 'contained' : 'stopped').toMatch(
      /contained|stopped/,
    )
    const after = await send('echo still here')
    expect(after.stdout).toBe('still here\n')
  })

  it('holds a disk filler to the file size and the workspace ceiling, and the host goes on', async () => {
    const session = { session_id: 'disk-filler' }
    const one = await send('head -c 100000000 /dev/zero > big; wc -c < big', session)
    expect(Number(one.stdout.trim())).toBeLessThanOrEqual(4 * 1024 * 1024)
    const filler = await send('i=0; while true; do i=$((i+1)); head -c 2000000 /dev/zero > f$i || true; done', session)
    // Stopped for the workspace's ceiling, not by the clock; the model is told which limit held it.
    expect(JSON.parse(filler.output)).toMatchObject({ limit: 'workspace', timed_out: false })
    // Past the ceiling the sandbox may still clean up, and other requests' commands run.
    expect((await send('rm -f f* big; echo cleaned', session)).stdout).toBe('cleaned\n')
    expect((await send('echo fine')).stdout).toBe('fine\n')
  })

  it("reaches only the hosts its network_policy allows, through the host's egress proxy, its network fixed", async () => {
    const allow = (domains: string[], container?: string) => ({
      tools: [
        {
          ...BASH,
          parameters: {
            engine: 'openrouter',
            environment: container
              ? {
                  type: 'container_reference',
                  container_id: container,
                  network_policy: { type: 'allowlist', allowed_domains: domains },
                }
              : { type: 'container_auto', network_policy: { type: 'allowlist', allowed_domains: domains } },
          },
        },
      ],
    })
    const get = (host: string) => `curl -s -m 3 -w ' %{http_code}' http://${host}:${webPort}/`
    const status = (host: string, port = webPort) =>
      `curl -s -m 3 -o /dev/null -w '%{http_code}' http://${host}:${port}/`
    const reached = await send(`${get('allowed.test')}; echo; ${status('other.test')}`, allow(['allowed.test']))
    const [allowed, other] = reached.stdout.trim().split('\n')
    expect(allowed).toBe(`hello from allowed.test:${webPort} 200`)
    // Refused by the proxy (403), the server never asked.
    expect(other).toBe('403')
    // A pattern; and a port the host does not open to sandboxes.
    const pattern = await send(get('other.test'), allow(['*.test']))
    expect(pattern.stdout).toBe(`hello from other.test:${webPort} 200`)
    const port = await send(
      `curl -s -m 3 -o /dev/null -w '%{http_code}' http://allowed.test:9/`,
      allow(['allowed.test']),
    )
    expect(port.stdout).toBe('403')
    // A named container keeps its network; asking it for another fails, saying why.
    expect((await send(get('allowed.test'), allow(['allowed.test'], 'net-box'))).stdout).toMatch(/ 200$/)
    const changed = await send('echo hi', allow(['other.test'], 'net-box'))
    expect(changed.error).toMatch(/its network cannot change/)
    // Parameters that do not read are refused before anything runs.
    for (const environment of [
      { type: 'container_auto', network_policy: { type: 'allowlist', allowed_domains: ['Not A Host'] } },
      { type: 'container_auto', file_ids: ['or_file_1'] },
      { type: 'container_reference', container_id: 'bad/id' },
      { type: 'somewhere_else' },
    ]) {
      const res = await respond({ input: 'x', tools: [{ ...BASH, parameters: { engine: 'openrouter', environment } }] })
      expect(res.status, JSON.stringify(environment)).toBe(400)
    }
  })

  it("keeps a named container's files across requests within the workspace, never another workspace's", async () => {
    const box = (container: string) => ({
      tools: [
        {
          ...BASH,
          parameters: { engine: 'openrouter', environment: { type: 'container_reference', container_id: container } },
        },
      ],
    })
    const wrote = await send('echo boxed > kept.txt', box('my-box'))
    expect(wrote.container_id).toBe('my-box')
    expect((await send('cat kept.txt', box('my-box'))).stdout).toBe('boxed\n')
    expect((await send('cat kept.txt 2>&1 || true', box('other-box'))).stdout).toMatch(/No such file/)
    // Another workspace naming the same container reaches a container of its own.
    const stranger = await makeTenant(env.t.db)
    expect((await send('cat kept.txt 2>&1 || true', box('my-box'), stranger.keys.user)).stdout).toMatch(/No such file/)
    // A session's container is named in its results, and reaches the same files by that name.
    const session = await send('echo from-session > s.txt', { session_id: 'named-session' })
    expect(session.container_id).toBe('sess_named-session')
    expect((await send('cat s.txt', box('sess_named-session'))).stdout).toBe('from-session\n')
  })

  it('applies patches in the sandbox its commands run in (apply_patch, engine sandbox), refusing one that does not fit', async () => {
    const patch = (args: object) => `[sim] call apply_patch ${JSON.stringify(args)}`
    const bash = (command: string) => `[sim] call bash ${JSON.stringify({ command })}`
    const res = await respond({
      input: [
        patch({ type: 'create_file', path: 'src/app.py', diff: '+def main():\n+    return 1\n' }),
        bash('cat src/app.py'),
        patch({ type: 'update_file', path: 'src/app.py', diff: '@@ def main():\n-    return 1\n+    return 2\n' }),
        bash('cat src/app.py'),
        patch({ type: 'update_file', path: 'src/app.py', diff: '@@\n-    return 9\n+    return 3\n' }),
        patch({ type: 'delete_file', path: 'src/app.py' }),
        bash('ls src'),
        '[sim] say done',
      ].join('\n'),
      tools: [BASH, { type: 'openrouter:apply_patch', parameters: { engine: 'sandbox' } }],
    })
    const body = (await res.json()) as any
    expect(res.status, JSON.stringify(body)).toBe(200)
    const items = body.output.filter((o: any) => o.type !== 'message')
    expect(items.map((o: any) => o.type.replace('openrouter:', ''))).toEqual([
      'apply_patch',
      'bash',
      'apply_patch',
      'bash',
      'apply_patch',
      'apply_patch',
      'bash',
    ])
    expect(JSON.parse(items[0].output)).toEqual({ applied: 'created src/app.py' })
    expect(items[1].stdout).toBe('def main():\n    return 1\n')
    expect(items[3].stdout).toBe('def main():\n    return 2\n')
    // A hunk that is not in the file changes nothing, and the model is told.
    expect(items[4].error).toBe('the patch was not applied: hunk 1: its lines are not in the file (as given)')
    expect(items[6].stdout).toBe('')
  })

  it("keeps a session's files for its next request, never another request's", async () => {
    await send('echo kept > note.txt', { session_id: 'sandbox-session' })
    expect((await send('cat note.txt', { session_id: 'sandbox-session' })).stdout).toBe('kept\n')
    const other = await send('cat note.txt 2>&1 || true')
    expect(other.stdout).toMatch(/No such file/)
  })

  it('runs openrouter:shell commands in turn in the same sandbox, each output as the official client reads it', async () => {
    const res = (await client().responses.send({
      responsesRequest: {
        model: 'roster-sim/chat',
        input:
          '[sim] call shell {"commands":["echo one > a.txt","cat a.txt; false","sleep 30"],"timeout_ms":1000}\n[sim] say done',
        tools: [{ type: 'openrouter:shell' } as never],
      },
    })) as any
    const item = res.output[0]
    expect(item.type).toBe('openrouter:shell')
    expect(item.action).toMatchObject({
      commands: ['echo one > a.txt', 'cat a.txt; false', 'sleep 30'],
      timeoutMs: 1000,
    })
    expect(item.output.map((o: any) => [o.stdout, o.outcome])).toEqual([
      ['', { type: 'exit', exitCode: 0 }],
      ['one\n', { type: 'exit', exitCode: 1 }],
      ['', { type: 'timeout' }],
    ])
  })

  it('hands the call to the client when the engine is not Roster’s (the default)', async () => {
    const res = await respond({ input: '[sim] call bash {"command":"ls"}', tools: [{ type: 'openrouter:bash' }] })
    const body = (await res.json()) as any
    expect(body.output.map((o: any) => [o.type, o.name])).toEqual([['function_call', 'bash']])
  })
})
