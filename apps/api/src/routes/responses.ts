import type { FastifyPluginAsync } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { CompactRequest, ResponsesRequest, parseResponsesRequest } from '@roster/gateway'
import { requireKey } from '../plugins/auth.js'
import { admit } from '../plugins/fair-use.js'
import type { AppDeps } from '../deps.js'
import { callOptions, cancelledOnClose, doorRoute, ownKeys, RESPONSES_BODY_LIMIT } from './gateway-run.js'

export { RESPONSES_BODY_LIMIT } from './gateway-run.js'

/** POST /responses: the engine's own door, its request the neutral one and its stream the engine's events. */
export const responsesRoutes = (deps: AppDeps) =>
  doorRoute(deps, {
    aliases: 'openai',
    path: '/responses',
    operationId: 'createResponse',
    summary: 'Run a model request (Open Responses format)',
    schema: ResponsesRequest,
    parse: parseResponsesRequest,
    name: 'responses',
  })

/**
 * POST /responses/compact: a conversation given whole, compacted by its model; nothing is stored.
 * A request without `model` is a 400, as the schema requires it.
 */
export const compactRoutes =
  (deps: AppDeps): FastifyPluginAsync =>
  async (app) => {
    app.withTypeProvider<ZodTypeProvider>().post(
      '/responses/compact',
      {
        onRequest: [requireKey(deps.authenticate, { inference: true }), admit(deps.admission, RESPONSES_BODY_LIMIT)],
        bodyLimit: RESPONSES_BODY_LIMIT,
        config: { errorWire: 'gateway' },
        schema: {
          operationId: 'compactResponse',
          summary: 'Compact a conversation (Open Responses)',
          body: CompactRequest,
        },
      },
      // A client that goes away cancels the model call with it.
      async (req, reply) => {
        const opts = callOptions(deps, req, cancelledOnClose(reply), 'compact')
        const byok = ownKeys(deps, req)
        if (byok) opts.byok = await byok
        return deps.responses.compact(req.body, opts)
      },
    )
  }
