import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { AppError, InternIdParams, InternLifecycleError, SlackLinkView } from '@roster/shared'
import { getIntern } from '@roster/shared/interns'
import {
  beginSlackInstall,
  installGrantValid,
  slackAppManifest,
  slackLinkView,
  slackLinkSummary,
  type SlackInstallSettings,
} from '@roster/shared/slack'
import type { AppDeps } from '../../deps.js'
import { fromBrowser, sendPage } from '../../slack/page.js'
import { callerOf } from '../../plugins/caller.js'

// An intern's Slack link (docs/slack.md): its state and install link, the manifest a team makes
// its app from, and the install itself, which a browser opens with the link's signed grant.

const errors = Object.fromEntries([400, 401, 403, 404, 409, 500].map((code) => [code, InternLifecycleError]))

/** The install's settings; without a master key nothing of Slack can be sealed or signed. */
export function slackSettings(deps: AppDeps): SlackInstallSettings {
  if (!deps.slack.install)
    throw new AppError('configuration_error', 'Slack links need VAULT_MASTER_KEY (it seals their credentials)')
  return deps.slack.install
}

export function registerInternSlack(app: FastifyInstance, deps: AppDeps, gate: (req: FastifyRequest) => Promise<void>) {
  const api = app.withTypeProvider<ZodTypeProvider>()

  api.get(
    '/interns/:internId/slack',
    {
      onRequest: gate,
      schema: {
        operationId: 'getInternSlackLink',
        summary: "An intern's Slack link: its state, install link, and the Slack workspace once installed",
        params: InternIdParams,
        response: { 200: SlackLinkView, ...errors },
      },
    },
    async (req) => {
      await getIntern(deps.internReader, callerOf(req), req.params.internId)
      return slackLinkView(deps.db, slackSettings(deps), req.params.internId)
    },
  )

  api.get(
    '/interns/:internId/slack/manifest',
    {
      onRequest: gate,
      schema: {
        operationId: 'getInternSlackManifest',
        summary: "The Slack app manifest to make the intern's app from (its scopes, event and redirect URLs)",
        params: InternIdParams,
        response: { 200: z.record(z.string(), z.unknown()), ...errors },
      },
    },
    async (req) => {
      const intern = await getIntern(deps.internReader, callerOf(req), req.params.internId)
      // Only for an intern linked to Slack (404 otherwise).
      await slackLinkSummary(deps.db, intern.id)
      return slackAppManifest(slackSettings(deps), intern)
    },
  )

  api.get(
    '/interns/:internId/slack/install',
    {
      // A browser follows the install link (its signed grant); an API client may call with its key.
      onRequest: async (req, reply) => {
        const { internId } = req.params as { internId: string }
        const grant = (req.query as { grant?: string }).grant
        if (req.headers.authorization || req.headers['x-api-key']) return gate(req)
        if (installGrantValid(slackSettings(deps), internId, grant)) return
        const why = 'this install link is not valid (or has expired): ask for a fresh one'
        if (fromBrowser(req)) return sendPage(reply, 401, 'Install link not valid', why)
        throw new AppError('unauthorized', why)
      },
      schema: {
        operationId: 'installInternSlackApp',
        summary: "Sends a browser to Slack to install the intern's app (302)",
        params: InternIdParams,
        querystring: z.object({ grant: z.string().max(2048).optional() }),
        response: { 302: z.null(), ...errors },
      },
    },
    async (req, reply) => {
      if (req.caller) await getIntern(deps.internReader, req.caller, req.params.internId)
      const to = await beginSlackInstall(deps.db, slackSettings(deps), req.params.internId).catch(
        async (err: unknown) => {
          // The link opened again after the install (an old message, a second person): a page, not JSON.
          if (!(err instanceof AppError) || err.reason !== 'already_running' || !fromBrowser(req)) throw err
          const link = await slackLinkSummary(deps.db, req.params.internId)
          return sendPage(
            reply,
            409,
            'Already installed',
            `This intern’s Slack app is already installed${link.team?.name ? ` in ${link.team.name}` : ''}: talk to it there (mention it in a channel it is in, or send it a direct message).`,
          )
        },
      )
      if (typeof to !== 'string') return to
      return reply.code(302).header('location', to).header('cache-control', 'no-store').send(null)
    },
  )
}
