import type { FastifyPluginAsync } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import {
  addDestination,
  CreateDestinationBody,
  DestinationListQuery,
  dropDestination,
  getDestination,
  listDestinations,
  patchDestination,
  UpdateDestinationBody,
} from '@roster/shared'
import { requireKey } from '../plugins/auth.js'
import { refuseUnstorableText } from '../plugins/input-guards.js'
import type { AppDeps } from '../deps.js'
import { callerOf } from '../plugins/caller.js'

const Ref = z.object({ id: z.string().min(1).max(200) })
const BODY_LIMIT = 256 * 1024

/**
 * Observability destinations (`client.observability`): where a workspace's generations are sent
 * (webhook, OTLP collector), for the account's management keys; the workers deliver.
 */
export const observabilityRoutes =
  (deps: AppDeps): FastifyPluginAsync =>
  async (app) => {
    app.addHook('preValidation', refuseUnstorableText)
    const api = app.withTypeProvider<ZodTypeProvider>()
    const onRequest = requireKey(deps.authenticate)
    const o = deps.destinations

    api.get(
      '/observability/destinations',
      {
        onRequest,
        schema: {
          operationId: 'listObservabilityDestinations',
          summary: 'Destinations',
          querystring: DestinationListQuery,
        },
      },
      async (req) => listDestinations(o, callerOf(req), req.query),
    )
    api.post(
      '/observability/destinations',
      {
        onRequest,
        bodyLimit: BODY_LIMIT,
        schema: {
          operationId: 'createObservabilityDestination',
          summary: 'Add a destination',
          body: CreateDestinationBody,
        },
      },
      async (req, reply) => reply.code(201).send(await addDestination(o, callerOf(req), req.body)),
    )
    api.get(
      '/observability/destinations/:id',
      { onRequest, schema: { operationId: 'getObservabilityDestination', summary: 'A destination', params: Ref } },
      async (req) => getDestination(o, callerOf(req), req.params.id),
    )
    api.patch(
      '/observability/destinations/:id',
      {
        onRequest,
        bodyLimit: BODY_LIMIT,
        schema: {
          operationId: 'updateObservabilityDestination',
          summary: 'Change a destination',
          params: Ref,
          body: UpdateDestinationBody,
        },
      },
      async (req) => patchDestination(o, callerOf(req), req.params.id, req.body),
    )
    api.delete(
      '/observability/destinations/:id',
      {
        onRequest,
        schema: { operationId: 'deleteObservabilityDestination', summary: 'Delete a destination', params: Ref },
      },
      async (req) => dropDestination(o, callerOf(req), req.params.id),
    )
  }
