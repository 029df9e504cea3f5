import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import { simulatorCatalogue } from '@roster/gateway'
import { lacking, makeInternKey, useTestTenant } from '@roster/testing'
import { buildTestApp } from '../../api/test/helpers.js'
import { runAgentTurn, TurnFailed, type AgentEvent, type AgentSetup } from '../src/agent/agent-turn.js'
import { SessionStore } from '../src/agent/session-store.js'
import type { Answer, Question } from '../src/agent/interactions.js'
import { runSandboxed } from '../src/sandbox.js'

// A turn of an intern's run for real: Roster's API as the model gateway (the upstream simulator
// behind it, following a script), the intern's own key, its sandbox and its workspace.
const env = useTestTenant()
let sim: Simulator
let app: Awaited<ReturnType<typeof buildTestApp>>
let setup: AgentSetup
let dir: string

beforeAll(async () => {
  sim = await startSimulator({ replyTokens: 5 })
  app = await buildTestApp(env.t.db, {}, simulatorCatalogue(sim.url))
  const apiBase = `${await app.listen({ port: 0, host: '127.0.0.1' })}/api/v1`
  const intern = await app.inject({
    method: 'POST',
    url: '/api/v1/interns',
    headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' },
    payload: { name: 'doer' },
  })
  dir = mkdtempSync(join(tmpdir(), 'roster-intern-'))
  mkdirSync(join(dir, 'workspace'))
  setup = {
    apiBase,
    apiKey: await makeInternKey(env.t.db, env.tenant.workspaceId, intern.json().id),
    model: 'roster-sim/chat',
    instructions: 'You are a careful intern.',
    workspace: join(dir, 'workspace'),
    runCommand: (command, opts, signal) =>
      runSandboxed(command, { ...opts, workspace: join(dir, 'workspace') }, signal),
    sessions: new SessionStore(join(dir, 'sessions')),
    maxSteps: 5,
    commandTimeoutMs: 10_000,
    approval: 'self-drive',
    commandNetwork: false,
    ask: () => Promise.reject(new Error('nothing asks in these tests')),
  }
})
afterAll(async () => {
  await app?.closeAll()
  await sim?.close()
})

// Two tests run shell commands: in their sandbox.
const noSandbox = await lacking(['bubblewrap'], 'the agent turn tests that run commands')

describe('an agent turn', () => {
  it.skipIf(noSandbox)(
    'calls its tools in its sandbox until the model answers, streaming what happens and keeping the session',
    async () => {
      const events: AgentEvent[] = []
      const script = [
        'Make a greeting file.',
        '[sim] call shell {"command":"echo hello from the sandbox > greeting.txt && cat greeting.txt && ls /"}',
        '[sim] call read_file {"path":"greeting.txt"}',
        '[sim] say The greeting is written.',
      ].join('\n')
      const usage = await runAgentTurn(setup, 'ses-1', script, (e) => events.push(e))
      const tools = events.filter((e) => e.type === 'tool') as Extract<AgentEvent, { type: 'tool' }>[]
      expect(tools.map((t) => t.name)).toEqual(['shell', 'read_file'])
      const shell = JSON.parse(tools[0]!.output)
      expect(shell.exit_code).toBe(0)
      expect(shell.stdout).toMatch(/^hello from the sandbox\n/)
      expect(shell.stdout).toContain('workspace')
      expect(shell.stdout).not.toContain('root')
      expect(JSON.parse(tools[1]!.output).content).toBe('hello from the sandbox\n')
      expect(readFileSync(join(setup.workspace, 'greeting.txt'), 'utf8')).toBe('hello from the sandbox\n')
      expect(
        events
          .filter((e) => e.type === 'text')
          .map((e) => (e as { delta: string }).delta)
          .join(''),
      ).toBe('The greeting is written.')
      expect(usage.total_tokens).toBeGreaterThan(0)
      expect(usage.cost).toBeGreaterThan(0)

      // The session holds the whole turn, outside the workspace the intern's commands can touch.
      const kept = await setup.sessions.load('ses-1')
      expect(kept.map((i) => `${i.type}${i.role ? `:${i.role}` : ''}`)).toEqual([
        'message:user',
        'function_call',
        'function_call_output',
        'function_call',
        'function_call_output',
        'message:assistant',
      ])
      expect(existsSync(join(setup.workspace, 'sessions'))).toBe(false)
    },
  )

  // It continues the first test's session (and its two tool calls).
  it.skipIf(noSandbox)('continues a session: the next turn sends the model the history', async () => {
    const events: AgentEvent[] = []
    await runAgentTurn(setup, 'ses-1', 'And now?\n[sim] say I remember the greeting.', (e) => events.push(e))
    expect(events.map((e) => (e as { delta?: string }).delta ?? '').join('')).toBe('I remember the greeting.')
    const sent = sim.stats.lastBody['/v1/chat/completions'] as { messages: { role: string; content: unknown }[] }
    expect(sent.messages.filter((m) => m.role === 'tool')).toHaveLength(2)
    expect(sent.messages[0]).toMatchObject({ role: 'system', content: 'You are a careful intern.' })
  })

  it("fails with the gateway's status when its model cannot be used", async () => {
    const err = await runAgentTurn({ ...setup, model: 'no/such-model' }, 'ses-2', 'hi', () => {}).catch((e) => e)
    expect(err).toBeInstanceOf(TurnFailed)
    expect([err.status, err.retryable]).toEqual([400, false])
    expect(err.message).toMatch(/no model named no\/such-model/)
  })

  it.skipIf(noSandbox)(
    'in manual mode asks before each command, runs none it was refused, and stops asking after allow_always',
    async () => {
      const asked: Question[] = []
      const answers: Answer[] = [
        { kind: 'permission', choice: 'reject_once' },
        { kind: 'permission', choice: 'allow_always' },
      ]
      const manual: AgentSetup = { ...setup, approval: 'manual', ask: async (q) => (asked.push(q), answers.shift()!) }
      const script = [
        '[sim] call shell {"command":"touch refused.txt"}',
        '[sim] call shell {"command":"touch allowed.txt"}',
        '[sim] call shell {"command":"touch again.txt"}',
        '[sim] call write_file {"path":"free.txt","content":"files need no permission"}',
        '[sim] say Done.',
      ].join('\n')
      const events: AgentEvent[] = []
      await runAgentTurn(manual, 'ses-manual', script, (e) => events.push(e))
      expect(asked).toEqual([
        {
          kind: 'permission',
          operation: 'shell command: touch refused.txt',
          options: ['allow_once', 'allow_always', 'reject_once', 'reject_always'],
        },
        {
          kind: 'permission',
          operation: 'shell command: touch allowed.txt',
          options: ['allow_once', 'allow_always', 'reject_once', 'reject_always'],
        },
      ])
      expect(
        ['refused.txt', 'allowed.txt', 'again.txt', 'free.txt'].map((f) => existsSync(join(setup.workspace, f))),
      ).toEqual([false, true, true, true])
      const outputs = events.filter((e) => e.type === 'tool').map((e) => JSON.parse((e as { output: string }).output))
      expect(outputs[0].error).toMatch(/did not allow/)
      // Network for a command is its own permission, asked even after commands were allowed always.
      const networked: AgentSetup = {
        ...manual,
        commandNetwork: true,
        ask: async (q) => (asked.push(q), { kind: 'permission', choice: 'cancel' }),
      }
      await runAgentTurn(
        networked,
        'ses-manual',
        '[sim] call shell {"command":"touch net.txt","network":true}\n[sim] say ok',
        () => {},
      )
      expect(asked.at(-1)).toMatchObject({ kind: 'permission', operation: 'shell command with network: touch net.txt' })
      expect(existsSync(join(setup.workspace, 'net.txt'))).toBe(false)
    },
  )

  it('asks the user a question and gives the model the answer, or carries on without one', async () => {
    const asked: Question[] = []
    let answer: Answer = { kind: 'elicitation', action: 'accept', content: { branch: 'dev' } }
    const asking: AgentSetup = { ...setup, ask: async (q) => (asked.push(q), answer) }
    const script =
      '[sim] call ask_user {"message":"Which branch?","fields":[{"name":"branch","type":"string","required":true,"options":["main","dev"]}]}\n[sim] say Thanks.'
    const events: AgentEvent[] = []
    await runAgentTurn(asking, 'ses-ask', script, (e) => events.push(e))
    expect(asked).toEqual([
      {
        kind: 'elicitation',
        message: 'Which branch?',
        fields: [{ name: 'branch', type: 'string', required: true, options: ['main', 'dev'] }],
      },
    ])
    expect(JSON.parse((events.find((e) => e.type === 'tool') as { output: string }).output)).toEqual({
      action: 'accept',
      content: { branch: 'dev' },
    })
    answer = { kind: 'elicitation', action: 'decline' }
    events.length = 0
    await runAgentTurn(asking, 'ses-ask', script, (e) => events.push(e))
    expect(JSON.parse((events.find((e) => e.type === 'tool') as { output: string }).output)).toMatchObject({
      action: 'decline',
    })
    // A malformed question goes back to the model, not to the user.
    events.length = 0
    await runAgentTurn(asking, 'ses-ask', '[sim] call ask_user {"fields":3}\n[sim] say ok', (e) => events.push(e))
    expect(asked).toHaveLength(2)
    expect(JSON.parse((events.find((e) => e.type === 'tool') as { output: string }).output).error).toMatch(
      /ask_user needs/,
    )
  })
})
