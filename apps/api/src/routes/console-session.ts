import type { FastifyPluginAsync } from 'fastify'
import { z } from 'zod'
import { AppError, type Caller } from '@roster/shared'
import { insertConsoleSession, revokeConsoleSession, workspaceByRef } from '@roster/shared/repositories'
import type { AppDeps } from '../deps.js'
import { OPERATOR_KIND } from '../operator/operator-access.js'
import {
  assertSameOriginChange,
  clearedCookie,
  newSessionId,
  sessionCookie,
  sessionIdHash,
  sessionIdOf,
} from '../console/session-cookie.js'

// Signing in to the web console (docs/console.md): an API key exchanged once for a server-side
// session, whose opaque id the browser keeps in an HttpOnly cookie (the key itself never sits in
// the browser), or the operator's token (OPERATOR_TOKEN) for the fleet page; what the session is
// (the key's kind and workspace, or the operator, and when it ends); signing out,
// which ends it. Sign-in and sign-out come from the console itself (its header, its origin), so no
// other site can sign a browser in or out.

const SignIn = z.strictObject({ key: z.string().min(1).max(512) })

/** What a session is: a key's kind and workspace (its name too, for the page), or the operator's (no workspace). */
async function sessionView(deps: AppDeps, caller: Caller | undefined, endsAt: number) {
  const workspace = caller ? await workspaceByRef(deps.db, caller.accountId, caller.workspaceId) : undefined
  return {
    kind: caller?.kind ?? OPERATOR_KIND,
    workspace_id: caller?.workspaceId ?? null,
    workspace_name: workspace?.name ?? null,
    expires_at: new Date(endsAt).toISOString(),
    // What an intern without a model of its own runs (the intern page names it).
    intern_default_model: deps.internDefaultModel,
  }
}
const COOKIE_PATH = '/'

export const consoleSessionRoutes =
  (deps: AppDeps): FastifyPluginAsync =>
  async (app) => {
    app.post('/console/session', { schema: { hide: true } }, async (req, reply) => {
      assertSameOriginChange(req)
      const body = SignIn.safeParse(req.body)
      if (!body.success) throw new AppError('invalid_body', 'invalid request: give {"key": "<an API key>"}')
      // The operator's token signs in to the fleet page; anything else is an API key, through the
      // authenticator (unknown keys are throttled here as on every other route).
      const asOperator = deps.operator.isToken(body.data.key)
      const caller = asOperator ? undefined : await deps.authenticate(req, body.data.key)
      if (!asOperator && !caller) throw new AppError('unauthorized', 'a valid API key is required')
      const ttl = deps.config.CONSOLE_SESSION_TTL_S
      const id = newSessionId()
      const expiresAt = new Date(Date.now() + ttl * 1000)
      await insertConsoleSession(deps.db, {
        idHash: sessionIdHash(id),
        keyHash: caller ? Buffer.from(caller.keyHash, 'hex') : deps.operator.tokenDigest!,
        keyId: caller?.keyId ?? null,
        kind: caller?.kind ?? OPERATOR_KIND,
        workspaceId: caller?.workspaceId ?? null,
        expiresAt,
      })
      return reply
        .code(201)
        .header('set-cookie', sessionCookie(req, id, ttl, COOKIE_PATH))
        .header('cache-control', 'no-store')
        .send(await sessionView(deps, caller, expiresAt.getTime()))
    })

    app.get('/console/session', { schema: { hide: true } }, async (req, reply) => {
      // The session's own key as it is now (not an Authorization header sent beside the cookie).
      // Cached as the session's key is (AUTH_CACHE_MS): a page load asks this every time.
      const id = sessionIdOf(req)
      const session = id ? await deps.authenticate.consoleSession(id) : undefined
      const operator = id && !session ? await deps.operator.session(req) : undefined
      if (!session && !operator) throw new AppError('unauthorized', 'not signed in to the console')
      return reply
        .header('cache-control', 'no-store')
        .send(await sessionView(deps, session?.caller, session?.endsAt ?? operator!.endsAt))
    })

    app.delete('/console/session', { schema: { hide: true } }, async (req, reply) => {
      assertSameOriginChange(req)
      const id = sessionIdOf(req)
      if (id) {
        const idHash = sessionIdHash(id)
        await revokeConsoleSession(deps.db, idHash)
        deps.authenticate.forgetSession(idHash)
      }
      return reply.code(204).header('set-cookie', clearedCookie(req, COOKIE_PATH)).send()
    })
  }
