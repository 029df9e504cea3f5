import { createHash } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'

/**
 * A strong ETag over the exact body this caller gets (created_by_you differs per key), and 304 Not
 * Modified when If-None-Match already names it, so a poller that sees no change downloads nothing.
 * The body is serialized once: the tag is computed over the bytes that are sent.
 */
export function sendWithEtag<T>(req: FastifyRequest, reply: FastifyReply, body: T) {
  const json = JSON.stringify(body)
  const etag = `"${createHash('sha1').update(json).digest('base64url')}"`
  reply.header('etag', etag).header('cache-control', 'no-cache')
  const given = req.headers['if-none-match']
  if (given && given.split(',').some((t) => t.trim().replace(/^W\//, '') === etag || t.trim() === '*')) {
    return reply.code(304).send()
  }
  return reply
    .type('application/json; charset=utf-8')
    .serializer((payload: string) => payload)
    .send(json as unknown as T)
}
