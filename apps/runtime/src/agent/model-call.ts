import { setTimeout as sleep } from 'node:timers/promises'
import { request } from 'undici'
import { injectTrace, readEventStream } from '@roster/platform'
import { TurnFailed, type AgentEvent, type AgentSetup, type Json, type ModelReply } from './agent-setup.js'

export { TurnFailed, type Json, type ModelReply } from './agent-setup.js'
import { HTTP_TOOL, SUBAGENT_TOOL, TOOLS } from './agent-tools.js'

// A turn's model call: /responses, streamed, as the intern (its own key), with its tools; text and
// reasoning leave as they come; a call refused for a passing reason is made again.

/** A session item, and a tool's arguments: JSON objects. */

/** What the turn reads of /responses' stream events. */
interface ReplyEvent {
  type: string
  delta?: string
  response?: ModelReply
}

/**
 * A model call the API refused for a passing reason (429, 5xx, or a connection that broke before
 * its answer) is made again, as the official clients do (OpenAI's and Anthropic's: twice, backing
 * off from half a second, Retry-After obeyed): a provider's hiccup or a moment of load on the API is
 * not the user's failed turn. A refused call showed nothing and was not charged, so the second call
 * duplicates nothing (a connection that broke mid-call is the exception: the API records, cancelled,
 * a call its provider had begun answering, and that part is charged, as for any client that leaves).
 * A wait asked for longer than MAX_RETRY_WAIT_MS fails the turn at once, saying so: the user, not a
 * hidden sleep, decides whether to wait that long.
 */
export const MODEL_CALL_RETRIES = 2
const FIRST_RETRY_WAIT_MS = 500
const MAX_RETRY_WAIT_MS = 8_000

/** How long to wait before the `attempt`-th retry of a call that failed with `err`; undefined: do not retry. */
export function retryWait(err: unknown, attempt: number): number | undefined {
  if (!(err instanceof TurnFailed) || !err.retryable || attempt > MODEL_CALL_RETRIES) return undefined
  if (err.retryAfterMs !== undefined) return err.retryAfterMs <= MAX_RETRY_WAIT_MS ? err.retryAfterMs : undefined
  // Exponential with jitter (a quarter either way), so interns failed together do not retry together.
  const base = FIRST_RETRY_WAIT_MS * 2 ** (attempt - 1)
  return Math.round(base * (0.75 + Math.random() * 0.5))
}

/** Retry-After as milliseconds: delta-seconds or an HTTP date; undefined when absent or unreadable. */
function retryAfterMs(header: string | string[] | undefined): number | undefined {
  const value = Array.isArray(header) ? header[0] : header
  if (value === undefined || value.trim() === '') return undefined
  const seconds = Number(value)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const at = Date.parse(value)
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now())
}

/**
 * One streamed call of /responses as the intern: text and reasoning leave as they come. Made again
 * (retryWait) when it fails for a passing reason before the API has answered 200.
 */
export async function modelTurn(
  setup: AgentSetup,
  input: Json[],
  last: boolean,
  emit: (e: AgentEvent) => void,
  signal?: AbortSignal,
): Promise<ModelReply> {
  for (let attempt = 1; ; attempt++) {
    const call = { answered: false }
    try {
      return await modelCall(setup, input, last, emit, call, signal)
    } catch (err) {
      // Once the API has answered 200 the call is under way (and may be charged): a failure in its
      // stream fails the turn, as the official clients do not retry a stream either.
      const wait = call.answered || signal?.aborted ? undefined : retryWait(err, attempt)
      if (wait === undefined) throw err
      setup.onRetry?.(err as TurnFailed, wait, attempt)
      await sleep(wait, undefined, { signal })
    }
  }
}

async function modelCall(
  setup: AgentSetup,
  input: Json[],
  last: boolean,
  emit: (e: AgentEvent) => void,
  call: { answered: boolean },
  signal?: AbortSignal,
): Promise<ModelReply> {
  const body = {
    model: setup.model,
    instructions: setup.instructions ?? undefined,
    input,
    tools: [
      ...TOOLS,
      ...(setup.http ? [HTTP_TOOL] : []),
      ...(setup.startSubagent ? [SUBAGENT_TOOL] : []),
      ...(setup.extraTools?.definitions ?? []),
      ...(setup.webSearch ? [{ type: 'openrouter:web_search' }] : []),
    ],
    tool_choice: last ? 'none' : 'auto',
    stream: true,
  }
  const res = await request(`${setup.apiBase}/responses`, {
    method: 'POST',
    headers: injectTrace({
      authorization: `Bearer ${setup.apiKey}`,
      'content-type': 'application/json',
      accept: 'text/event-stream',
    }),
    body: JSON.stringify(body),
    signal,
  }).catch((err: Error) => {
    // The API could not be reached, or the connection broke before its answer: a passing failure.
    if (signal?.aborted) throw err
    throw new TurnFailed(`the model call could not reach the API: ${err.message}`, 502)
  })
  if (res.statusCode !== 200) {
    const text = await res.body.text()
    let error: ModelReply['error']
    try {
      error = (JSON.parse(text) as ModelReply).error
    } catch {
      // Not JSON: the text itself says what went wrong.
    }
    throw new TurnFailed(
      `the model call answered ${res.statusCode}: ${error?.message ?? text.slice(0, 300)}`,
      res.statusCode,
      {
        error,
        retryAfterMs: retryAfterMs(res.headers['retry-after']),
      },
    )
  }
  call.answered = true
  let final: ModelReply | undefined
  let failure: ModelReply['error'] | undefined
  for await (const event of readEventStream(res.body, (data) =>
    data === '[DONE]' ? undefined : (JSON.parse(data) as ReplyEvent),
  )) {
    if (!event) continue
    const model = event.response?.model ?? setup.model
    if (event.type === 'response.output_text.delta') emit({ type: 'text', delta: event.delta ?? '', model })
    else if (event.type === 'response.reasoning_summary_text.delta')
      emit({ type: 'reasoning', delta: event.delta ?? '', model })
    else if (event.type === 'response.completed' || event.type === 'response.incomplete') final = event.response
    else if (event.type === 'response.failed') failure = event.response?.error ?? {}
  }
  if (failure) throw new TurnFailed(failure.message ?? 'the model call failed', 502, { error: failure })
  if (!final) throw new TurnFailed('the model stream ended before the reply was finished', 502)
  return final
}
