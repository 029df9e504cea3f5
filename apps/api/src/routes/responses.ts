import type { FastifyPluginAsync } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { ResponsesRequest } from '@roster/gateway'
import { requireKey } from '../plugins/auth.js'
import type { AppDeps } from '../app.js'

/** POST /responses: wiring only; the engine (packages/gateway) does the work. Any valid key. */
export const responsesRoutes = (deps: AppDeps): FastifyPluginAsync => async (app) => {
  app.withTypeProvider<ZodTypeProvider>().post(
    '/responses',
    {
      onRequest: requireKey(deps.authenticate),
      schema: { operationId: 'createResponse', summary: 'Run a model request (Open Responses format)', body: ResponsesRequest },
    },
    async (req) => deps.responses.respond(req.body),
  )
}
