import { afterAll, beforeAll, expect, it } from 'vitest'
import { OpenRouter } from '@openrouter/sdk'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import { simulatorCatalogue } from '@roster/gateway'
import { catalogueFile, describeNeeding, startStack, type Stack, useTestTenant } from '@roster/testing'

// `openrouter:bash` on a real stack: the API hands each command to a runtime host (its own process),
// which runs it in a bubblewrap sandbox of the request (or of its session): never in the API. The
// sandbox has no network, holds a fork bomb and a disk filler to their limits, and is the request's alone.
const env = useTestTenant()
let sim: Simulator
let stack: Stack

await describeNeeding(['bubblewrap'], 'openrouter:bash in runtime hosts’ sandboxes', () => {
  beforeAll(async () => {
    sim = await startSimulator({ replyTokens: 3 })
    stack = await startStack({
      databaseUrl: env.t.url,
      env: { MODEL_CATALOGUE: catalogueFile(simulatorCatalogue(sim.url)) },
      runtimeEnv: { COMMAND_TIMEOUT_MS: '5000', SANDBOX_FILE_MB: '4', SANDBOX_WORKSPACE_MB: '16' },
    })
  }, 60_000)
  afterAll(async () => {
    await stack?.stop()
    await sim?.close()
  })

  const BASH = { type: 'openrouter:bash', parameters: { engine: 'openrouter' } }
  const send = async (command: string, extra: object = {}) => {
    const res = await fetch(`${stack.apiUrl}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'roster-sim/chat',
        input: `[sim] call bash ${JSON.stringify({ command })}\n[sim] say done`,
        tools: [BASH],
        ...extra,
      }),
    })
    const body = (await res.json()) as any
    expect(res.status, JSON.stringify(body)).toBe(200)
    return body.output.find((o: any) => o.type === 'openrouter:bash')
  }

  it('runs the command on a runtime host, its item parsed by the official client', async () => {
    const client = new OpenRouter({
      apiKey: env.tenant.keys.user,
      serverURL: stack.apiUrl,
      retryConfig: { strategy: 'none' },
    })
    const res = (await client.responses.send({
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

  it("keeps a session's files for its next request, never another request's", async () => {
    await send('echo kept > note.txt', { session_id: 'sandbox-session' })
    expect((await send('cat note.txt', { session_id: 'sandbox-session' })).stdout).toBe('kept\n')
    const other = await send('cat note.txt 2>&1 || true')
    expect(other.stdout).toMatch(/No such file/)
  })

  it('runs openrouter:shell commands in turn in the same sandbox, each output as the official client reads it', async () => {
    const client = new OpenRouter({
      apiKey: env.tenant.keys.user,
      serverURL: stack.apiUrl,
      retryConfig: { strategy: 'none' },
    })
    const res = (await client.responses.send({
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
    const res = await fetch(`${stack.apiUrl}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'roster-sim/chat',
        input: '[sim] call bash {"command":"ls"}',
        tools: [{ type: 'openrouter:bash' }],
      }),
    })
    const body = (await res.json()) as any
    expect(body.output.map((o: any) => [o.type, o.name])).toEqual([['function_call', 'bash']])
  })
})
