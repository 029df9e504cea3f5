import type { FastifyPluginAsync } from 'fastify'
import { modelsList } from '@roster/gateway'
import { requireKey } from '../plugins/auth.js'
import type { AppDeps } from '../app.js'

/** GET /models: the catalogue, in the shape the official client's models list expects. Any valid key. */
export const modelRoutes = (deps: AppDeps): FastifyPluginAsync => async (app) => {
  const body = JSON.stringify(modelsList(deps.catalogue))
  app.get('/models', { onRequest: requireKey(deps.authenticate), schema: { operationId: 'listModels', summary: 'The models this Roster serves' } }, async (_req, reply) => {
    return reply.type('application/json; charset=utf-8').send(body)
  })
}
