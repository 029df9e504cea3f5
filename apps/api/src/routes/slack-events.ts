import type { FastifyPluginAsync, FastifyRequest } from 'fastify'
import { z } from 'zod'
import { AppError, isStorableText, SLACK_OPEN_FORM } from '@roster/shared'
import { assertInternId } from '@roster/shared/interns'
import { checkSlackSignature, SlackId, receiveSlackEvent, unsealSlackSecrets } from '@roster/shared/slack'
import { recordSlackClick, slackLinkOf, slackQuestionOf, mayAnswerSlackQuestion } from '@roster/shared/repositories'
import type { AppDeps } from '../deps.js'
import { ANSWER_FORM_CALLBACK, answerFormView, answerFromForm, type FormQuestion } from '../slack/answer-form.js'
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
  trigger_id: z.string().max(200).optional(),
  actions: z.array(z.looseObject({ value: z.string().max(2000), action_ts: SlackId })).min(1),
})
/** A question's form, submitted (view_submission): who, which question, the values given. */
const ViewSubmission = z.looseObject({
  type: z.literal('view_submission'),
  user: z.looseObject({ id: SlackId }),
  view: z.looseObject({
    id: SlackId,
    callback_id: z.literal(ANSWER_FORM_CALLBACK),
    private_metadata: z.string().max(3000),
    state: z.looseObject({
      values: z.record(
        z.string().max(255),
        z.record(
          z.string().max(255),
          z.looseObject({
            value: z.string().max(3000).refine(isStorableText).nullish(),
            selected_option: z.looseObject({ value: z.string().max(150).refine(isStorableText) }).nullish(),
          }),
        ),
      ),
    }),
  }),
})
const FormMetadata = z.object({ i: SlackId })
const ButtonValue = z.object({ i: SlackId, a: z.string().min(1).max(200).refine(isStorableText) })

const json = (text: string | null | undefined): unknown => {
  try {
    return text ? JSON.parse(text) : undefined
  } catch {
    return undefined
  }
}

/** A button click on a question's card: who, which question, which answer; undefined for anything else. */
function clickOf(payload: unknown) {
  const action = BlockAction.safeParse(payload)
  if (!action.success) return undefined
  const first = action.data.actions[0]!
  const value = ButtonValue.safeParse(json(first.value))
  if (!value.success) return undefined
  return {
    interactionId: value.data.i,
    answer: value.data.a,
    user: action.data.user.id,
    actionTs: first.action_ts,
    triggerId: action.data.trigger_id,
  }
}

/** Whether `user` may answer the question: the thread's starter, or one of the link's approvers. */

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
      return { link, raw, internId, secrets }
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
        const { link, raw, internId, secrets } = await signedLink(req)
        const payload = json(new URLSearchParams(raw).get('payload'))
        const live = link.state === 'installed' && secrets.bot_token
        const submitted = ViewSubmission.safeParse(payload)
        if (submitted.success) {
          const meta = FormMetadata.safeParse(json(submitted.data.view.private_metadata))
          const q = meta.success && live ? await slackQuestionOf(deps.db, internId, meta.data.i) : null
          if (!q) return reply.code(200).send()
          const user = submitted.data.user.id
          const given = answerFromForm(q.question as FormQuestion, submitted.data.view.state.values)
          // Slack shows errors beside the fields and keeps the form open.
          if ('errors' in given && mayAnswerSlackQuestion(q, user))
            return reply.type('application/json').send({ response_action: 'errors', errors: given.errors })
          const answer = 'answer' in given ? given.answer : SLACK_OPEN_FORM
          await recordSlackClick(deps.db, {
            internId,
            interactionId: q.interactionId,
            user,
            answer,
            actionTs: submitted.data.view.id,
          })
          deps.afterCommit.outboxWritten()
          return reply.code(200).send()
        }
        const click = clickOf(payload)
        if (!click) throw new AppError('invalid_body', 'invalid request: not a Slack block action or form')
        const q = live ? await slackQuestionOf(deps.db, internId, click.interactionId) : null
        if (!q) return reply.code(200).send()
        // The form opens within Slack's 3 seconds of the click, so here, not in a job; anyone else's
        // click goes to the worker, which tells them they may not answer.
        if (click.answer === SLACK_OPEN_FORM && mayAnswerSlackQuestion(q, click.user)) {
          if (q.state === 'pending' && click.triggerId)
            await deps.slack
              .openView(
                secrets.bot_token!,
                click.triggerId,
                answerFormView(q.interactionId, q.question as FormQuestion),
              )
              // The trigger lasts 3 seconds; a form that did not open is clicked again.
              .catch((err: unknown) =>
                req.log.warn({ internId, err: (err as Error).message }, 'the Slack answer form did not open'),
              )
          return reply.code(200).send()
        }
        const { triggerId: _trigger, ...recorded } = click
        await recordSlackClick(deps.db, { internId, ...recorded })
        deps.afterCommit.outboxWritten()
        return reply.code(200).send()
      },
    )
  }
