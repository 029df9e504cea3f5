import type { FastifyRequest } from 'fastify'

/**
 * Whether a request is answered as the Anthropic client expects: on the Messages door, or on another
 * route its clients call (the models list, marked `anthropicClients`) when the Anthropic client
 * calls it (it always sends `anthropic-version`). Such answers carry `request-id` (the client's
 * `_request_id` and an error's `request_id`) and errors in its shape.
 */
export function anthropicClient(req: FastifyRequest): boolean {
  const config = req.routeOptions.config
  return (
    config.errorWire === 'anthropic' ||
    (config.anthropicClients === true && req.headers['anthropic-version'] !== undefined)
  )
}
