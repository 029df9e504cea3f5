import type { FastifyPluginAsync, FastifyRequest } from 'fastify'
import { z } from 'zod'
import {
  AppError,
  assertInternId,
  checkSlackSignature,
  isStorableText,
  SlackId,
  receiveSlackEvent,
  recordSlackClick,
  slackLinkOf,
  slackQuestionOf,
  unsealSlackSecrets,
} from '@roster/shared'
import type { AppDeps } from '../deps.js'
import { slackSettings } from './interns/slack.js'

// What an intern's Slack app sends to Roster: events (POST /slack/events/{internId}) and clicks on
// its cards (POST /slack/interactivity/{internId}). Slack's signature is checked over the raw body
// (so this plugin keeps it: its parsers are its own); then the event or click is recorded with its
// job in one transaction, and Slack gets its 200 at once (it wants one within 3 s): the work runs
// in a job. Slack's retries of one event change nothing.

/** Events are small; Slack's own limit on a message's text is 40,000 characters. */
const BODY_LIMIT = 256 * 1024

const BlockAction = z.looseObject({
  type: z.literal('block_actions'),
  user: z.looseObject({ id: SlackId }),
  actions: z.array(z.looseObject({ value: z.string().max(2000), action_ts: SlackId })).min(1),
})
const ButtonValue = z.object({ i: SlackId, a: z.string().min(1).max(200).refine(isStorableText) })

const json = (text: string | null | undefined): unknown => {
  try {
    return text ? JSON.parse(text) : undefined
  } catch {
    return undefined
  }
}

/** A button click on a question's card: who, which question, which answer; undefined for anything else. */
function clickOf(payload: string | null) {
  const action = BlockAction.safeParse(json(payload))
  if (!action.success) return undefined
  const first = action.data.actions[0]!
  const value = ButtonValue.safeParse(json(first.value))
  if (!value.success) return undefined
  return { interactionId: value.data.i, answer: value.data.a, user: action.data.user.id, actionTs: first.action_ts }
}

export const slackEventRoutes =
  (deps: AppDeps): FastifyPluginAsync =>
  async (app) => {
    // Scoped to this plugin: the rest of the API keeps its own parsers.
    app.removeContentTypeParser('application/json')
    const keepRaw = (_req: unknown, body: string | Buffer, done: (err: null, body: string) => void) =>
      done(null, String(body))
    app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: BODY_LIMIT }, keepRaw)
    app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: BODY_LIMIT }, keepRaw)

    /** The intern's link, once the request is shown to be signed by its app (401 otherwise). */
    const signedLink = async (req: FastifyRequest<{ Params: { internId: string } }>) => {
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
      if (check === 'stale')
        throw new AppError(
          'unauthorized',
          'the request’s timestamp is more than five minutes away: Slack’s signature is not accepted',
        )
      if (check !== 'ok') throw refuse()
      return { link, raw, internId }
    }

    app.post<{ Params: { internId: string } }>(
      '/slack/events/:internId',
      { schema: { hide: true } },
      async (req, reply) => {
        const { link, raw, internId } = await signedLink(req)
        const body = json(raw)
        if (body === undefined) throw new AppError('invalid_body', 'invalid request: the body is not JSON')
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

    // A click on a question's card; the worker checks who clicked and answers the paused run.
    app.post<{ Params: { internId: string } }>(
      '/slack/interactivity/:internId',
      { schema: { hide: true } },
      async (req, reply) => {
        const { link, raw, internId } = await signedLink(req)
        const click = clickOf(new URLSearchParams(raw).get('payload'))
        if (!click) throw new AppError('invalid_body', 'invalid request: not a Slack block action')
        if (link.state === 'installed' && (await slackQuestionOf(deps.db, internId, click.interactionId))) {
          await recordSlackClick(deps.db, { internId, ...click })
          deps.afterCommit.outboxWritten()
        }
        return reply.code(200).send()
      },
    )
  }
