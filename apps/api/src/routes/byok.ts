import type { FastifyPluginAsync } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import {
  addByok,
  ByokListQuery,
  CreateByokBody,
  dropByok,
  getByok,
  listByok,
  patchByok,
  UpdateByokBody,
} from '@roster/shared'
import { requireKey } from '../plugins/auth.js'
import { refuseUnstorableText } from '../plugins/input-guards.js'
import type { AppDeps } from '../deps.js'
import { callerOf } from '../plugins/caller.js'

const Ref = z.object({ id: z.string().min(1).max(200) })
const BODY_LIMIT = 64 * 1024

/**
 * Provider keys (`client.byok`): an account's own credentials for the providers Roster routes to,
 * sealed and never returned, for its management keys.
 */
export const byokRoutes =
  (deps: AppDeps): FastifyPluginAsync =>
  async (app) => {
    app.addHook('preValidation', refuseUnstorableText)
    const api = app.withTypeProvider<ZodTypeProvider>()
    const onRequest = requireKey(deps.authenticate)
    const b = deps.byok

    api.get(
      '/byok',
      { onRequest, schema: { operationId: 'listByokKeys', summary: 'Provider keys', querystring: ByokListQuery } },
      async (req) => listByok(b, callerOf(req), req.query),
    )
    api.post(
      '/byok',
      {
        onRequest,
        bodyLimit: BODY_LIMIT,
        schema: { operationId: 'createByokKey', summary: 'Add a provider key', body: CreateByokBody },
      },
      async (req, reply) => reply.code(201).send(await addByok(b, callerOf(req), req.body)),
    )
    api.get(
      '/byok/:id',
      { onRequest, schema: { operationId: 'getByokKey', summary: 'A provider key', params: Ref } },
      async (req) => getByok(b, callerOf(req), req.params.id),
    )
    api.patch(
      '/byok/:id',
      {
        onRequest,
        bodyLimit: BODY_LIMIT,
        schema: {
          operationId: 'updateByokKey',
          summary: 'Change or rotate a provider key',
          params: Ref,
          body: UpdateByokBody,
        },
      },
      async (req) => patchByok(b, callerOf(req), req.params.id, req.body),
    )
    api.delete(
      '/byok/:id',
      { onRequest, schema: { operationId: 'deleteByokKey', summary: 'Delete a provider key', params: Ref } },
      async (req) => dropByok(b, callerOf(req), req.params.id),
    )
  }
