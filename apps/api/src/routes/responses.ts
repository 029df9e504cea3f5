import type { FastifyPluginAsync } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { ResponsesRequest } from '@roster/gateway'
import { AppError } from '@roster/shared'
import type { AppDeps } from '../app.js'

/** POST /responses: wiring only; the engine (packages/gateway) does the work. Any valid key. */
export const responsesRoutes = (deps: AppDeps): FastifyPluginAsync => async (app) => {
  app.withTypeProvider<ZodTypeProvider>().post(
    '/responses',
    {
      onRequest: async (req) => {
        if (!(await deps.authenticate(req))) throw new AppError('unauthorized', 'a valid API key is required')
      },
      schema: { operationId: 'createResponse', summary: 'Run a model request (Open Responses format)', body: ResponsesRequest },
    },
    async (req) => deps.responses.respond(req.body),
  )
}
