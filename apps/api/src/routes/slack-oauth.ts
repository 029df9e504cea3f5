import type { FastifyPluginAsync } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { completeSlackInstall } from '@roster/shared/slack'
import type { AppDeps } from '../deps.js'
import { sendPage } from '../slack/page.js'
import { slackSettings } from './interns/slack.js'

// Where Slack sends a person back after its authorize page (the app's redirect URL). It answers a
// page for that person: installed (and what happens next), or why not and that it can be tried again.

const Query = z.object({
  code: z.string().max(512).optional(),
  state: z.string().max(2048).optional(),
  error: z.string().max(200).optional(),
})

export const slackOAuthRoutes =
  (deps: AppDeps): FastifyPluginAsync =>
  async (app) => {
    app
      .withTypeProvider<ZodTypeProvider>()
      .get('/slack/oauth/callback', { schema: { hide: true, querystring: Query } }, async (req, reply) => {
        const outcome = await completeSlackInstall(
          deps.db,
          deps.afterCommit,
          slackSettings(deps),
          req.query,
          deps.slack.exchange,
        )
        if (!outcome.ok) return sendPage(reply, 400, 'Not installed', outcome.reason)
        const next =
          outcome.status === 'queued'
            ? 'The intern is being provisioned; it answers in Slack once it is running.'
            : 'The intern is stopped; provision it to talk to it in Slack.'
        return sendPage(reply, 200, 'Installed', `Installed in ${outcome.team ?? 'your Slack workspace'}. ${next}`)
      })
  }
