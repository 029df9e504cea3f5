import type { FastifyPluginAsync } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { CompactRequest, ResponsesRequest, parseResponsesRequest } from '@roster/gateway'
import { requireKey } from '../plugins/auth.js'
import type { AppDeps } from '../deps.js'
import { callOptions, cancelledOnClose, runGateway, sparseValidator, type Door } from './gateway-run.js'

export const RESPONSES_BODY_LIMIT = 20 * 1024 * 1024

/** The engine's own door: its stream is the engine's Open Responses events. */
const RESPONSES_DOOR: Door = Object.freeze({ name: 'responses' })

/** POST /responses: wiring only; the engine (packages/gateway) does the work. Any valid key. */
export const responsesRoutes = (deps: AppDeps): FastifyPluginAsync => async (app) => {
  app.withTypeProvider<ZodTypeProvider>().post(
    '/responses',
    {
      onRequest: requireKey(deps.authenticate),
      // Images travel inline as data: URLs, so this route takes more than the API's default.
      bodyLimit: RESPONSES_BODY_LIMIT,
      config: { canonicalErrorTypes: true },
      validatorCompiler: sparseValidator(parseResponsesRequest),
      schema: { operationId: 'createResponse', summary: 'Run a model request (Open Responses format)', body: ResponsesRequest },
    },
    async (req, reply) => (await runGateway(deps, req, reply, req.body, RESPONSES_DOOR)) ?? reply,
  )
}

/**
 * POST /responses/compact: a conversation given whole, compacted by its model; nothing is stored.
 * A request without `model` is a 400, as the schema requires it.
 */
export const compactRoutes = (deps: AppDeps): FastifyPluginAsync => async (app) => {
  app.withTypeProvider<ZodTypeProvider>().post(
    '/responses/compact',
    {
      onRequest: requireKey(deps.authenticate),
      bodyLimit: RESPONSES_BODY_LIMIT,
      config: { canonicalErrorTypes: true },
      schema: { operationId: 'compactResponse', summary: 'Compact a conversation (Open Responses)', body: CompactRequest },
    },
    // A client that goes away cancels the model call with it.
    async (req, reply) => deps.responses.compact(req.body, callOptions(req, cancelledOnClose(reply), 'compact')),
  )
}
