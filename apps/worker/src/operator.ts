import Fastify, { type FastifyInstance } from 'fastify'
import type { Queue } from 'bullmq'
import { createBullBoard } from '@bull-board/api'
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter'
import { FastifyAdapter } from '@bull-board/fastify'
import {
  fastifyListenerOptions,
  guardConnections,
  isSecret,
  maxConnections,
  secretDigest,
  type ListenerSettings,
} from '@roster/shared'

// The operator surface: the queue dashboard (bull-board) on a listener of its own, off unless
// OPERATOR_PORT is set, and only for whoever holds OPERATOR_TOKEN: as the password of HTTP Basic
// authentication (what a browser asks for; any user name) or as a bearer token.

/** Whether an Authorization header carries the token; both sides hashed, so the comparison takes the same time whatever was sent. */
export function operatorCheck(token: string) {
  const expected = secretDigest(token)
  return (authorization: string | undefined) => {
    if (!authorization) return false
    const [scheme, value = ''] = authorization.split(' ', 2)
    let given: string | undefined
    if (scheme?.toLowerCase() === 'bearer') given = value
    else if (scheme?.toLowerCase() === 'basic') {
      const decoded = Buffer.from(value, 'base64').toString('utf8')
      given = decoded.slice(decoded.indexOf(':') + 1)
    }
    return isSecret(given, expected)
  }
}

export async function startOperatorSurface(
  queue: Queue,
  opts: { host: string; port: number; token: string; limits: ListenerSettings },
): Promise<FastifyInstance> {
  const app = Fastify({ logger: false, ...fastifyListenerOptions(opts.limits) })
  guardConnections(app.server, maxConnections(opts.limits))
  const allowed = operatorCheck(opts.token)
  app.addHook('onRequest', async (req, reply) => {
    if (!allowed(req.headers.authorization)) {
      return reply
        .code(401)
        .header('www-authenticate', 'Basic realm="Roster operator", charset="UTF-8"')
        .send({ error: 'the operator surface needs OPERATOR_TOKEN' })
    }
  })
  const board = new FastifyAdapter()
  board.setBasePath('/queues')
  createBullBoard({
    queues: [new BullMQAdapter(queue, { readOnlyMode: false })],
    serverAdapter: board,
    options: { uiConfig: { boardTitle: 'Roster queues' } },
  })
  await app.register(board.registerPlugin(), { prefix: '/queues' })
  app.get('/', async (_req, reply) => reply.redirect('/queues'))
  await app.listen({ host: opts.host, port: opts.port })
  return app
}
