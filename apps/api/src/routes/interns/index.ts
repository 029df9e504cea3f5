import type { FastifyPluginAsync, FastifyRequest } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import {
  CreateInternRequest,
  DeleteAccepted,
  DeleteInternRequest,
  EmptyBody,
  Intern,
  InternIdParams,
  InternLifecycleError,
  InternList,
  InternView,
  ListInternsQuery,
  ProvisionAccepted,
  SuspendDone,
  UpdateInternRequest,
  isAppError,
  AppError,
} from '@roster/shared'
import {
  checkInternAccess,
  createIntern,
  deleteIntern,
  getIntern,
  listInterns,
  provisionIntern,
  suspendIntern,
  updateIntern,
  type InternAccess,
} from '@roster/shared/interns'
import { slackInstallUrl } from '@roster/shared/slack'
import { findModel, type Catalogue } from '@roster/gateway'
import type { AppDeps } from '../../deps.js'
import { withDeadline } from '../../plugins/deadline.js'
import { refuseUnstorableText } from '../../plugins/input-guards.js'
import { sendWithEtag } from '../../plugins/etag.js'
import { registerInternEvents } from './events.js'
import { registerInternSessions } from './sessions.js'
import { registerInternChat } from './chat.js'
import { registerInternSlack } from './slack.js'
import { registerInternWork } from './work.js'
import { internIconRoutes } from './icon.js'
import { callerOf } from '../../plugins/caller.js'

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

export const internRoutes =
  (deps: AppDeps): FastifyPluginAsync =>
  async (app) => {
    app.addHook('preValidation', refuseUnstorableText)
    const api = app.withTypeProvider<ZodTypeProvider>()

    /** Runs before the body is read, so refusals (401/403/404) cost no parsing. */
    const gate = (access: Omit<InternAccess, 'regional'>) => async (req: FastifyRequest) => {
      const caller = await deps.authenticate(req)
      checkInternAccess(caller, {
        ...access,
        regional: deps.config.REGIONAL_HOSTS.includes(req.hostname.toLowerCase()),
      })
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
              after: deps.afterCommit,
              masterKey: deps.config.VAULT_MASTER_KEY,
              slackApps: deps.slack.apps,
            },
            callerOf(req),
            req.body,
            req.headers['idempotency-key'],
          ),
        ).catch((err: unknown) => {
          deps.metrics?.internCreates.inc({ outcome: isAppError(err) ? err.reason : 'internal_error' })
          throw err
        })
        deps.metrics?.internCreates.inc({ outcome: result.status === 201 ? 'created' : 'replayed' })
        return reply.code(result.status).send(result.intern)
      },
    )

    registerInternEvents(app, deps, gate({ collection: false, write: false }))
    registerInternSessions(app, deps, gate({ collection: false, write: false }))
    registerInternChat(app, deps, gate({ collection: false, write: false }))
    registerInternSlack(app, deps, gate({ collection: false, write: false }))
    registerInternWork(app, deps, gate({ collection: false, write: false }), gate({ collection: false, write: true }))
    await app.register(
      internIconRoutes(deps, gate({ collection: false, write: false }), gate({ collection: false, write: true })),
    )

    api.get(
      '/interns',
      {
        onRequest: gate({ collection: true, write: false }),
        schema: {
          operationId: 'listInterns',
          summary: 'List interns, newest first, with an opaque cursor',
          querystring: ListInternsQuery,
          response: { 200: InternList, ...errors },
        },
      },
      async (req, reply) => {
        const caller = callerOf(req)
        // Everything that shapes the page: whose view (created_by_you), which filter, where.
        // JSON, not a joined string: a searched name may hold any separator.
        const key = JSON.stringify([
          caller.workspaceId,
          caller.kind,
          caller.userId,
          req.query.status?.join(','),
          req.query.q,
          req.query.limit,
          req.query.starting_after,
        ])
        const body = await deps.listCache.get(key, () => listInterns(deps.db, caller, req.query))
        // Already serialized (and cached as bytes); the schema stays for validation and OpenAPI.
        return reply
          .type('application/json; charset=utf-8')
          .serializer((payload: string) => payload)
          .send(body as unknown as InternList)
      },
    )

    api.patch(
      '/interns/:internId',
      {
        onRequest: gate({ collection: false, write: true }),
        schema: {
          operationId: 'updateIntern',
          summary: 'Update name, description, instructions or model (applied at the next provision)',
          params: InternIdParams,
          body: UpdateInternRequest,
          response: { 200: InternView, ...errors },
        },
      },
      async (req) => {
        if (req.body.model) assertServedModel(deps.catalogue, req.body.model)
        return updateIntern(deps.db, deps.afterCommit, callerOf(req), req.params.internId, req.body)
      },
    )

    api.post(
      '/interns/:internId/provision',
      {
        onRequest: gate({ collection: false, write: true }),
        schema: {
          operationId: 'provisionIntern',
          summary: 'Start a provisioning run: first boot, or resume after a suspend or a failure',
          params: InternIdParams,
          body: EmptyBody,
          response: { 202: ProvisionAccepted, ...errors },
        },
      },
      async (req, reply) => {
        await provisionIntern(deps.db, deps.afterCommit, callerOf(req), req.params.internId).catch((err: unknown) => {
          // Provisioned once installed: the refusal names where to install it.
          if (isAppError(err) && err.reason === 'slack_install_pending' && deps.slack.install)
            throw new AppError(
              'slack_install_pending',
              `intern ${req.params.internId} is provisioned once its Slack app is installed: ${slackInstallUrl(deps.slack.install, req.params.internId)}`,
            )
          throw err
        })
        return reply.code(202).send({ provisioning: true })
      },
    )

    api.post(
      '/interns/:internId/suspend',
      {
        onRequest: gate({ collection: false, write: true }),
        schema: {
          operationId: 'suspendIntern',
          summary: 'Stop the runtime, keeping disk and configuration',
          params: InternIdParams,
          body: EmptyBody,
          response: { 200: SuspendDone, ...errors },
        },
      },
      async (req) => {
        await suspendIntern(deps.db, deps.afterCommit, callerOf(req), req.params.internId)
        return { suspended: true as const }
      },
    )

    api.delete(
      '/interns/:internId',
      {
        onRequest: gate({ collection: false, write: true }),
        schema: {
          operationId: 'deleteIntern',
          summary: 'Delete an intern: its runtime, private vault and data are removed',
          params: InternIdParams,
          body: DeleteInternRequest.nullish(),
          response: { 202: DeleteAccepted, ...errors },
        },
      },
      async (req, reply) => {
        await deleteIntern(
          deps.db,
          deps.afterCommit,
          callerOf(req),
          req.params.internId,
          req.body ?? { acknowledge_workspace_loss: false },
        )
        return reply.code(202).send({ deleting: true })
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
      async (req, reply) =>
        sendWithEtag(req, reply, await getIntern(deps.internReader, callerOf(req), req.params.internId)),
    )
  }

/**
 * An intern's model is one the catalogue serves, checked where it is set (not at its first chat):
 * 400 naming the models that are served.
 */
function assertServedModel(catalogue: Catalogue, model: string) {
  if (findModel(catalogue, model)) return
  const served = catalogue.models.map((m) => m.id)
  const named =
    served.length > 12 ? `${served.slice(0, 12).join(', ')} and ${served.length - 12} more` : served.join(', ')
  throw new AppError(
    'invalid_body',
    `model: ${JSON.stringify(model)} is not served here; ${served.length ? `the catalogue serves ${named}` : 'the catalogue serves no model'} (GET /api/v1/models)`,
  )
}
