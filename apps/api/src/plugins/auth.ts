import type { FastifyRequest } from 'fastify'
import { hash } from 'node:crypto'
import { AppError, bearerToken, resolveCaller, type Caller, type Db } from '@roster/shared'

/**
 * Resolves the bearer key to a Caller. Lookups are cached briefly (AUTH_CACHE_MS) because every
 * poll of an intern would otherwise cost a query; revoking a key takes effect within that window.
 * The cache is keyed by a digest of the token, so plaintext keys are never held as map keys.
 */
export function createAuthenticator(db: Db, cacheMs: number) {
  const cache = new Map<string, { caller: Caller | undefined; expires: number }>()
  const maxEntries = 10_000

  return async function authenticate(req: FastifyRequest): Promise<Caller | undefined> {
    const token = bearerToken(req.headers.authorization)
    if (!token || token.length > 512) return undefined
    if (cacheMs === 0) return resolveCaller(db, token)
    // One-shot hashing: no Hash object per request (createHash showed up in the gateway's profile).
    const id = hash('sha256', token, 'base64')
    const now = Date.now()
    const hit = cache.get(id)
    if (hit && hit.expires > now) return hit.caller
    const caller = await resolveCaller(db, token)
    if (cache.size >= maxEntries) cache.clear()
    cache.set(id, { caller, expires: now + cacheMs })
    return caller
  }
}
export type Authenticator = ReturnType<typeof createAuthenticator>

/** onRequest hook for routes open to any valid key (models, responses): 401 otherwise. */
export function requireKey(authenticate: Authenticator) {
  return async (req: FastifyRequest) => {
    const caller = await authenticate(req)
    if (!caller) throw new AppError('unauthorized', 'a valid API key is required')
    req.caller = caller
  }
}
