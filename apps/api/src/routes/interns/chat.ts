import { randomUUID } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import {
  AppError,
  chatFinishError,
  internMoving,
  sseEvent,
  SSE_COMMENT,
  type ChatFinishReason,
  assertInternId,
  RuntimeUnavailableError,
  settledWithin,
  visibleOrNotFound,
  type Caller,
  type ChatOutcome,
  type ChatRequest,
  type HostErrorBody,
  type HostErrorCode,
  type RunEvent,
} from '@roster/shared'
import { Lru } from '../../plugins/lru.js'
import type { AppDeps } from '../../deps.js'
import { createTurnLimit } from './turn-limit.js'
import { admit } from '../../plugins/fair-use.js'

/** The chat route's body limit: the API's default (the contract's 1 MiB). */
const CHAT_BODY_LIMIT = 1_048_576

// POST /interns/{internId}/chat/completions: a prompt to a running intern, relayed to its runtime
// host (which runs the turn with the intern's own key, tools and sandbox), its events streamed back
// as OpenAI chat.completion.chunk events: a role chunk, content and reasoning, one finish chunk,
// a final chunk with `choices: []`, `session_id` and `usage`, then [DONE] (the contract's §1.4).
// A run that asks its user something (a permission in manual mode, a question) streams one tool
// call, `<INTERN_PROVIDE_INPUT_NAME>` with the question as its arguments, and ends; the client's
// `tool` message with the answer continues that run on the reply's own stream. A prompt for the
// session whose turn is running goes into that turn (steering: 202).

const Part = z.looseObject({ type: z.string(), text: z.string().optional() })
const Message = z.looseObject({
  role: z.enum(['user', 'tool', 'assistant', 'system', 'developer']),
  content: z.union([z.string(), z.array(Part), z.null()]).optional(),
  tool_call_id: z.string().min(1).max(128).optional(),
})
export const InternChatRequest = z.looseObject({
  stream: z.literal(true, 'the chat route only streams: send stream: true'),
  messages: z.array(Message).min(1),
  session_id: z.string().min(1).max(256).optional(),
  approval_mode: z.enum(['self-drive', 'manual']).optional(),
  model: z.string().min(1).max(256).optional(),
})
const Params = z.object({ internId: z.string() })

const textOf = (content: unknown) =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content.map((p) => (p?.type === 'text' && typeof p.text === 'string' ? p.text : '')).join('')
      : ''

export function registerInternChat(app: FastifyInstance, deps: AppDeps, gate: (req: FastifyRequest) => Promise<void>) {
  const overLimit = createTurnLimit(deps.redis, deps.config.QUEUE_PREFIX, deps.config.CHAT_TURNS_PER_MINUTE, app.log)
  const placements = new PlacementCache((id) => deps.runtime.placement(id), 1_000)
  /** Whether the fleet is moving the intern: placed again lately, after its host died or drained, and not suspended since. */
  const moving = async (internId: string) =>
    deps.config.CHAT_MOVE_WAIT_MS !== 0 && (await internMoving(deps.db, internId))
  // Shutting down, the turns this process relays may run on for SHUTDOWN_GRACE_MS; each still going
  // is then ended with the contract's stream_severed chunk and [DONE] (its run is cancelled with the
  // link), not cut off with no end by the process's exit. The server's close waits for them.
  const relays = new Map<Promise<unknown>, () => void>()
  app.addHook('preClose', async () => {
    const settled = () => Promise.allSettled([...relays.keys()])
    await settledWithin(settled(), deps.config.SHUTDOWN_GRACE_MS)
    for (const sever of relays.values()) sever()
    await settled()
  })
  app.withTypeProvider<ZodTypeProvider>().post(
    '/interns/:internId/chat/completions',
    {
      onRequest: [gate, admit(deps.admission, CHAT_BODY_LIMIT)],
      schema: {
        operationId: 'createInternChatCompletion',
        summary: 'Chat with a running intern (Server-Sent Events)',
        params: Params,
        body: InternChatRequest,
      },
      config: { errorWire: 'chat' },
    },
    async (req, reply) => {
      const caller = req.caller as Caller
      const { internId } = req.params
      // Read through the interns cache (change events evict it); the host is the last word on running.
      assertInternId(internId)
      const intern = visibleOrNotFound(caller, await deps.internReader.get(internId), internId, (r) => r.workspace_id)
      const last = req.body.messages.at(-1)!
      let forward: ChatRequest
      if (last.role === 'tool') {
        if (!req.body.session_id)
          throw new AppError('invalid_body', 'invalid request: a tool reply needs the session_id of the run that asked')
        if (!last.tool_call_id)
          throw new AppError(
            'invalid_body',
            'invalid request: a tool reply needs the tool_call_id of the interaction it answers',
          )
        const answer = textOf(last.content)
        if (answer.length > 64_000)
          throw new AppError('invalid_body', 'invalid request: an answer is at most 64,000 characters')
        // approval_mode is ignored on a reply: the run keeps the mode it started with.
        forward = { session_id: req.body.session_id, reply: { interaction_id: last.tool_call_id, content: answer } }
      } else {
        if (last.role !== 'user')
          throw new AppError('invalid_body', 'invalid request: the last message must be a user prompt or a tool reply')
        const prompt = textOf(last.content)
        if (!prompt.trim()) throw new AppError('invalid_body', 'invalid request: the prompt is empty')
        if (prompt.length > 32_000)
          throw new AppError('invalid_body', 'invalid request: the prompt is longer than 32,000 characters')
        forward = { session_id: req.body.session_id, message: prompt, approval_mode: req.body.approval_mode }
      }
      if (intern.status !== 'running' && !(await moving(internId)))
        throw new AppError('intern_not_ready', `intern ${internId} is not running (status ${intern.status})`)
      if (!deps.config.VAULT_MASTER_KEY)
        throw new AppError(
          'intern_unreachable',
          'this API cannot call runtime hosts: host credentials are derived from VAULT_MASTER_KEY, which it does not have',
        )
      const wait = await overLimit(caller)
      if (wait) {
        reply.header('retry-after', String(wait))
        throw new AppError(
          'rate_limited',
          `too many chat turns this minute (CHAT_TURNS_PER_MINUTE: ${deps.config.CHAT_TURNS_PER_MINUTE}); retry in ${wait} s`,
        )
      }

      // An intern the fleet is moving (its host died or drains) is waited for, up to
      // CHAT_MOVE_WAIT_MS, and the prompt goes to its new host: a move is not a failed turn. Only a
      // call its host refused, or one that never reached it, is sent again (never one a host took).
      const upstream = new AbortController()
      const left = () => upstream.abort()
      req.raw.once('close', left)
      const deadline = Date.now() + deps.config.CHAT_MOVE_WAIT_MS
      const waitForMove = async (failure: () => AppError) => {
        const remaining = deadline - Date.now()
        if (remaining <= 0 || upstream.signal.aborted) throw failure()
        await new Promise((r) => setTimeout(r, Math.min(MOVE_POLL_MS, remaining)))
      }
      let outcome: ChatOutcome
      let attempt = 0
      try {
        for (;;) {
          // Where it is placed and whether it runs: from the last second's answer on a first try (a
          // host refuses a placement it no longer holds, and the next try reads the record afresh).
          const placed = attempt++ === 0 ? await placements.get(internId) : await placements.fresh(internId)
          if (!placed || placed.status !== 'running') {
            if (!(await moving(internId))) throw new AppError('intern_not_ready', `intern ${internId} is not running`)
            await waitForMove(
              () =>
                new AppError(
                  'intern_not_ready',
                  `intern ${internId} is moving to another runtime host and did not run there within ${deps.config.CHAT_MOVE_WAIT_MS} ms; retry shortly`,
                  { retryAfter: 5 },
                ),
            )
            continue
          }
          try {
            outcome = await deps.runtime.chat(
              placed,
              internId,
              forward,
              upstream.signal,
              deps.config.RUNTIME_ANSWER_TIMEOUT_MS,
            )
          } catch (err) {
            if ((err as { code?: string }).code === 'UND_ERR_HEADERS_TIMEOUT') {
              throw new AppError(
                'timeout',
                `the intern did not answer within ${deps.config.RUNTIME_ANSWER_TIMEOUT_MS} ms`,
                { cause: err, status: 504 },
              )
            }
            const unreachable = () =>
              new AppError('intern_unreachable', 'the intern could not be reached', { cause: err })
            // A host that cannot be connected to may have died: the fleet moves its interns once it is declared dead.
            if (err instanceof RuntimeUnavailableError && err.undelivered) {
              await waitForMove(unreachable)
              continue
            }
            throw unreachable()
          }
          // A host that joined again since the placement was read wants its new epoch's credential: read it afresh, once.
          if (outcome.kind === 'refused' && outcome.error.error === 'unauthorized' && attempt === 1) continue
          if (
            outcome.kind === 'refused' &&
            (WHILE_MOVING.has(outcome.error.error) ||
              (outcome.error.error === 'intern_not_ready' && (await moving(internId))))
          ) {
            const refusal = outcome
            await waitForMove(() => hostRefusal(internId, refusal.status, refusal.error))
            continue
          }
          break
        }
      } finally {
        req.raw.off('close', left)
      }
      if (outcome.kind === 'steered') {
        // Steered: the prompt went into the session's running turn; its effect shows on that turn's stream.
        deps.metrics?.chatTurns.inc({ outcome: 'steered' })
        return reply.code(202).send({ session_id: outcome.session_id, status: 'steered' })
      }
      if (outcome.kind === 'refused') throw hostRefusal(internId, outcome.status, outcome.error)
      let shuttingDown = false
      const relayed = relay(
        req,
        reply,
        outcome.events,
        upstream,
        deps.config.CHAT_REQUEST_BUDGET_MS,
        deps.config.INTERN_PROVIDE_INPUT_NAME,
        (outcome) => deps.metrics?.chatTurns.inc({ outcome }),
        () => shuttingDown,
      )
      relays.set(relayed, () => {
        shuttingDown = true
        upstream.abort()
      })
      return relayed.finally(() => relays.delete(relayed))
    },
  )
}

/** Placements read in the last `ttlMs`, shared by concurrent readers; `fresh` reads the record and keeps that. */
class PlacementCache<T> {
  private readonly entries = new Lru<string, { value: Promise<T>; at: number }>(10_000)
  constructor(
    private readonly read: (id: string) => Promise<T>,
    private readonly ttlMs: number,
  ) {}

  get(id: string): Promise<T> {
    const hit = this.entries.get(id)
    return hit && Date.now() - hit.at < this.ttlMs ? hit.value : this.fresh(id)
  }

  fresh(id: string): Promise<T> {
    const value = this.read(id)
    this.entries.set(id, { value, at: Date.now() })
    value.catch(() => this.entries.delete(id))
    return value
  }
}

/** How often a chat waiting for a moving intern looks again. */
const MOVE_POLL_MS = 250
/** A host's refusals that mean the intern is between hosts (its host drains, was cut off, or no longer holds it). */
const WHILE_MOVING = new Set<HostErrorCode>(['draining', 'placement_stale', 'placement_unverified'])

/** A host's refusal of a chat call, by its code, as the chat route's error. */
function hostRefusal(internId: string, status: number, { error, message }: HostErrorBody): AppError {
  switch (error) {
    case 'busy':
    case 'busy_paused':
      // A running turn ends soon; a full set of paused runs waits for answers.
      return new AppError('busy', message, {
        status: error === 'busy_paused' ? 503 : 409,
        retryAfter: error === 'busy_paused' ? 5 : 1,
      })
    case 'bad_answer':
      return new AppError('invalid_body', `answer not accepted (the run stays paused): ${message}`)
    case 'bad_request':
      return new AppError('invalid_body', `invalid request: ${message}`)
    case 'interaction_unknown':
    case 'interaction_not_pending':
      return new AppError(error, message)
    case 'intern_not_ready':
    case 'placement_stale':
    case 'not_found':
      // The record places it there, but the host does not hold it (yet, or any more).
      return new AppError('intern_not_ready', `intern ${internId} is not running on its host`)
    // The host joined again under a new credential twice while this chat looked it up: ours, not the caller's, to fix.
    case 'unauthorized':
    case 'placement_unverified':
    case 'draining':
      return new AppError('intern_unreachable', `the intern's host cannot take it now (${message}); retry shortly`, {
        status: 502,
      })
    default:
      // Any other refusal: the host's own 4xx is a rejection (retrying will not help); a 5xx, unreachable.
      if (status < 500)
        return new AppError('intern_rejected', `the intern's host refused the request (${status}): ${message}`)
      return new AppError('intern_unreachable', `the intern's host answered ${status}`)
  }
}

/** The runtime's turn events as chat chunks, to the client as they come. */
async function relay(
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
