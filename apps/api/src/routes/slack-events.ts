import type { FastifyPluginAsync } from 'fastify'
import {
  AppError,
  checkSlackSignature,
  receiveSlackEvent,
  slackLinkOf,
  unsealSlackSecrets,
  assertInternId,
} from '@roster/shared'
import type { AppDeps } from '../deps.js'
import { slackSettings } from './interns/slack.js'

// POST /slack/events/{internId}: the Events API URL of an intern's Slack app. Slack's signature is
// checked over the raw body (so this plugin keeps it: its JSON parser is its own), then the event
// is recorded and its turn queued in one transaction, and Slack gets its 200 at once (it wants one
// within 3 s): the turn runs in a job. Slack's retries of one event change nothing.

/** Events are small; Slack's own limit on a message's text is 40,000 characters. */
const EVENT_BODY_LIMIT = 256 * 1024

export const slackEventRoutes =
  (deps: AppDeps): FastifyPluginAsync =>
  async (app) => {
    // Scoped to this plugin: the rest of the API keeps its own JSON parser.
    app.removeContentTypeParser('application/json')
    app.addContentTypeParser(
      'application/json',
      { parseAs: 'string', bodyLimit: EVENT_BODY_LIMIT },
      (_req, body, done) => done(null, body),
    )
    app.post<{ Params: { internId: string } }>(
      '/slack/events/:internId',
      { schema: { hide: true } },
      async (req, reply) => {
        const raw = typeof req.body === 'string' ? req.body : ''
        const { internId } = req.params
        const refuse = () => new AppError('unauthorized', 'the request is not signed by this intern’s Slack app')
        try {
          assertInternId(internId)
        } catch {
          throw refuse()
        }
        const link = await slackLinkOf(deps.db, internId)
        if (!link) throw refuse()
        const secrets = unsealSlackSecrets(slackSettings(deps).masterKey, internId, link.sealed)
        const check = checkSlackSignature(
          secrets.signing_secret,
          req.headers['x-slack-request-timestamp'] as string | undefined,
          req.headers['x-slack-signature'] as string | undefined,
          raw,
        )
        if (check !== 'ok')
          throw new AppError(
            'unauthorized',
            check === 'stale'
              ? 'the request’s timestamp is more than five minutes away: Slack’s signature is not accepted'
              : 'the request is not signed by this intern’s Slack app',
          )
        let body: unknown
        try {
          body = JSON.parse(raw)
        } catch {
          throw new AppError('invalid_body', 'invalid request: the body is not JSON')
        }
        // A revoked link posts nothing more; Slack's URL check is answered in every state.
        const outcome = await receiveSlackEvent(
          deps.db,
          { internId, teamId: link.teamId, botUserId: link.botUserId, live: link.state === 'installed' },
          body,
        )
        if (outcome.kind === 'malformed') throw new AppError('invalid_body', 'invalid request: not a Slack event')
        if (outcome.kind === 'turn' && !outcome.duplicate) deps.afterCommit.outboxWritten()
        if (outcome.kind === 'challenge') return reply.type('application/json').send({ challenge: outcome.challenge })
        return reply.code(200).send()
      },
    )
  }
