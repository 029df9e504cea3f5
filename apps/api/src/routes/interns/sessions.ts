import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { InternIdParams, type Caller } from '@roster/shared'
import { getIntern } from '@roster/shared/interns'
import { openQuestions, sessionSummaries, sessionTail } from '@roster/shared/repositories'
import type { AppDeps } from '../../deps.js'

// An intern's sessions as the record keeps them (session_entries), read back for people: the
// console's intern page lists them, and its chat page shows a session's history after a reload.
// Roster's extension of the API; what the intern keeps is already scrubbed of secrets' values.

const SESSIONS_LISTED = 100
const QUESTIONS_LISTED = 200
const ITEMS_SHOWN = 500
const TITLE_CHARS = 120

const SessionParams = InternIdParams.extend({ sessionId: z.string().min(1).max(256) })

const SessionSummary = z
  .object({
    id: z.string(),
    title: z.string().describe('The start of its first prompt'),
    items: z.number().int(),
    started_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'InternSessionSummary' })

const SessionTranscript = z
  .object({
    id: z.string(),
    items: z
      .array(z.object({ seq: z.number().int(), created_at: z.string(), item: z.record(z.string(), z.unknown()) }))
      .describe(`Its last ${ITEMS_SHOWN} items (Open Responses input items, and the questions its runs asked)`),
    truncated: z.boolean().describe('Whether earlier items were left out'),
  })
  .meta({ id: 'InternSessionTranscript' })

const OpenQuestion = z
  .object({
    intern_id: z.uuid(),
    intern_name: z.string(),
    session_id: z.string(),
    interaction_id: z.string().describe('The `tool_call_id` a `tool` reply answers'),
    question: z.record(z.string(), z.unknown()).describe('The arguments of its `provide_input` call'),
    asked_at: z.string(),
    expires_at: z.string(),
  })
  .meta({ id: 'OpenQuestion' })

/** A message's text, whether its content is a string or a list of text parts. */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  return content
    .map((p: unknown) => (p && typeof p === 'object' && 'text' in p && typeof p.text === 'string' ? p.text : ''))
    .join('')
}

export function registerInternSessions(
  app: FastifyInstance,
  deps: AppDeps,
  gate: (req: FastifyRequest) => Promise<void>,
) {
  const api = app.withTypeProvider<ZodTypeProvider>()
  api.get(
    '/interns/questions',
    {
      onRequest: gate,
      schema: {
        operationId: 'listOpenQuestions',
        summary: `Questions interns' runs asked that wait for an answer, newest first (at most ${QUESTIONS_LISTED})`,
        response: { 200: z.object({ data: z.array(OpenQuestion) }) },
      },
    },
    async (req) => {
      const caller = req.caller as Caller
      const deadline = deps.config.INTERACTION_DEADLINE_MS
      const rows = await openQuestions(deps.db, {
        workspaceId: caller.workspaceId,
        // An intern's own key sees its own questions only.
        internId: caller.kind === 'intern' ? (caller.internId ?? undefined) : undefined,
        since: new Date(Date.now() - deadline),
        limit: QUESTIONS_LISTED,
      })
      return {
        data: rows.map((r) => ({
          intern_id: r.intern_id,
          intern_name: r.intern_name,
          session_id: r.session_id,
          interaction_id: String(r.item.id),
          question: (r.item.question ?? {}) as Record<string, unknown>,
          asked_at: r.created_at.toISOString(),
          expires_at: new Date(r.created_at.getTime() + deadline).toISOString(),
        })),
      }
    },
  )
  api.get(
    '/interns/:internId/sessions',
    {
      onRequest: gate,
      schema: {
        operationId: 'listInternSessions',
        summary: `An intern's sessions, the most recently active first (at most ${SESSIONS_LISTED})`,
        params: InternIdParams,
        response: { 200: z.object({ data: z.array(SessionSummary) }) },
      },
    },
    async (req) => {
      const intern = await getIntern(deps.internReader, req.caller as Caller, req.params.internId)
      const rows = await sessionSummaries(deps.db, intern.id, SESSIONS_LISTED)
      return {
        data: rows.map((r) => ({
          id: r.session_id,
          title: textOf(r.first_prompt).slice(0, TITLE_CHARS),
          items: r.items,
          started_at: r.started_at.toISOString(),
          updated_at: r.updated_at.toISOString(),
        })),
      }
    },
  )
  api.get(
    '/interns/:internId/sessions/:sessionId',
    {
      onRequest: gate,
      schema: {
        operationId: 'getInternSession',
        summary: "A session's history",
        params: SessionParams,
        response: { 200: SessionTranscript },
      },
    },
    async (req) => {
      const intern = await getIntern(deps.internReader, req.caller as Caller, req.params.internId)
      const rows = await sessionTail(deps.db, intern.id, req.params.sessionId, ITEMS_SHOWN + 1)
      const truncated = rows.length > ITEMS_SHOWN
      return {
        id: req.params.sessionId,
        items: (truncated ? rows.slice(1) : rows).map((r) => ({
          seq: r.seq,
          created_at: r.created_at.toISOString(),
          item: r.item,
        })),
        truncated,
      }
    },
  )
}
