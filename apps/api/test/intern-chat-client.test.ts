import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { OpenRouter } from '@openrouter/sdk'
import { InternChatCompletionChunk$inboundSchema } from '@openrouter/sdk/models'
import * as errors from '@openrouter/sdk/models/errors'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import { simulatorCatalogue } from '@roster/gateway'
import { catalogueFile, lacking, makeTenant, startStack, waitFor, type Stack, useTestTenant } from '@roster/testing'
import { chatThroughClient, sseEvents, streamError } from './helpers.js'

// Pauses as the official client sees them: a stack whose pause tool is named as @openrouter/sdk
// expects (openrouter.provide_input), with a short question deadline, and a runtime host that is
// killed and started again under a running session.
const env = useTestTenant()
let sim: Simulator
let stack: Stack
let internId: string
let client: OpenRouter
const DEADLINE_MS = 1_500
const TURNS_PER_MINUTE = 25

beforeAll(async () => {
  sim = await startSimulator({ replyTokens: 3 })
  const catalogue = catalogueFile(simulatorCatalogue(sim.url))
  stack = await startStack({
    databaseUrl: env.t.url,
    env: {
      MODEL_CATALOGUE: catalogue,
      INTERN_DEFAULT_MODEL: 'roster-sim/chat',
      INTERN_PROVIDE_INPUT_NAME: 'openrouter.provide_input',
      INTERACTION_DEADLINE_MS: String(DEADLINE_MS),
      CHAT_TURNS_PER_MINUTE: String(TURNS_PER_MINUTE),
      RUNTIME_ANSWER_TIMEOUT_MS: '1500',
      CHAT_REQUEST_BUDGET_MS: '4000',
      CHAT_MOVE_WAIT_MS: '1000',
    },
    workerEnv: { RECONCILE_INTERVAL_MS: '500' },
  })
  client = new OpenRouter({ apiKey: env.tenant.keys.user, serverURL: stack.apiUrl, retryConfig: { strategy: 'none' } })
  const created = await (
    await fetch(`${stack.apiUrl}/interns`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'asker', provision: true }),
    })
  ).json()
  internId = created.id
  await waitUntilRunning()
})
afterAll(async () => {
  await stack?.stop()
  await sim?.close()
})

const waitUntilRunning = () =>
  waitFor(
    async () =>
      (
        await (
          await fetch(`${stack.apiUrl}/interns/${internId}`, {
            headers: { authorization: `Bearer ${env.tenant.keys.user}` },
          })
        ).json()
      ).status === 'running',
    { timeoutMs: 30_000, what: 'the intern to run' },
  )

/** One chat request through the official client: every chunk it parsed, in order. */
async function sdkChat(request: Record<string, unknown>) {
  const res = await client.interns.chat({
    internId,
    internChatCompletionRequest: { stream: true, ...request } as never,
  })
  const chunks: any[] = []
  for await (const chunk of res.result as AsyncIterable<any>) chunks.push(chunk)
  return chunks
}
const raw = (body: object) =>
  fetch(`${stack.apiUrl}/interns/${internId}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' },
    body: JSON.stringify({ stream: true, ...body }),
  })

// Two turns run shell commands: in their sandbox.
const noSandbox = await lacking(['bubblewrap'], 'the intern chat client tests that run shell commands')

describe('pauses through the official client', () => {
  it.skipIf(noSandbox)(
    'pauses a manual run for permission, is answered through the client, and runs the command in the sandbox',
    async () => {
      const prompt = {
        role: 'user',
        content: 'Check.\n[sim] call shell {"command":"uname -s; ls /workspace"}\n[sim] say Checked: {{result}}',
      }
      const paused = await sdkChat({ approvalMode: 'manual', messages: [prompt] })
      const toolCall = paused.find((c) => c.choices[0]?.delta?.toolCalls)?.choices[0].delta.toolCalls[0]
      expect(toolCall).toMatchObject({ index: 0, type: 'function', function: { name: 'openrouter.provide_input' } })
      expect(JSON.parse(toolCall.function.arguments)).toMatchObject({
        kind: 'permission',
        operation: 'shell command: uname -s; ls /workspace',
      })
      expect(paused.at(-2).choices[0].finishReason).toBe('tool_calls')
      const final = paused.at(-1)
      expect([final.choices, final.usage]).toEqual([[], null])

      const answered = await sdkChat({
        sessionId: final.sessionId,
        approvalMode: 'self-drive', // ignored on a reply: the run keeps its mode
        messages: [
          prompt,
          { role: 'assistant', content: null, toolCalls: [{ id: toolCall.id, function: toolCall.function }] },
          { role: 'tool', toolCallId: toolCall.id, content: 'allow_once' },
        ],
      })
      expect(answered.map((c) => c.choices[0]?.delta?.content ?? '').join('')).toMatch(
        /^Checked: \{"exit_code":0,"stdout":"Linux\\n/,
      )
      expect(answered.at(-2).choices[0].finishReason).toBe('stop')
      expect(answered.at(-1)).toMatchObject({ sessionId: final.sessionId, usage: { totalTokens: expect.any(Number) } })
      expect(JSON.stringify(sim.stats.lastBody['/v1/chat/completions'])).toContain('Linux')
    },
  )

  it("streams chunks the client's own schema accepts, the pause included", async () => {
    const res = await raw({
      messages: [
        { role: 'user', content: '[sim] call ask_user {"message":"Name?","fields":[{"name":"name","type":"string"}]}' },
      ],
    })
    const chunks = sseEvents(await res.text()).events.map((e) => e.data)
    for (const chunk of chunks)
      expect(InternChatCompletionChunk$inboundSchema.safeParse(chunk).success, JSON.stringify(chunk)).toBe(true)
    expect(chunks[1].choices[0].delta.tool_calls[0].function.name).toBe('openrouter.provide_input')
    // One stream, one model name.
    expect(new Set(chunks.map((c) => c.model))).toEqual(new Set([chunks[0].model]))
  })

  it('cancels a run whose question is not answered in time: a late reply is not pending', async () => {
    const paused = await sdkChat({
      approvalMode: 'manual',
      messages: [{ role: 'user', content: '[sim] call shell {"command":"touch late.txt"}' }],
    })
    const toolCall = paused.find((c) => c.choices[0]?.delta?.toolCalls)!.choices[0].delta.toolCalls[0]
    // The run holds its question until the deadline passes, then is cancelled.
    const pausedRuns = async () =>
      ((await (await stack.runtimeFetch(`/v1/interns/${internId}`)).json()) as { paused: number }).paused
    // Ours, and any an earlier test left: it is the last to have started, so the last to end.
    expect(await pausedRuns()).toBeGreaterThan(0)
    await waitFor(async () => (await pausedRuns()) === 0, {
      timeoutMs: DEADLINE_MS + 5_000,
      what: 'the question’s deadline to cancel its run',
    })
    const late = await sdkChat({
      sessionId: paused.at(-1).sessionId,
      messages: [{ role: 'tool', toolCallId: toolCall.id, content: 'allow_once' }],
    }).catch((e) => e)
    expect(late).toBeInstanceOf(errors.InternChatErrorResponse)
    expect([late.statusCode, late.error.metadata]).toEqual([
      409,
      { reason: 'interaction_not_pending', retryable: false },
    ])
    // Nothing ran.
    const workspace = join(stack.env.RUNTIME_DATA_DIR!, 'interns', internId, 'workspace')
    expect(() => readFileSync(join(workspace, 'late.txt'))).toThrow()
  })

  it("refuses a user's turns past CHAT_TURNS_PER_MINUTE with 429 rate_limited and Retry-After, which the client reads", async () => {
    // A user of their own (the limit is per user), with an intern of their own.
    const busyUser = await makeTenant(env.t.db)
    const headers = { authorization: `Bearer ${busyUser.keys.user}`, 'content-type': 'application/json' }
    const own = await (
      await fetch(`${stack.apiUrl}/interns`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ name: 'chatterbox', provision: true }),
      })
    ).json()
    await waitFor(
      async () => (await (await fetch(`${stack.apiUrl}/interns/${own.id}`, { headers })).json()).status === 'running',
      { timeoutMs: 30_000, what: 'the intern to run' },
    )
    let served = 0
    let refused: Response | undefined
    // The window is a calendar minute: if one ends mid-test, up to twice the limit may pass.
    for (let i = 0; i < TURNS_PER_MINUTE * 2 + 1 && !refused; i++) {
      const res = await fetch(`${stack.apiUrl}/interns/${own.id}/chat/completions`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ stream: true, messages: [{ role: 'user', content: '[sim] say hi' }] }),
      })
      if (res.status === 200) {
        served++
        await res.text()
      } else refused = res
    }
    expect(served).toBeGreaterThanOrEqual(TURNS_PER_MINUTE)
    expect(refused?.status).toBe(429)
    expect(Number(refused!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    expect((await refused!.json()).error.metadata).toEqual({ reason: 'rate_limited', retryable: true })
    const viaClient = await new OpenRouter({
      apiKey: busyUser.keys.user,
      serverURL: stack.apiUrl,
      retryConfig: { strategy: 'none' },
    }).interns
      .chat({
        internId: own.id,
        internChatCompletionRequest: { stream: true, messages: [{ role: 'user', content: 'hi' }] },
      })
      .catch((e) => e)
    expect(viaClient).toBeInstanceOf(errors.InternChatErrorResponse)
    expect([viaClient.statusCode, viaClient.error.metadata.reason]).toEqual([429, 'rate_limited'])
  })

  it('answers 504 timeout before any stream when the host does not answer in time (a frozen host)', async () => {
    const pid = stack.runtime.child!.pid!
    process.kill(pid, 'SIGSTOP')
    try {
      const started = Date.now()
      const res = await raw({ messages: [{ role: 'user', content: '[sim] say hi' }] })
      expect([res.status, (await res.json()).error.metadata, Date.now() - started >= 1_400]).toEqual([
        504,
        { reason: 'timeout', retryable: true },
        true,
      ])
    } finally {
      process.kill(pid, 'SIGCONT')
    }
    // Thawed, the host takes the next prompt (the abandoned one was cancelled when its caller left).
    await waitFor(
      async () => {
        const res = await raw({ messages: [{ role: 'user', content: '[sim] say back' }] })
        await res.text()
        return res.status === 200
      },
      { timeoutMs: 10_000, what: 'the thawed host to take a prompt' },
    )
  })

  it.skipIf(noSandbox)(
    'ends a turn that outlives the request budget with a timeout finish error, and one whose model fails with turn_failed, each read by the client',
    async () => {
      const slow = await chatThroughClient(client, internId, {
        messages: [{ role: 'user', content: '[sim] call shell {"command":"sleep 20"}' }],
      })
      // The error is the chunk's own (where the client reads it), not its choice's.
      expect(streamError(slow)).toEqual({
        finishReason: 'error',
        model: 'roster-sim/chat', // the stream's one model name, on the chunks the API makes too
        error: {
          code: 504,
          message: expect.stringMatching(/outlived this request/),
          metadata: { reason: 'timeout', retryable: true },
        },
        final: expect.objectContaining({ choices: [], usage: null }),
      })

      // An intern whose model the gateway does not serve (set when the catalogue served it, which it
      // no longer does: a PATCH checks the model against the catalogue of the day): the turn fails,
      // as the intern classifies it.
      const headers = { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' }
      const broken = await (
        await fetch(`${stack.apiUrl}/interns`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ name: 'misconfigured' }),
        })
      ).json()
      await env.t.db.intern.update({ where: { id: broken.id }, data: { model: 'no/such-model' } })
      expect(
        (
          await fetch(`${stack.apiUrl}/interns/${broken.id}/provision`, {
            method: 'POST',
            headers: { authorization: headers.authorization },
          })
        ).status,
      ).toBeLessThan(300)
      await waitFor(
        async () =>
          (await (await fetch(`${stack.apiUrl}/interns/${broken.id}`, { headers })).json()).status === 'running',
        { timeoutMs: 30_000, what: 'the intern to run' },
      )
      const failed = await chatThroughClient(client, broken.id, { messages: [{ role: 'user', content: 'hi' }] })
      expect(streamError(failed)).toMatchObject({
        finishReason: 'error',
        error: {
          code: 502,
          message: expect.stringMatching(/no\/such-model/),
          metadata: { reason: 'turn_failed', retryable: false },
        },
        final: { choices: [], usage: null },
      })
      // On the wire: the error beside `choices`, the choice itself only finished.
      const wire = sseEvents(
        await (
          await fetch(`${stack.apiUrl}/interns/${broken.id}/chat/completions`, {
            method: 'POST',
            headers,
            body: JSON.stringify({ stream: true, messages: [{ role: 'user', content: 'hi' }] }),
          })
        ).text(),
      ).events.map((e) => e.data)
      expect(wire.at(-2).choices).toEqual([{ index: 0, delta: {}, finish_reason: 'error' }])
      expect(wire.at(-2).error).toMatchObject({ code: 502, metadata: { reason: 'turn_failed', retryable: false } })
      for (const chunk of wire) expect(InternChatCompletionChunk$inboundSchema.safeParse(chunk).success).toBe(true)
    },
  )

  // Last: it kills the runtime host.
  it('continues a session after its host was killed mid-stream and started again; what the old run asked is not pending', async () => {
    const session = 'ses-survivor'
    await sdkChat({
      sessionId: session,
      messages: [{ role: 'user', content: 'Remember the word teal.\n[sim] say Remembered.' }],
    })
    const paused = await sdkChat({
      sessionId: 'ses-asking',
      approvalMode: 'manual',
      messages: [{ role: 'user', content: '[sim] call shell {"command":"true"}' }],
    })
    const asked = paused.find((c) => c.choices[0]?.delta?.toolCalls)!.choices[0].delta.toolCalls[0]

    // Through the client: the host killed once the stream has begun.
    const severed = await chatThroughClient(
      client,
      internId,
      { sessionId: session, messages: [{ role: 'user', content: '[sim] call shell {"command":"sleep 30"}' }] },
      () => stack.runtime.kill('SIGKILL'),
    )
    expect(streamError(severed)).toEqual({
      finishReason: 'error',
      model: 'roster-sim/chat', // the stream's one model name, on the chunks the API makes too
      error: {
        code: 502,
        message: expect.stringMatching(/link to the intern broke/),
        metadata: { reason: 'stream_severed', retryable: true },
      },
      final: expect.objectContaining({ choices: [], sessionId: session, usage: null }),
    })
    // With the host gone, a new prompt waits for the intern (CHAT_MOVE_WAIT_MS, 1 s here), then is
    // refused before any stream: 502 intern_unreachable, retryable.
    const waited = performance.now()
    const refused = await raw({ messages: [{ role: 'user', content: 'hello?' }] })
    expect([refused.status, (await refused.json()).error.metadata]).toEqual([
      502,
      { reason: 'intern_unreachable', retryable: true },
    ])
    expect(performance.now() - waited).toBeGreaterThan(900)

    stack.runtime.start()
    await stack.runtime.waitForOutput(/listening/)
    // The reconciler finds the intern gone from its host and provisions it again.
    await waitFor(
      async () => {
        const r = await stack.runtimeFetch(`/v1/interns/${internId}`)
        return r.status === 200 && (await r.json()).running === true
      },
      { timeoutMs: 30_000, what: 'the intern to run again on the restarted host' },
    )
    await waitUntilRunning()
    const next = await sdkChat({
      sessionId: session,
      messages: [{ role: 'user', content: 'What was the word?\n[sim] say It was teal.' }],
    })
    expect(next.at(-1).sessionId).toBe(session)
    // The model was sent the session's history, kept off the host (in Postgres) across the restart.
    expect(JSON.stringify(sim.stats.lastBody['/v1/chat/completions'])).toContain('Remember the word teal.')
    const stale = await raw({
      session_id: 'ses-asking',
      messages: [{ role: 'tool', tool_call_id: asked.id, content: 'allow_once' }],
    })
    const body = await stale.json()
    expect([stale.status, body.error.metadata.reason, body.error.message]).toEqual([
      409,
      'interaction_not_pending',
      expect.stringMatching(/has ended/),
    ])
  })
})
