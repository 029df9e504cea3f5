import { afterAll, beforeAll, expect, it } from 'vitest'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import { simulatorCatalogue } from '@roster/gateway'
import {
  catalogueFile,
  describeNeeding,
  processCommandLines,
  startStack,
  waitFor,
  type Stack,
  useTestTenant,
} from '@roster/testing'
import { OpenRouter } from '@openrouter/sdk'
import { chatThroughClient, streamError } from './helpers.js'

// The API stopped (SIGTERM) while streams are open: an intern's event stream ends at once, a chat
// turn it relays runs on for SHUTDOWN_GRACE_MS and is then ended with the contract's stream_severed
// chunk and [DONE], and the process exits 0, not cut off by its forced exit with the streams unended.
const env = useTestTenant()
let sim: Simulator
let stack: Stack
let internId: string

beforeAll(async () => {
  sim = await startSimulator({ replyTokens: 4 })
  const catalogue = catalogueFile(simulatorCatalogue(sim.url))
  stack = await startStack({
    databaseUrl: env.t.url,
    env: { MODEL_CATALOGUE: catalogue, INTERN_DEFAULT_MODEL: 'roster-sim/chat', SHUTDOWN_GRACE_MS: '1000' },
  })
  const created = await call('POST', '/interns', { name: 'stopper', provision: true })
  internId = created.id
  await waitFor(async () => (await call('GET', `/interns/${internId}`)).status === 'running', {
    timeoutMs: 20_000,
    what: 'the intern to run',
  })
})
afterAll(async () => {
  await stack?.stop()
  await sim?.close()
})

const headers = () => ({ authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' })
async function call(method: string, path: string, body?: unknown) {
  const res = await fetch(`${stack.apiUrl}${path}`, {
    method,
    headers: headers(),
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return res.json() as Promise<any>
}

await describeNeeding(['bubblewrap'], 'the API shutting down (a relayed turn runs a shell command)', () => {
  it('ends its event streams at once and its relayed chat turns after the grace, each properly, and exits 0', async () => {
    const watch = await fetch(`${stack.apiUrl}/interns/${internId}/events`, { headers: headers() })
    expect(watch.status).toBe(200)
    const watched = watch.text()
    const marker = `shutdown-sleeper-${Date.now()}`
    const running = () => processCommandLines().some((l) => l.startsWith(marker))
    const client = new OpenRouter({
      apiKey: env.tenant.keys.user,
      serverURL: stack.apiUrl,
      retryConfig: { strategy: 'none' },
    })
    let exit: Promise<number | null> | undefined
    // Before, the open event stream held the close until the forced exit (status 1), and the turn's
    // stream was cut with no finish chunk.
    const chunks = await chatThroughClient(
      client,
      internId,
      { messages: [{ role: 'user', content: `[sim] call shell {"command":"(exec -a ${marker} sleep 30)"}` }] },
      async () => {
        await waitFor(running, { timeoutMs: 10_000, what: 'the command to run' })
        exit = stack.api.kill('SIGTERM')
      },
    )
    expect(await exit).toBe(0)
    expect(await watched).toMatch(/^event: intern\ndata: /)
    // As the official client reads the end: the chunk's error, then the final chunk.
    expect(streamError(chunks)).toEqual({
      finishReason: 'error',
      model: 'roster-sim/chat', // the stream's one model name, on the chunks the API makes too
      error: {
        code: 502,
        message: expect.stringMatching(/shutting down.*same session/),
        metadata: { reason: 'stream_severed', retryable: true },
      },
      final: expect.objectContaining({ choices: [], usage: null }),
    })
    // The run went with the link: its command is killed and the intern is free for the next API.
    await waitFor(() => !running(), { timeoutMs: 10_000, what: 'the command to be killed' })
  })
})
