import { randomUUID } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { chatFinishError, sseEvent, SSE_COMMENT, type ChatFinishReason, type RunEvent } from '@roster/shared'

// A chat turn's run events from its runtime host, relayed to the client as OpenAI
// chat.completion.chunk events (the contract's §1.4): a role chunk, content and reasoning, one
// finish chunk, a final chunk with `choices: []`, `session_id` and `usage`, then [DONE].

/** The runtime's turn events as chat chunks, to the client as they come. */
export async function relay(
  req: FastifyRequest,
  reply: FastifyReply,
  events: AsyncIterable<RunEvent>,
  upstream: AbortController,
  budgetMs: number,
  provideInput: string,
  ended: (outcome: string) => void,
  shuttingDown: () => boolean,
) {
  reply.hijack()
  const raw = reply.raw
  raw.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-request-id': req.id,
  })
  const id = `chatcmpl-${randomUUID()}`
  const created = Math.floor(Date.now() / 1000)
  let model = 'openrouter/intern'
  let sessionId: string | null = null
  let finished = false
  // One stream, one model name: the role chunk opens the stream when the run does, naming the model
  // the host says the intern calls (a host that names none: `openrouter/intern`), and every chunk
  // after it names the same, whatever the model's own events call it.
  let opened = false
  const open = () => {
    if (opened) return
    opened = true
    raw.write(
      sseEvent({
        id,
        object: 'chat.completion.chunk',
        created,
        model,
        choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }],
      }),
    )
  }
  const write = (chunk: Record<string, unknown>) => {
    open()
    raw.write(sseEvent({ id, object: 'chat.completion.chunk', created, model, ...chunk }))
  }
  const delta = (d: Record<string, unknown>) => write({ choices: [{ index: 0, delta: d, finish_reason: null }] })
  const finish = (
    reason: 'stop' | 'tool_calls' | 'error',
    usage: unknown,
    error?: { reason: ChatFinishReason; message: string; retryable?: boolean },
  ) => {
    if (finished) return
    finished = true
    ended(error ? error.reason : reason)
    // The error sits on the chunk, beside its choice, where the official client reads it (§1.4).
    write({
      choices: [{ index: 0, delta: {}, finish_reason: reason }],
      ...(error ? { error: chatFinishError(error.reason, error.message, { retryable: error.retryable }) } : {}),
    })
    write({ choices: [], session_id: sessionId, usage: usage ?? null })
    raw.write(sseEvent('[DONE]'))
  }
  // The client went away mid-stream: the run is cancelled (the host stops it when its stream closes).
  raw.on('close', () => {
    if (raw.writableFinished) return
    upstream.abort()
    if (!finished) ended('client_closed_request')
    finished = true
  })
  const keepalive = setInterval(() => raw.write(SSE_COMMENT), 30_000)
  const budget = setTimeout(() => {
    finish('error', null, {
      reason: 'timeout',
      message: 'the turn outlived this request (5 minutes); continue with a new prompt in the same session',
    })
    upstream.abort()
  }, budgetMs)
  const onEvent = (event: RunEvent) => {
    if (!opened && 'model' in event && event.model) model = event.model
    if (event.type === 'session') {
      sessionId = event.session_id
      open()
    } else if (event.type === 'text') delta({ content: event.delta })
    else if (event.type === 'reasoning') delta({ reasoning: event.delta })
    else if (event.type === 'pause') {
      // One complete tool call in one chunk; after it the run waits, and usage is always null.
      delta({
        tool_calls: [
          {
            index: 0,
            id: event.interaction_id,
            type: 'function',
            function: { name: provideInput, arguments: event.arguments },
          },
        ],
      })
      finish('tool_calls', null)
    } else if (event.type === 'done') finish('stop', event.usage)
    else if (event.type === 'ended') finish('error', null, { reason: 'run_ended', message: event.message })
    else if (event.type === 'error')
      finish('error', null, { reason: 'turn_failed', message: event.message, retryable: event.retryable })
  }
  try {
    for await (const event of events) onEvent(event)
  } catch {
    // The link to the host broke; what ended is reported below.
  } finally {
    clearInterval(keepalive)
    clearTimeout(budget)
    if (!raw.destroyed) {
      const message = shuttingDown()
        ? 'this API server is shutting down: the turn was cancelled; send the prompt again (same session) to carry on'
        : 'the link to the intern broke before the turn ended'
      finish('error', null, { reason: 'stream_severed', message })
      raw.end()
    }
  }
  return reply
}
