import { randomUUID } from 'node:crypto'
import type { FastifyInstance, FastifyReply } from 'fastify'
import { ChatRequest, sseEvent, type RunEvent } from '@roster/protocol'
import { refuse } from './refuse.js'
import type { Interns } from '../interns.js'
import type { RunStream } from '../agent/daemon.js'

/**
 * A prompt for an intern, or a reply to what its paused run asked. Answered with a stream of the
 * run's own events (the API turns them into the chat route's chunks): `session` first, then text,
 * reasoning and tool events, then `done` with the usage, `pause` with a question (the stream ends,
 * the run waits for the reply), `error`, or `ended`. Refusals are the protocol's: 202 steered, 409
 * busy, 503 busy_paused (too many paused runs), 404 interaction_unknown, 409
 * interaction_not_pending, 400 bad_answer, 409 intern_not_ready, 503 draining; for an attach, 404
 * turn_unknown and 409 turn_attached. A client that goes away while a run streams cancels it, with
 * any command it runs (a detached turn, started with a turn_id, runs on).
 */
export function chatRoutes(app: FastifyInstance, interns: Interns) {
  app.post<{ Params: { id: string } }>('/v1/interns/:id/chat', async (req, reply) => {
    const intern = interns.get(req.params.id)
    if (!intern) return refuse(reply, 'intern_not_ready', `intern ${req.params.id} is not running on this host`)
    const placement = req.headers['x-roster-placement']
    if (placement !== undefined && Number(placement) !== intern.spec.generation)
      return refuse(reply, 'placement_stale', `intern ${intern.id} runs here under another placement`)
    const body = ChatRequest.safeParse(req.body)
    if (!body.success) return refuse(reply, 'bad_request', body.error.message)
    // Draining, a host takes no new turn (a reply may still finish a run that has not been ended),
    // and says so for an intern it has already stopped: the caller waits for the intern's next host.
    const draining = () =>
      refuse(reply, 'draining', 'this runtime host is draining: its interns are moving to other hosts; retry shortly')
    if (interns.draining && (!intern.running || !('reply' in body.data || 'attach' in body.data))) return draining()
    if (!intern.running) return refuse(reply, 'intern_not_ready', `intern ${req.params.id} is not running on this host`)
    const daemon = interns.daemonOf(intern)
    const stream = eventStream(reply, () => daemon.detach(stream))
    if ('reply' in body.data) {
      const outcome = await daemon.reply(
        body.data.session_id,
        body.data.reply.interaction_id,
        body.data.reply.content,
        stream,
      )
      if ('resumed' in outcome) return reply
      if ('busy' in outcome) return refuse(reply, 'busy', outcome.busy)
      if ('unknown' in outcome) return refuse(reply, 'interaction_unknown', outcome.unknown)
      if ('notPending' in outcome) return refuse(reply, 'interaction_not_pending', outcome.notPending)
      return refuse(reply, 'bad_answer', outcome.badAnswer)
    }
    if ('attach' in body.data) {
      const outcome = daemon.attach(body.data.attach, stream)
      if ('attached' in outcome) return reply
      if ('taken' in outcome) return refuse(reply, 'turn_attached', outcome.taken)
      return refuse(reply, 'turn_unknown', outcome.unknown)
    }
    const outcome = daemon.prompt(
      body.data.session_id ?? `ses_${randomUUID()}`,
      body.data.message,
      body.data.approval_mode ?? 'self-drive',
      stream,
      body.data.turn_id,
      body.data.subagent,
    )
    if ('started' in outcome || 'attached' in outcome) return reply
    if ('steered' in outcome) return reply.code(202).send({ session_id: body.data.session_id, status: 'steered' })
    return refuse(reply, outcome.status === 503 ? 'busy_paused' : 'busy', outcome.busy)
  })
}

/**
 * A run's events as Server-Sent Events on `reply`, the response opened at the first event (so a
 * refusal can still be plain JSON). A client gone before the stream ended calls `gone`.
 */
function eventStream(reply: FastifyReply, gone: () => void): RunStream {
  const raw = reply.raw
  let opened = false
  return {
    send(event: RunEvent) {
      if (!opened) {
        opened = true
        reply.hijack()
        raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
        raw.on('close', () => raw.writableFinished || gone())
      }
      raw.write(sseEvent(event))
    },
    end() {
      if (opened) raw.end()
    },
  }
}
