import { createHash, randomBytes } from 'node:crypto'
import type { FastifyRequest } from 'fastify'
import { parseCookie, stringifySetCookie } from 'cookie'
import { AppError } from '@roster/shared'

// The web console's session cookie (docs/console.md): an opaque id, HttpOnly (no script reads it),
// SameSite=Strict, Secure on https. A request authenticated by it that changes anything must also
// carry the console's own header and come from the console's origin: a form or a script on
// another site can send neither (the header forces a CORS preflight that Roster does not grant).

export const SESSION_COOKIE = 'roster_session'
/** The header a cookie-authenticated change must carry (any value). */
export const CONSOLE_HEADER = 'x-roster-console'

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

export const newSessionId = () => randomBytes(32).toString('base64url')
export const sessionIdHash = (id: string) => createHash('sha256').update(id).digest()

/** The session id the request's cookie names, if any (never logged: it is a credential). */
export function sessionIdOf(req: FastifyRequest): string | undefined {
  const header = req.headers.cookie
  if (!header || !header.includes(SESSION_COOKIE)) return undefined
  const id = parseCookie(header)[SESSION_COOKIE]
  return id && /^[A-Za-z0-9_-]{43}$/.test(id) ? id : undefined
}

/** Refuses a change made with the cookie from anywhere but the console itself (403). */
export function assertSameOriginChange(req: FastifyRequest) {
  if (SAFE_METHODS.has(req.method)) return
  if (req.headers[CONSOLE_HEADER] === undefined)
    throw new AppError(
      'cross_site_refused',
      `a change made with a console session needs the ${CONSOLE_HEADER} header (API clients send an Authorization header instead)`,
    )
  const origin = req.headers.origin
  if (!origin || origin !== ownOrigin(req))
    throw new AppError(
      'cross_site_refused',
      'a change made with a console session must come from the console’s own origin',
    )
}

/** This server's origin as the browser addressed it. */
export const ownOrigin = (req: FastifyRequest) => `${req.protocol}://${req.headers.host ?? ''}`

export function sessionCookie(req: FastifyRequest, id: string, maxAgeSeconds: number, path: string) {
  return stringifySetCookie({
    name: SESSION_COOKIE,
    value: id,
    httpOnly: true,
    sameSite: 'strict',
    secure: req.protocol === 'https',
    path,
    maxAge: maxAgeSeconds,
  })
}

export function clearedCookie(req: FastifyRequest, path: string) {
  return stringifySetCookie({
    name: SESSION_COOKIE,
    value: '',
    httpOnly: true,
    sameSite: 'strict',
    secure: req.protocol === 'https',
    path,
    maxAge: 0,
  })
}
