import type { FastifyPluginAsync } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import {
  AppError,
  assertManagementKey,
  canonicalGenerationId,
  generationView,
  listGenerations,
  ListGenerationsQuery,
} from '@roster/shared'
import { generationById, generationContent, insertFeedback } from '@roster/shared/repositories'
import { requireKey } from '../plugins/auth.js'
import { refuseUnstorableText } from '../plugins/input-guards.js'
import type { AppDeps } from '../deps.js'
import { callerOf } from '../plugins/caller.js'

const ById = z.object({ id: z.string().min(1).max(200) })
const Feedback = z.strictObject({
  generation_id: z.string().min(1).max(200),
  category: z.string().min(1).max(64),
  comment: z.string().max(4_000).optional(),
})

/**
 * Generations (`client.generations`): one record per model call, as the ledger wrote it; any key of
 * the account that made it reads it (another account's is 404, as an unknown id is). Prompts and
 * completions are kept only where the workspace turned private logging on (`admin workspace
 * io-logging`): the content call answers for those, 404 for the rest. Feedback is kept.
 */
export const generationRoutes =
  (deps: AppDeps): FastifyPluginAsync =>
  async (app) => {
    app.addHook('preValidation', refuseUnstorableText)
    const api = app.withTypeProvider<ZodTypeProvider>()
    const anyKey = requireKey(deps.authenticate)
    const notFound = (id: string) =>
      new AppError(
        'not_found',
        `no generation ${JSON.stringify(id.slice(0, 80))} in this account (yet: it is written within a second of its reply)`,
      )

    /** The account's generation the client's id names (any door's form of it), or 404. */
    const visible = async (accountId: string, id: string) => {
      const canonical = canonicalGenerationId(id)
      // From the replica when there is one; one it has not replayed yet, from the primary.
      const row =
        (await generationById(deps.readDb, accountId, canonical)) ??
        (deps.readDb !== deps.db ? await generationById(deps.db, accountId, canonical) : undefined)
      if (!row) throw notFound(id)
      return row
    }

    api.get(
      '/generations',
      {
        onRequest: anyKey,
        schema: {
          operationId: 'listGenerations',
          summary: 'Search generations: the account’s (a management key) or the key’s own, newest first, with a cursor',
          querystring: ListGenerationsQuery,
        },
      },
      async (req) => listGenerations(deps.readDb, callerOf(req), req.query),
    )

    api.get(
      '/generation',
      {
        onRequest: anyKey,
        schema: {
          operationId: 'getGeneration',
          summary: 'One model call: its tokens, cost and timings',
          querystring: ById,
        },
      },
      async (req) => {
        const row = await visible(callerOf(req).accountId, req.query.id)
        // Named as the client knows it (its door's form of the id).
        return { data: { ...generationView(row), id: req.query.id } }
      },
    )
    api.get(
      '/generation/content',
      {
        onRequest: anyKey,
        schema: {
          operationId: 'listGenerationContent',
          summary: 'A generation’s prompt and completion (kept only under private logging)',
          querystring: ById,
        },
      },
      async (req) => {
        const row = await visible(callerOf(req).accountId, req.query.id)
        const content = await generationContent(deps.db, callerOf(req).accountId, row.request_id)
        if (!content)
          throw new AppError(
            'not_found',
            `the content of generation ${req.query.id} was not kept: its workspace does not log prompts and completions`,
          )
        return { data: content }
      },
    )
    api.post(
      '/generation/feedback',
      {
        onRequest: anyKey,
        bodyLimit: 16 * 1024,
        schema: { operationId: 'submitFeedback', summary: 'Feedback on a generation', body: Feedback },
      },
      async (req) => {
        assertManagementKey(callerOf(req), 'other', 'submitting feedback')
        const row = await visible(callerOf(req).accountId, req.body.generation_id)
        await insertFeedback(deps.db, {
          generationId: row.id,
          keyId: callerOf(req).keyId,
          category: req.body.category,
          comment: req.body.comment ?? null,
        })
        return { data: { success: true as const } }
      },
    )
  }
