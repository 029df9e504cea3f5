import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { getIntern, InternIdParams, isAppError, sseEvent, SSE_COMMENT, type Caller } from '@roster/shared'
import type { AppDeps } from '../../deps.js'

const SAFETY_POLL_MS = 5_000
const KEEPALIVE_MS = 15_000

/**
 * GET /interns/{id}/events: the intern as server-sent events, so a client need not poll. The first
 * event is the intern as it is; then one `intern` event per change (status, progress, hostname…),
 * driven by change events, re-read every few seconds in case one was lost, and a final `deleted`
 * event when the intern is gone. Each `data` is the same object GET /interns/{id} answers.
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

  app.withTypeProvider<ZodTypeProvider>().get(
    '/interns/:internId/events',
    {
      onRequest: gate,
      schema: {
        operationId: 'streamInternEvents',
        summary: 'Status and progress changes of an intern, as server-sent events',
        params: InternIdParams,
      },
    },
    async (req, reply) => {
      const caller = req.caller as Caller
      const id = req.params.internId
      const first = await getIntern(deps.internReader, caller, id) // refusals answer as usual, before streaming
      reply.hijack()
      const res = reply.raw
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
        'x-request-id': req.id,
      })
      let last = ''
      const send = (event: string, data: unknown) => {
        const text = JSON.stringify(data)
        if (event === 'intern' && text === last) return
        last = text
        res.write(sseEvent(text, event))
      }
      send('intern', first)

      let loading = false
      let again = false
      const refresh = async () => {
        if (loading) return void (again = true)
        loading = true
        try {
          do {
            again = false
            send('intern', await getIntern(deps.internReader, caller, id))
          } while (again)
        } catch (err) {
          if (isAppError(err) && err.reason === 'not_found') {
            send('deleted', { id })
            return end()
          }
          req.log.warn({ err }, 'intern event stream could not read the intern')
        } finally {
          loading = false
        }
      }
      const stopListening = deps.watch.listen(id, () => void refresh())
      const poll = setInterval(() => void refresh(), SAFETY_POLL_MS)
      const keepalive = setInterval(() => res.write(SSE_COMMENT), KEEPALIVE_MS)
      const end = () => {
        stopListening()
        clearInterval(poll)
        clearInterval(keepalive)
        open.delete(end)
        if (!res.writableEnded) res.end()
      }
      open.add(end)
      req.raw.on('close', end)
    },
  )
}
