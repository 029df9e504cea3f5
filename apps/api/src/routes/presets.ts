import type { FastifyPluginAsync, FastifyRequest } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { AppError, managesAccount, PageQuery } from '@roster/shared'
import {
  createPresetVersion,
  getPreset,
  getPresetVersion,
  listPresets,
  listPresetVersions,
} from '@roster/shared/repositories'
import {
  PresetChatBody,
  PresetInputError,
  PresetMessagesBody,
  PresetResponsesBody,
  PresetSlug,
  presetFromChat,
  presetFromMessages,
  presetFromResponses,
  type PresetContent,
} from '@roster/gateway'
import { requireKey } from '../plugins/auth.js'
import { refuseUnstorableText } from '../plugins/input-guards.js'
import type { AppDeps } from '../deps.js'
import { RESPONSES_BODY_LIMIT } from './responses.js'
import { callerOf } from '../plugins/caller.js'

const SlugParams = z.object({ slug: z.string() })

function slugOf(req: FastifyRequest): string {
  const { slug } = req.params as { slug: string }
  const parsed = PresetSlug.safeParse(slug)
  if (!parsed.success)
    throw new AppError('invalid_body', `invalid slug ${JSON.stringify(slug)}: ${parsed.error.issues[0]!.message}`)
  return parsed.data
}

/** Presets: create (management keys) from a Responses, Chat Completions or Messages body; read (any key of the workspace). */
export const presetRoutes =
  (deps: AppDeps): FastifyPluginAsync =>
  async (app) => {
    app.addHook('preValidation', refuseUnstorableText)
    const typed = app.withTypeProvider<ZodTypeProvider>()
    const anyKey = requireKey(deps.authenticate)

    const creates: [string, string, z.ZodType, (body: unknown) => PresetContent][] = [
      ['/presets/:slug/responses', 'createPresetsResponses', PresetResponsesBody, presetFromResponses],
      ['/presets/:slug/chat/completions', 'createPresetsChatCompletions', PresetChatBody, presetFromChat],
      ['/presets/:slug/messages', 'createPresetsMessages', PresetMessagesBody, presetFromMessages],
    ]
    for (const [path, operationId, body, from] of creates) {
      typed.post(
        path,
        {
          onRequest: anyKey,
          bodyLimit: RESPONSES_BODY_LIMIT,
          schema: {
            operationId,
            summary: 'Create a preset, or its next version, from a request body',
            params: SlugParams,
            body,
          },
          // The body schema describes; presetFrom* checks, so the refusals read the same on every door.
          validatorCompiler: () => (value) => ({ value }),
        },
        async (req) => {
          if (!managesAccount(callerOf(req)))
            throw new AppError('management_key_required', 'only management keys can create presets')
          const slug = slugOf(req)
          let content: PresetContent
          try {
            content = from(req.body)
          } catch (err) {
            if (err instanceof PresetInputError) throw new AppError('invalid_body', err.message)
            throw err
          }
          return { data: await createPresetVersion(deps.db, callerOf(req), slug, content) }
        },
      )
    }

    typed.get(
      '/presets',
      {
        onRequest: anyKey,
        schema: {
          operationId: 'listPresets',
          summary: 'Presets of the workspace, newest-updated first',
          querystring: PageQuery,
        },
      },
      async (req) => listPresets(deps.db, callerOf(req).workspaceId, req.query.limit, req.query.offset),
    )
    typed.get(
      '/presets/:slug',
      {
        onRequest: anyKey,
        schema: { operationId: 'getPreset', summary: 'A preset with its designated version', params: SlugParams },
      },
      async (req) => ({
        data: await getPreset(deps.db, callerOf(req).workspaceId, slugOf(req)),
      }),
    )
    typed.get(
      '/presets/:slug/versions',
      {
        onRequest: anyKey,
        schema: {
          operationId: 'listPresetVersions',
          summary: 'A preset’s versions, oldest first',
          params: SlugParams,
          querystring: PageQuery,
        },
      },
      async (req) =>
        listPresetVersions(deps.db, callerOf(req).workspaceId, slugOf(req), req.query.limit, req.query.offset),
    )
    typed.get(
      '/presets/:slug/versions/:version',
      {
        onRequest: anyKey,
        schema: {
          operationId: 'getPresetVersion',
          summary: 'One version of a preset',
          params: z.object({ slug: z.string(), version: z.coerce.number().int().min(1).max(2_147_483_647) }),
        },
      },
      async (req) => ({
        data: await getPresetVersion(deps.db, callerOf(req).workspaceId, slugOf(req), req.params.version),
      }),
    )
  }
