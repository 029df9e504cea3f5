import type { FastifyPluginAsync } from 'fastify'
import { modelsList } from '@roster/gateway'
import { AppError } from '@roster/shared'
import type { AppDeps } from '../app.js'

/** GET /models: the catalogue, in the shape the official client's models list expects. Any valid key. */
export const modelRoutes = (deps: AppDeps): FastifyPluginAsync => async (app) => {
  const body = JSON.stringify(modelsList(deps.catalogue))
  app.get('/models', { schema: { operationId: 'listModels', summary: 'The models this Roster serves' } }, async (req, reply) => {
    if (!(await deps.authenticate(req))) throw new AppError('unauthorized', 'a valid API key is required')
    return reply.type('application/json; charset=utf-8').send(body)
  })
}
