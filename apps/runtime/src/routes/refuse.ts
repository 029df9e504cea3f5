import type { FastifyReply } from 'fastify'
import { hostError } from '@roster/protocol'

/** Answers a refusal from the protocol's table of the host's errors (its status and body). */
export function refuse(reply: FastifyReply, ...args: Parameters<typeof hostError>) {
  const { status, body } = hostError(...args)
  return reply.code(status).send(body)
}
