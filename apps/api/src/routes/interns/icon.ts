import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { InternIdParams, type Caller } from '@roster/shared'
import { clearInternIcon, getInternIcon, ICON_MAX_BYTES, ICON_TYPES, setInternIcon } from '@roster/shared/interns'
import type { AppDeps } from '../../deps.js'

type Gate = (req: FastifyRequest) => Promise<void>

/**
 * GET/PUT/DELETE /interns/{id}/icon: the icon's bytes, as icon_sha256 names them. Its own plugin
 * scope, so the image body parser applies here only (elsewhere a non-JSON body stays a 415).
 */
export function internIconRoutes(deps: AppDeps, read: Gate, write: Gate) {
  return async (app: FastifyInstance) => {
    app.addContentTypeParser(ICON_TYPES, { parseAs: 'buffer', bodyLimit: ICON_MAX_BYTES }, (_req, body, done) =>
      done(null, body),
    )
    const api = app.withTypeProvider<ZodTypeProvider>()

    api.get(
      '/interns/:internId/icon',
      {
        onRequest: read,
        schema: { operationId: 'getInternIcon', summary: "The intern's icon bytes", params: InternIdParams },
      },
      async (req, reply) => {
        const icon = await getInternIcon(deps.db, req.caller as Caller, req.params.internId)
        const etag = `"${icon.sha256}"`
        reply.header('etag', etag).header('cache-control', 'private, max-age=3600')
        if (req.headers['if-none-match'] === etag) return reply.code(304).send()
        return reply.type(icon.contentType).send(icon.bytes)
      },
    )

    api.put(
      '/interns/:internId/icon',
      {
        onRequest: write,
        schema: {
          operationId: 'setInternIcon',
          summary: `Set the intern's icon (${ICON_TYPES.join(', ')}; at most ${ICON_MAX_BYTES} bytes)`,
          params: InternIdParams,
          // The image's bytes, in one of the image types (not JSON): described as binary for each of them.
          consumes: [...ICON_TYPES],
          body: z.instanceof(Buffer).meta({ type: 'string', format: 'binary' }),
          response: { 200: z.object({ icon_sha256: z.string() }) },
        },
      },
      async (req) => {
        return {
          icon_sha256: await setInternIcon(
            deps.db,
            deps.afterCommit,
            req.caller as Caller,
            req.params.internId,
            req.headers['content-type'] ?? '',
            req.body,
          ),
        }
      },
    )

    api.delete(
      '/interns/:internId/icon',
      {
        onRequest: write,
        schema: { operationId: 'deleteInternIcon', summary: "Remove the intern's icon", params: InternIdParams },
      },
      async (req, reply) => {
        await clearInternIcon(deps.db, deps.afterCommit, req.caller as Caller, req.params.internId)
        return reply.code(204).send()
      },
    )
  }
}
