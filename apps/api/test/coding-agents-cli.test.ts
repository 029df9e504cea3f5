import { afterAll, beforeAll, expect, it } from 'vitest'
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import { CLAUDE_CODE_MODEL_NAMES, simulatorCatalogue } from '@roster/gateway'
import {
  catalogueFile,
  codingAgentPaths,
  describeNeeding,
  startApi,
  useTestTenant,
  type ApiProcess,
} from '@roster/testing'

// Claude Code, Codex and opencode themselves (installed from npm by the test, at the versions the
// issue found them with), pointed at a Roster API process on the simulator with nothing but the
// base URL, a key and a model: a plain answer, a shell command, a file written and read back, an
// image read, a subagent on a side model. The simulator's scripts ([sim] call / say) make the model
// call the agents' own tools.
const env = useTestTenant()
let sim: Simulator
let api: ApiProcess
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
)

beforeAll(async () => {
  sim = await startSimulator({ replyTokens: 6 })
  const catalogue = simulatorCatalogue(sim.url)
  // The side models Claude Code calls by Anthropic's names, served here by a model of their own
  // (the simulator catalogue gives them to roster-sim/messages), so a call by alias shows.
  const messages = catalogue.models.find((m) => m.id === 'roster-sim/messages')!
  delete messages.aliases
  catalogue.models.push({ ...messages, id: 'roster-sim/side', aliases: { anthropic: [...CLAUDE_CODE_MODEL_NAMES] } })
  api = await startApi({ databaseUrl: env.t.url, env: { MODEL_CATALOGUE: catalogueFile(catalogue) } })
}, 60_000)
afterAll(async () => {
  await api?.stop()
  await sim?.close()
})

/** Runs a program to its end: its exit code and output. */
function run(command: string, args: string[], opts: { cwd: string; env: Record<string, string>; stdin?: string }) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(command, args, { cwd: opts.cwd, env: { PATH: process.env.PATH!, ...opts.env } })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    child.stdin.end(opts.stdin)
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000)
    child.on('error', reject)
    child.on('close', (code) => (clearTimeout(timer), resolve({ code, stdout, stderr })))
  })
}

/** A working directory and a home of its own for one agent run. */
function place() {
  const root = mkdtempSync(join(tmpdir(), 'roster-agent-'))
  const cwd = join(root, 'work')
  const home = join(root, 'home')
  mkdirSync(cwd)
  mkdirSync(home)
  return { cwd, home }
}

/** The requests the simulator saw on `path` since `from`, as sent. */
const upstreamSince = (path: string, from: number) => (sim.stats.requests[path] ?? 0) - from

await describeNeeding(['coding-agents'], 'coding agents through Roster', () => {
  /** One Claude Code run in print mode; `prepare` puts files in its working directory first. */
  const claude = async (prompt: string, tools: string[] = [], prepare?: (cwd: string) => string) => {
    const { cwd, home } = place()
    if (prepare) prompt = prompt.replace('$FILE', prepare(cwd))
    const r = await run(
      codingAgentPaths.claude,
      ['-p', prompt, '--output-format', 'json', ...(tools.length ? ['--allowedTools', tools.join(' ')] : [])],
      {
        cwd,
        env: {
          HOME: home,
          ANTHROPIC_BASE_URL: api.url.replace(/\/v1$/, ''),
          ANTHROPIC_API_KEY: env.tenant.keys.user,
          ANTHROPIC_MODEL: 'roster-sim/messages',
          DISABLE_AUTOUPDATER: '1',
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        },
      },
    )
    const line = r.stdout.trim().split('\n').at(-1) ?? ''
    const result = (() => {
      try {
        return JSON.parse(line) as { is_error?: boolean; result?: string; modelUsage?: Record<string, unknown> }
      } catch {
        throw new Error(`claude printed no result (exit ${r.code}): ${r.stdout.slice(-500)} ${r.stderr.slice(-500)}`)
      }
    })()
    return { ...result, cwd, code: r.code }
  }

  it('Claude Code answers, runs a shell command, writes and reads a file, and reads an image', async () => {
    const hello = await claude('say hello')
    expect(hello).toMatchObject({ code: 0, is_error: false, result: expect.stringMatching(/\S/) })

    const work = await claude(
      [
        'do as scripted',
        '[sim] call Bash {"command":"echo from-bash > bash.txt","description":"write a file"}',
        '[sim] call Write {"file_path":"notes.txt","content":"roster notes"}',
        '[sim] call Read {"file_path":"notes.txt"}',
        '[sim] say Read: {{result}}',
      ].join('\n'),
      ['Bash', 'Write', 'Read'],
    )
    expect(work).toMatchObject({ code: 0, is_error: false })
    expect(readFileSync(join(work.cwd, 'bash.txt'), 'utf8')).toBe('from-bash\n')
    expect(readFileSync(join(work.cwd, 'notes.txt'), 'utf8')).toBe('roster notes')
    expect(work.result).toMatch(/roster notes/)

    // An image read by its Read tool goes to the provider as an image in the tool result.
    const seen = sim.stats.requests['/v1/messages'] ?? 0
    const image = await claude('look\n[sim] call Read {"file_path":"$FILE"}\n[sim] say Seen.', ['Read'], (cwd) => {
      writeFileSync(join(cwd, 'pixel.png'), PNG)
      return join(cwd, 'pixel.png')
    })
    expect(image).toMatchObject({ code: 0, is_error: false, result: 'Seen.' })
    expect(upstreamSince('/v1/messages', seen)).toBeGreaterThanOrEqual(2)
    const sent = JSON.stringify(sim.stats.lastBody['/v1/messages'])
    expect(sent).toMatch(
      /"type":"tool_result","tool_use_id":"[^"]+","content":\[[^\]]*"type":"image","source":\{"type":"base64","media_type":"image\/png"/,
    )
  }, 240_000)

  it("Claude Code runs a subagent on its side model (haiku), called by Anthropic's name", async () => {
    const agent = {
      description: 'look around',
      prompt: '[sim] say sub-done',
      subagent_type: 'general-purpose',
      model: 'haiku',
      run_in_background: false,
    }
    const r = (await claude(`delegate\n[sim] call Agent ${JSON.stringify(agent)}\n[sim] say Agent said: {{result}}`, [
      'Agent',
    ])) as { code: number | null; is_error?: boolean; result?: string; modelUsage?: Record<string, unknown> }
    expect(r).toMatchObject({ code: 0, is_error: false })
    // The subagent's answer came back through the Agent tool, from the side model.
    expect(r.result).toMatch(/^Agent said: .*sub-done/s)
    const side = Object.keys(r.modelUsage ?? {}).filter((m) => m !== 'roster-sim/messages')
    expect(side.length).toBe(1)
    expect(CLAUDE_CODE_MODEL_NAMES).toContain(side[0])
  }, 240_000)

  it('Codex answers, runs a command, and views an image', async () => {
    const codex = async (prompt: string) => {
      const { cwd, home } = place()
      const codexHome = join(home, '.codex')
      mkdirSync(codexHome)
      writeFileSync(
        join(codexHome, 'config.toml'),
        [
          'model = "roster-sim/responses"',
          'model_provider = "roster"',
          '[model_providers.roster]',
          'name = "Roster"',
          `base_url = "${api.url}"`,
          'env_key = "ROSTER_API_KEY"',
          'wire_api = "responses"',
        ].join('\n'),
      )
      writeFileSync(join(cwd, 'pixel.png'), PNG)
      const r = await run(
        process.execPath,
        [
          codingAgentPaths.codex,
          'exec',
          '--skip-git-repo-check',
          '--sandbox',
          'danger-full-access',
          prompt.replaceAll('$CWD', cwd),
        ],
        { cwd, env: { HOME: home, CODEX_HOME: codexHome, ROSTER_API_KEY: env.tenant.keys.user } },
      )
      return { ...r, cwd }
    }
    const hello = await codex('say hello')
    expect(hello.code, hello.stderr.slice(-1000)).toBe(0)
    expect(hello.stdout.trim()).not.toBe('')

    const command = await codex('[sim] call exec_command {"cmd":"echo from-codex > out.txt"}\n[sim] say Done.')
    expect(command.code, command.stderr.slice(-1000)).toBe(0)
    expect(readFileSync(join(command.cwd, 'out.txt'), 'utf8')).toBe('from-codex\n')

    const viewed = await codex('[sim] call view_image {"path":"$CWD/pixel.png"}\n[sim] say Seen.')
    expect(viewed.code, viewed.stderr.slice(-1000)).toBe(0)
    // The image reached the provider as an image in the function call's output, never as text.
    const sent = JSON.stringify(sim.stats.lastBody['/v1/responses'])
    expect(sent).toMatch(/"type":"function_call_output","call_id":"[^"]+","output":\[[^\]]*"type":"input_image"/)
    expect(sent).not.toMatch(/\\"input_image\\"/)
  }, 240_000)

  it('opencode answers, running a shell command and writing and reading a file', async () => {
    const opencode = async (prompt: string) => {
      const { cwd, home } = place()
      writeFileSync(
        join(cwd, 'opencode.json'),
        JSON.stringify({
          provider: {
            roster: {
              npm: '@ai-sdk/openai-compatible',
              name: 'Roster',
              options: { baseURL: api.url, apiKey: '{env:ROSTER_API_KEY}' },
              models: { 'roster-sim/chat': {} },
            },
          },
          model: 'roster/roster-sim/chat',
        }),
      )
      // The prompt on stdin: opencode quotes an argument that holds spaces, scripts and all.
      const r = await run(codingAgentPaths.opencode, ['run', '--format', 'json'], {
        cwd,
        env: { HOME: home, ROSTER_API_KEY: env.tenant.keys.user },
        stdin: prompt.replaceAll('$CWD', cwd),
      })
      const events = r.stdout
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map(
          (l) =>
            JSON.parse(l) as { type: string; part?: { text?: string; tool?: string; state?: { status?: string } } },
        )
      return {
        ...r,
        cwd,
        events,
        text: events
          .filter((e) => e.type === 'text')
          .map((e) => e.part!.text)
          .join(''),
      }
    }
    // One run (opencode starts slowly: seconds of CPU a run): it answers, and works with its tools.
    const seen = sim.stats.requests['/v1/chat/completions'] ?? 0
    const work = await opencode(
      [
        'do as scripted',
        '[sim] call bash {"command":"echo from-bash > bash.txt","description":"write a file"}',
        '[sim] call write {"filePath":"$CWD/notes.txt","content":"roster notes"}',
        '[sim] call read {"filePath":"$CWD/notes.txt"}',
        '[sim] say Read: {{result}}',
      ].join('\n'),
    )
    expect(work.code, work.stderr.slice(-1000)).toBe(0)
    const tools = work.events.filter((e) => e.type === 'tool_use').map((e) => [e.part!.tool, e.part!.state?.status])
    expect(tools).toEqual([
      ['bash', 'completed'],
      ['write', 'completed'],
      ['read', 'completed'],
    ])
    expect(readFileSync(join(work.cwd, 'bash.txt'), 'utf8')).toBe('from-bash\n')
    expect(readFileSync(join(work.cwd, 'notes.txt'), 'utf8')).toBe('roster notes')
    expect(work.text).toMatch(/Read: [\s\S]*roster notes/)
    expect(upstreamSince('/v1/chat/completions', seen)).toBeGreaterThanOrEqual(4)
  }, 240_000)
})
