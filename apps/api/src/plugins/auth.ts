import type { FastifyRequest, onRequestHookHandler } from 'fastify'
import { hash } from 'node:crypto'
import { AppError, bearerToken, resolveCaller, type Caller, type Db } from '@roster/shared'

/**
 * Resolves the bearer key to a Caller. Lookups are cached briefly (AUTH_CACHE_MS) because every
 * poll of an intern would otherwise cost a query; revoking a key takes effect within that window.
 * The cache is keyed by a digest of the token, so plaintext keys are never held as map keys.
 * A cache hit answers at once, not as a promise: it is every request's path, and a promise costs
 * the request a trip through the microtask queue.
 */
export function createAuthenticator(db: Db, cacheMs: number) {
  const cache = new Map<string, { caller: Caller | undefined; expires: number }>()
  const maxEntries = 10_000

  /** The key is the bearer token, unless the caller says where else it may be (`token`). */
  return function authenticate(req: FastifyRequest, token = bearerToken(req.headers.authorization)): Caller | undefined | Promise<Caller | undefined> {
    if (!token || token.length > 512) return undefined
    if (cacheMs === 0) return resolveCaller(db, token)
    // One-shot hashing: no Hash object per request (createHash showed up in the gateway's profile).
    const id = hash('sha256', token, 'base64')
    const now = Date.now()
    const hit = cache.get(id)
    if (hit && hit.expires > now) return hit.caller
    return resolveCaller(db, token).then((caller) => {
      if (cache.size >= maxEntries) cache.clear()
      cache.set(id, { caller, expires: now + cacheMs })
      return caller
    })
  }
}
export type Authenticator = ReturnType<typeof createAuthenticator>

/** The Anthropic client's header for the key (`x-api-key`), which its door also accepts. */
function apiKeyHeader(req: FastifyRequest): string | undefined {
  const v = req.headers['x-api-key']
  return typeof v === 'string' && v ? v.trim() : undefined
}

/**
 * onRequest hook for routes open to any valid key (models, responses): 401 otherwise. With
 * `xApiKey`, a key in the `x-api-key` header is taken where no bearer token is given.
 */
export function requireKey(authenticate: Authenticator, options: { xApiKey?: boolean } = {}): onRequestHookHandler {
  const admit = (req: FastifyRequest, caller: Caller | undefined, done: (err?: Error) => void) => {
    if (!caller) return done(new AppError('unauthorized', 'a valid API key is required'))
    req.caller = caller
    done()
  }
  // A callback hook, so a cached key admits the request without a promise.
  return (req, _reply, done) => {
    let found: ReturnType<Authenticator>
    try {
      found = options.xApiKey ? authenticate(req, bearerToken(req.headers.authorization) ?? apiKeyHeader(req)) : authenticate(req)
    } catch (err) {
      return done(err as Error)
    }
    if (found instanceof Promise) found.then((caller) => admit(req, caller, done), done)
    else admit(req, found, done)
  }
}
