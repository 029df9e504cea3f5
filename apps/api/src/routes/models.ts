import type { FastifyPluginAsync } from 'fastify'
import { modelEndpoints, modelsList } from '@roster/gateway'
import { AppError } from '@roster/shared'
import { requireKey } from '../plugins/auth.js'
import type { AppDeps } from '../deps.js'

/** GET /models: the catalogue, in the shape the official client's models list expects. Any valid key. */
export const modelRoutes =
  (deps: AppDeps): FastifyPluginAsync =>
  async (app) => {
    const body = JSON.stringify(modelsList(deps.catalogue))
    app.get(
      '/models',
      {
        onRequest: requireKey(deps.authenticate),
        schema: { operationId: 'listModels', summary: 'The models this Roster serves' },
      },
      async (_req, reply) => {
        return reply.type('application/json; charset=utf-8').send(body)
      },
    )
    app.get<{ Params: { author: string; slug: string } }>(
      '/models/:author/:slug/endpoints',
      {
        onRequest: requireKey(deps.authenticate),
        schema: { operationId: 'listEndpoints', summary: 'The provider endpoints that serve one model' },
      },
      async (req) => {
        const id = `${req.params.author}/${req.params.slug}`
        const data = modelEndpoints(deps.catalogue, id)
        if (!data) throw new AppError('not_found', `no model named ${id} is served here; GET /api/v1/models lists them`)
        return { data }
      },
    )
  }
