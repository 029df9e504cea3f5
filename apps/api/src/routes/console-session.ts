import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { z } from 'zod'
import { parseCookie, stringifySetCookie } from 'cookie'
import {
  AppError,
  asPerson,
  auditActor,
  generateApiKey,
  recordAudit,
  resolveCallerByHash,
  type Caller,
} from '@roster/shared'
import {
  consoleKeyOf,
  insertConsoleKey,
  insertConsoleSession,
  membersByEmail,
  revokeConsoleSession,
  workspaceByRef,
  type AccountMemberRow,
} from '@roster/shared/repositories'
import type { AppDeps } from '../deps.js'
import { OPERATOR_KIND } from '../operator/operator-access.js'
import { FLOW_COOKIE, SsoRefusal } from '../console/sso.js'
import {
  assertSameOriginChange,
  ownOrigin,
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

/**
 * What a session is: a key's kind and workspace (its name too, for the page), or the operator's (no
 * workspace); for a person signed in through single sign-on, who they are and their role.
 */
async function sessionView(deps: AppDeps, caller: Caller | undefined, endsAt: number) {
  const workspace = caller ? await workspaceByRef(deps.db, caller.accountId, caller.workspaceId) : undefined
  return {
    kind: caller?.kind ?? OPERATOR_KIND,
    member: caller?.person
      ? { id: caller.person.userId, email: caller.person.email, role: caller.person.admin ? 'admin' : 'member' }
      : null,
    workspace_id: caller?.workspaceId ?? null,
    workspace_name: workspace?.name ?? null,
    expires_at: new Date(endsAt).toISOString(),
    // What an intern without a model of its own runs (the intern page names it).
    intern_default_model: deps.internDefaultModel,
  }
}
const COOKIE_PATH = '/'

/** A new session acting as `caller` (a key, a member's console key) or the operator (no caller). */
async function openSession(deps: AppDeps, caller: Caller | undefined, userId: string | null = null) {
  const ttl = deps.config.CONSOLE_SESSION_TTL_S
  const id = newSessionId()
  const expiresAt = new Date(Date.now() + ttl * 1000)
  await insertConsoleSession(deps.db, {
    idHash: sessionIdHash(id),
    keyHash: caller ? Buffer.from(caller.keyHash, 'hex') : deps.operator.tokenDigest!,
    keyId: caller?.keyId ?? null,
    kind: caller?.kind ?? OPERATOR_KIND,
    workspaceId: caller?.workspaceId ?? null,
    userId,
    expiresAt,
  })
  return { id, ttl, expiresAt }
}

/** A sign-in, in the audit log (docs/audit.md). */
async function auditSignIn(deps: AppDeps, req: FastifyRequest, caller: Caller, how: 'key' | 'sso') {
  await recordAudit(deps.db, {
    accountId: caller.accountId,
    ...(await auditActor(deps.db, caller)),
    via: 'console',
    action: 'session.sign_in',
    targetType: 'session',
    targetId: null,
    after: { how, kind: caller.kind, role: caller.person ? (caller.person.admin ? 'admin' : 'member') : null },
    ip: req.ip,
  })
}

/** The console, relative to the callback (/api/v1/console/sso/callback), so a proxy's path prefix is kept. */
const CONSOLE_FROM_CALLBACK = '../../../../console/'

/** The cookie that carries why a sign-in was refused to the sign-in page, which shows it once. */
export const REFUSAL_COOKIE = 'roster_sso_error'

/**
 * Back to the console's sign-in page, which shows why. The reason travels in a short-lived cookie
 * of Roster's own, not in the address: a link elsewhere cannot put words of its own on the page.
 */
const backToConsole = (req: FastifyRequest, reply: FastifyReply, why: string) =>
  reply
    .header(
      'set-cookie',
      stringifySetCookie({
        name: REFUSAL_COOKIE,
        value: why, // (encoded by the cookie library)
        sameSite: 'lax',
        secure: req.protocol === 'https',
        path: '/',
        maxAge: 60,
      }),
    )
    .redirect(CONSOLE_FROM_CALLBACK, 302)

/** Sign-ins one client address may begin a minute (each keeps a flow in Redis for ten minutes). */
const STARTS_PER_MINUTE = 30

/**
 * The cookie that binds a sign-in's state to the browser that began it (cleared with maxAge 0). Its
 * path is the site's root: behind a proxy's path prefix the callback's path is not Roster's own.
 */
const flowCookie = (req: FastifyRequest, state: string, maxAge: number) =>
  stringifySetCookie({
    name: FLOW_COOKIE,
    value: state,
    httpOnly: true,
    sameSite: 'lax',
    secure: req.protocol === 'https',
    path: '/',
    maxAge,
  })

/**
 * The caller a member's console sessions act as: their console key (made on their first sign-in,
 * its secret never kept), with who they are; undefined when that key was disabled.
 */
async function memberCaller(deps: AppDeps, member: AccountMemberRow): Promise<Caller | undefined> {
  let key = await consoleKeyOf(deps.db, member.id)
  if (!key) {
    const { hash, prefix } = generateApiKey()
    await insertConsoleKey(deps.db, {
      workspaceId: member.workspace_id,
      userId: member.id,
      hash,
      prefix,
      name: `console: ${member.email ?? member.id}`.slice(0, 100),
    })
    key = await consoleKeyOf(deps.db, member.id)
  }
  const caller = key && (await resolveCallerByHash(deps.db, key.hash))
  return caller ? asPerson(caller, member) : undefined
}

/** At most `limit` takes a minute per key (a client address), in this process; at most 10,000 keys kept. */
function perMinute(limit: number) {
  const windows = new Map<string, { minute: number; count: number }>()
  return {
    take(key: string): boolean {
      const minute = Math.floor(Date.now() / 60_000)
      const w = windows.get(key)
      if (!w || w.minute !== minute) {
        if (windows.size >= 10_000) windows.clear()
        windows.set(key, { minute, count: 1 })
        return true
      }
      return ++w.count <= limit
    },
  }
}

export const consoleSessionRoutes =
  (deps: AppDeps): FastifyPluginAsync =>
  async (app) => {
    const starts = perMinute(STARTS_PER_MINUTE)
    app.post('/console/session', { schema: { hide: true } }, async (req, reply) => {
      assertSameOriginChange(req)
      const body = SignIn.safeParse(req.body)
      if (!body.success) throw new AppError('invalid_body', 'invalid request: give {"key": "<an API key>"}')
      // The operator's token signs in to the fleet page; anything else is an API key, through the
      // authenticator (unknown keys are throttled here as on every other route).
      const asOperator = deps.operator.isToken(body.data.key)
      const caller = asOperator ? undefined : await deps.authenticate(req, body.data.key)
      if (!asOperator && !caller) throw new AppError('unauthorized', 'a valid API key is required')
      const { id, ttl, expiresAt } = await openSession(deps, caller)
      if (caller) await auditSignIn(deps, req, caller, 'key')
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

    // ── single sign-on (OIDC_ISSUER) ──────────────────────────────────────────────────────────────
    // The sign-in page asks whether it is offered (and what to call it) before anyone is signed in.
    app.get('/console/sso', { schema: { hide: true } }, async () => ({
      enabled: deps.sso !== undefined,
      name: deps.sso?.name ?? null,
    }))

    // The console's "Sign in with …" link: off to the issuer, the flow's state kept in a cookie of
    // this browser's (Lax: it must come back with the issuer's redirect, a cross-site navigation).
    app.get('/console/sso/start', { schema: { hide: true } }, async (req, reply) => {
      if (!deps.sso) throw new AppError('not_found', 'single sign-on is not configured (OIDC_ISSUER)')
      if (!starts.take(req.ip))
        throw new AppError('rate_limited', 'too many sign-ins begun from this address; retry in a minute', {
          retryAfter: 60,
        })
      let flow
      try {
        flow = await deps.sso.begin(deps.sso.redirectUri(ownOrigin(req)))
      } catch (err) {
        req.log.warn({ err }, 'single sign-on could not begin')
        return backToConsole(req, reply, 'the identity provider cannot be reached: try again shortly')
      }
      return reply
        .header('set-cookie', flowCookie(req, flow.state, flow.maxAge))
        .header('cache-control', 'no-store')
        .redirect(flow.url, 302)
    })

    // The issuer's redirect back: the person it vouches for, matched to a member by e-mail, signed in.
    app.get('/console/sso/callback', { schema: { hide: true } }, async (req, reply) => {
      if (!deps.sso) throw new AppError('not_found', 'single sign-on is not configured (OIDC_ISSUER)')
      reply.header('set-cookie', flowCookie(req, '', 0)).header('cache-control', 'no-store')
      const query = new URLSearchParams(req.url.slice(req.url.indexOf('?') + 1 || req.url.length))
      const cookieState = parseCookie(req.headers.cookie ?? '')[FLOW_COOKIE]
      try {
        const who = await deps.sso.complete(query, cookieState)
        const member = (await membersByEmail(deps.db, who.email))[0]
        if (!member) throw new SsoRefusal(`${who.email} is not a member here: ask an admin to add you`)
        if (member.disabled_at) {
          await recordAudit(deps.db, {
            accountId: member.account_id,
            actorType: 'member',
            actorId: member.id,
            actorLabel: who.email,
            via: 'console',
            action: 'session.sign_in_refused',
            targetType: 'session',
            targetId: null,
            after: { how: 'sso', reason: 'member disabled' },
            ip: req.ip,
          })
          throw new SsoRefusal(`${who.email} is disabled here: ask an admin`)
        }
        const caller = await memberCaller(deps, member)
        if (!caller) throw new SsoRefusal(`the console access of ${who.email} is disabled: ask an admin`)
        const { id, ttl } = await openSession(deps, caller, member.id)
        await auditSignIn(deps, req, caller, 'sso')
        return reply
          .header('set-cookie', [flowCookie(req, '', 0), sessionCookie(req, id, ttl, COOKIE_PATH)])
          .redirect(CONSOLE_FROM_CALLBACK, 302)
      } catch (err) {
        if (!(err instanceof SsoRefusal)) {
          req.log.error({ err }, 'single sign-on failed')
          return backToConsole(req, reply, 'the sign-in failed: try again')
        }
        return backToConsole(req, reply, err.message)
      }
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
