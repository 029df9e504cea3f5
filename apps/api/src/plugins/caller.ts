import type { FastifyRequest } from 'fastify'
import type { Caller } from '@roster/shared'

/**
 * The request's caller, on a route whose onRequest hook authenticated it (requireKey, a gate). A
 * route that reads it without one is a programming error, said so here with the route's name rather
 * than left to a non-null assertion to surface as a TypeError somewhere later.
 */
export function callerOf(req: FastifyRequest): Caller {
  if (!req.caller)
    throw new Error(`${req.method} ${req.routeOptions.url ?? req.url}: read its caller, but no hook authenticated it`)
  return req.caller
}
