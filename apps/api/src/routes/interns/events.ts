import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { InternIdParams, isAppError, sseEvent, SSE_COMMENT, type Caller, type InternView } from '@roster/shared'
import { getIntern, getInterns } from '@roster/shared/interns'
import type { AppDeps } from '../../deps.js'

const SAFETY_POLL_MS = 5_000
const KEEPALIVE_MS = 15_000
/** Interns one list stream follows: a page of a list, not a workspace. */
const MAX_WATCHED = 100

const WatchQuery = z.strictObject({
  ids: z
    .string()
    .transform((v) => [
      ...new Set(
        v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
      ),
    ])
    .pipe(z.array(z.uuid()).min(1).max(MAX_WATCHED))
    .describe(`The interns to follow: 1 to ${MAX_WATCHED} comma-separated ids`),
})

/**
 * GET /interns/{id}/events: the intern as server-sent events, so a client need not poll. The first
 * event is the intern as it is; then one `intern` event per change (status, progress, hostname…),
 * driven by change events, re-read every few seconds in case one was lost, and a final `deleted`
 * event when the intern is gone. Each `data` is the same object GET /interns/{id} answers.
 * GET /interns/events?ids=… does the same for up to 100 interns at once (a page of a list: the
 * console's), on one connection; `deleted` then does not end it, and an id the caller cannot see
 * is `deleted` at once, as one since gone would be (nothing tells which ids exist elsewhere).
 */
export function registerInternEvents(
  app: FastifyInstance,
  deps: AppDeps,
  gate: (req: FastifyRequest) => Promise<void>,
) {
  const open = new Set<() => void>()
  // Before the server's close, which waits for every response to end: an open stream never would.
  app.addHook('preClose', async () => {
    for (const end of open) end()
  })

  /** Streams the interns `ids`, from what each is now, until the client goes (or `endWhenGone` and all are gone). */
  const stream = async (req: FastifyRequest, reply: FastifyReply, ids: string[], endWhenGone: boolean) => {
    const caller = req.caller as Caller
    const read = async (id: string): Promise<InternView | undefined> => {
      try {
        return await getIntern(deps.internReader, caller, id)
      } catch (err) {
        if (isAppError(err) && err.reason === 'not_found') return undefined
        throw err
      }
    }
    // A client may leave while the interns are read: then nothing is started for it.
    let left = false
    reply.raw.once('close', () => (left = true))
    // One intern asked for by its own path: refusals (a malformed or unseen id) answer as usual, before streaming.
    const firsts = endWhenGone
      ? [await getIntern(deps.internReader, caller, ids[0]!)]
      : await getInterns(deps.internReader, caller, ids)
    reply.hijack()
    const res = reply.raw
    if (left || res.destroyed) return void res.end()
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-request-id': req.id,
    })
    const last = new Map<string, string>()
    const gone = new Set<string>()
    const send = (id: string, intern: InternView | undefined) => {
      // A read that lands after the stream ended (the client left meanwhile) writes nothing.
      if (gone.has(id) || res.writableEnded) return
      if (!intern) {
        gone.add(id)
        res.write(sseEvent(JSON.stringify({ id }), 'deleted'))
        if (endWhenGone || gone.size === ids.length) end()
        return
      }
      const text = JSON.stringify(intern)
      if (text === last.get(id)) return
      last.set(id, text)
      res.write(sseEvent(text, 'intern'))
    }

    // One read at a time per intern; a change during a read reads it again after.
    const loading = new Set<string>()
    const again = new Set<string>()
    /** Change events heard per intern: a poll's read older than one is not sent (the change's own read is). */
    const heard = new Map<string, number>()
    const refresh = async (id: string) => {
      if (loading.has(id)) return void again.add(id)
      loading.add(id)
      try {
        do {
          again.delete(id)
          send(id, await read(id))
        } while (again.has(id))
      } catch (err) {
        req.log.warn({ err }, 'intern event stream could not read an intern')
      } finally {
        loading.delete(id)
      }
    }
    const stops = ids.map((id) =>
      deps.watch.listen(id, () => {
        heard.set(id, (heard.get(id) ?? 0) + 1)
        void refresh(id)
      }),
    )
    // Every followed intern read again in one query, in case a change event was lost.
    const pollAll = async () => {
      const due = ids.filter((id) => !gone.has(id) && !loading.has(id))
      if (!due.length) return
      const before = due.map((id) => heard.get(id) ?? 0)
      try {
        const now = await getInterns(deps.internReader, caller, due)
        due.forEach((id, i) => {
          if ((heard.get(id) ?? 0) === before[i] && !loading.has(id)) send(id, now[i])
        })
      } catch (err) {
        req.log.warn({ err }, 'intern event stream could not read its interns')
      }
    }
    const poll = setInterval(() => void pollAll(), SAFETY_POLL_MS)
    const keepalive = setInterval(() => res.write(SSE_COMMENT), KEEPALIVE_MS)
    const end = () => {
      for (const stop of stops) stop()
      clearInterval(poll)
      clearInterval(keepalive)
      open.delete(end)
      if (!res.writableEnded) res.end()
    }
    open.add(end)
    res.once('close', end)
    ids.forEach((id, i) => send(id, firsts[i]))
  }

  const api = app.withTypeProvider<ZodTypeProvider>()
  api.get(
    '/interns/events',
    {
      onRequest: gate,
      schema: {
        operationId: 'streamInternsEvents',
        summary: 'Status and progress changes of up to 100 interns, as server-sent events',
        querystring: WatchQuery,
      },
    },
    (req, reply) => stream(req, reply, req.query.ids, false),
  )
  api.get(
    '/interns/:internId/events',
    {
      onRequest: gate,
      schema: {
        operationId: 'streamInternEvents',
        summary: 'Status and progress changes of an intern, as server-sent events',
        params: InternIdParams,
      },
    },
    (req, reply) => stream(req, reply, [req.params.internId], true),
  )
}
