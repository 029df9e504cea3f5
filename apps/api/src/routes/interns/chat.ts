import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { AppError, settledWithin, type Caller, type ChatRequest } from '@roster/shared'
import { MoveWait } from '@roster/shared/fleet'
import { assertInternId, visibleOrNotFound } from '@roster/shared/interns'
import type { AppDeps } from '../../deps.js'
import { createTurnLimit } from './turn-limit.js'
import { admit } from '../../plugins/fair-use.js'
import { callHost, hostRefusal, placementCache } from './chat-host-call.js'
import { relay } from './chat-relay.js'

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

type Body = z.infer<typeof InternChatRequest>

const textOf = (content: unknown) =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content.map((p) => (p?.type === 'text' && typeof p.text === 'string' ? p.text : '')).join('')
      : ''

/** What the host is sent: the last message, a user prompt or a tool reply, checked. */
function turnOf(body: Body): ChatRequest {
  const last = body.messages.at(-1)!
  if (last.role === 'tool') {
    if (!body.session_id)
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
    return { session_id: body.session_id, reply: { interaction_id: last.tool_call_id, content: answer } }
  }
  if (last.role !== 'user')
    throw new AppError('invalid_body', 'invalid request: the last message must be a user prompt or a tool reply')
  const prompt = textOf(last.content)
  if (!prompt.trim()) throw new AppError('invalid_body', 'invalid request: the prompt is empty')
  if (prompt.length > 32_000)
    throw new AppError('invalid_body', 'invalid request: the prompt is longer than 32,000 characters')
  return { session_id: body.session_id, message: prompt, approval_mode: body.approval_mode }
}

export function registerInternChat(app: FastifyInstance, deps: AppDeps, gate: (req: FastifyRequest) => Promise<void>) {
  const overLimit = createTurnLimit(deps.redis, deps.config.QUEUE_PREFIX, deps.config.CHAT_TURNS_PER_MINUTE, app.log)
  const placements = placementCache(deps)
  /** Refuses a turn the caller may not start now: the intern not running (nor moving), no host credentials, over the turn rate. */
  const assertMayChat = async (
    caller: Caller,
    intern: { status: string },
    internId: string,
    moves: MoveWait,
    reply: FastifyReply,
  ) => {
    if (intern.status !== 'running' && !(await moves.moving()))
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
  }
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
      // A relay: the turn runs on the intern's host, so the stream is held to KEY_CONCURRENCY, never squeezed.
      onRequest: [gate, admit(deps.admission, CHAT_BODY_LIMIT, 'relay')],
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
      const forward = turnOf(req.body)
      const upstream = new AbortController()
      const moves = new MoveWait(deps.db, internId, deps.config.CHAT_MOVE_WAIT_MS, upstream.signal)
      await assertMayChat(caller, intern, internId, moves, reply)
      const outcome = await callHost(deps, placements, req, internId, forward, upstream, moves)
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
