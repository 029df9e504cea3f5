import type { FastifyPluginAsync, FastifyRequest } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import {
  checkInternAccess,
  createIntern,
  CreateInternRequest,
  getIntern,
  Intern,
  InternIdParams,
  InternLifecycleError,
  InternView,
  type InternAccess,
} from '@roster/shared'
import type { AppDeps } from '../../app.js'
import { withDeadline } from '../../plugins/deadline.js'

const CreateHeaders = z.object({
  'idempotency-key': z
    .string()
    .min(1)
    .max(255)
    .optional()
    .describe('1 to 255 characters; when absent a key is derived from the caller and the body'),
})

const errors = Object.fromEntries(
  [400, 401, 403, 404, 408, 409, 413, 415, 500, 502].map((code) => [code, InternLifecycleError]),
)

export const internRoutes = (deps: AppDeps): FastifyPluginAsync => async (app) => {
  const api = app.withTypeProvider<ZodTypeProvider>()

  /** Runs before the body is read, so refusals (401/403/404) cost no parsing. */
  const gate = (access: Omit<InternAccess, 'regional'>) => async (req: FastifyRequest) => {
    const caller = await deps.authenticate(req)
    checkInternAccess(caller, { ...access, regional: deps.config.REGIONAL_HOSTS.includes(req.hostname.toLowerCase()) })
    req.caller = caller
  }

  api.post(
    '/interns',
    {
      onRequest: gate({ collection: true, write: true, create: true }),
      schema: {
        operationId: 'createIntern',
        summary: 'Create an intern (and its private vault); optionally start provisioning',
        headers: CreateHeaders,
        body: CreateInternRequest,
        response: { 200: Intern, 201: Intern, ...errors },
      },
    },
    async (req, reply) => {
      const deadline = deps.config.INTERN_CREATE_DEADLINE_MS
      const result = await withDeadline(deadline, 'POST /interns', () =>
        createIntern(
          {
            db: deps.db,
            vault: deps.vault,
            internLimitPerMember: deps.config.INTERN_LIMIT_PER_MEMBER,
            batcher: deps.createBatcher,
            outboxWritten: deps.ringOutboxBell,
          },
          req.caller!,
          req.body,
          req.headers['idempotency-key'],
        ),
      )
      return reply.code(result.status).send(result.intern)
    },
  )

  api.get(
    '/interns/:internId',
    {
      onRequest: gate({ collection: false, write: false }),
      schema: {
        operationId: 'getIntern',
        summary: 'Retrieve an intern',
        params: InternIdParams,
        response: { 200: InternView, ...errors },
      },
    },
    async (req) => getIntern(deps.db, req.caller!, req.params.internId),
  )
}
