import type { FastifyRequest } from 'fastify'
import { AppError, bearerToken, digestsEqual, isSecret, secretDigest, type Db } from '@roster/shared'
import { liveConsoleSession } from '@roster/shared/repositories'
import { assertSameOriginChange, sessionIdHash, sessionIdOf } from '../console/session-cookie.js'

// The operator's way in (docs/operating.md): OPERATOR_TOKEN as a bearer token, or a web console
// session signed in with it (the fleet page). Sessions keep the token's SHA-256, so a changed token
// ends them; without OPERATOR_TOKEN there is no operator access at all. An operator session is no
// API key: the key routes refuse it, and these refuse keys.

export const OPERATOR_KIND = 'operator'

export function operatorAccess(db: Db, token: string | undefined) {
  const expected = token ? secretDigest(token) : undefined
  /** Whether `given` is the operator token (both sides hashed: the comparison takes the same time whatever was sent). */
  const isToken = (given: string | undefined): boolean =>
    !!expected && given !== undefined && given.length <= 512 && isSecret(given, expected)
  /** A console session signed in as the operator, live and under the current token: when it ends. */
  const session = async (req: FastifyRequest): Promise<{ endsAt: number } | undefined> => {
    const id = sessionIdOf(req)
    if (!id || !expected) return undefined
    const found = await liveConsoleSession(db, sessionIdHash(id))
    if (!found || found.kind !== OPERATOR_KIND || !digestsEqual(found.keyHash, expected)) return undefined
    return { endsAt: found.expiresAt.getTime() }
  }
  /** An onRequest guard: the token as bearer, else an operator session (whose changes come from the console). */
  const guard = async (req: FastifyRequest): Promise<void> => {
    const given = bearerToken(req.headers.authorization)
    if (given !== undefined) {
      if (isToken(given)) return
    } else if (await session(req)) return assertSameOriginChange(req)
    throw new AppError(
      'unauthorized',
      expected
        ? "the operator's token (OPERATOR_TOKEN) is required, as a bearer token or signed in to the console"
        : 'operator access is off: this API has no OPERATOR_TOKEN',
    )
  }
  return { isToken, tokenDigest: expected, session, guard }
}
export type OperatorAccess = ReturnType<typeof operatorAccess>
