import type { FastifyRequest, onRequestHookHandler } from 'fastify'
import { hash } from 'node:crypto'
import {
  AppError,
  asPerson,
  bearerToken,
  resolveCaller,
  resolveCallerByHash,
  type Caller,
  type Db,
} from '@roster/shared'
import { liveConsoleSession, memberById, noteKeyUse } from '@roster/shared/repositories'
import { assertSameOriginChange, sessionIdHash, sessionIdOf } from '../console/session-cookie.js'
import { GatewayError } from '@roster/gateway'
import { Lru } from './lru.js'
import { afterRefusalDelay } from './refusal-delay.js'

export interface AuthenticatorOptions {
  /** Keys whose answer is kept (LRU). Unknown keys are kept apart, so they cannot push known ones out. */
  entries?: number
  /** Lookups of keys never seen valid that may run at once; the rest wait in turn (AUTH_UNKNOWN_LOOKUPS). */
  unknownLookups?: number
  /** Refusals of unknown keys one client address may cause per minute; past it 429 (UNKNOWN_KEYS_PER_MINUTE; 0: no limit). */
  unknownPerAddress?: number
  /** Told of each lookup that reached the database, and of each refusal answered without one. */
  observe?: (outcome: 'valid' | 'unknown' | 'throttled' | 'rate_limited') => void
  /** Requests per minute per key (KEY_REQUESTS_PER_MINUTE): the seconds to wait when a key is over, else 0. */
  rate?: { take(keyId: string): number }
  /**
   * How long a refusal for unknown keys past UNKNOWN_KEYS_PER_MINUTE waits for its 429
   * (REFUSAL_DELAY_MS; refusal-delay.ts).
   */
  refusalDelayMs?: number
  now?: () => number
}

/** Lookups of never-seen keys that may wait for their turn; past it they are refused at once. */
const MAX_WAITING_LOOKUPS = 1_024

/**
 * Resolves the bearer key to a Caller. Lookups are cached briefly (AUTH_CACHE_MS) because every
 * poll of an intern would otherwise cost a query; revoking a key takes effect within that window.
 * The cache is keyed by a digest of the token, so plaintext keys are never held as map keys.
 * A cache hit answers at once, not as a promise: it is every request's path, and a promise costs
 * the request a trip through the microtask queue.
 *
 * Unknown keys cost the others nothing: their refusals are cached apart from the known keys (an
 * LRU each, so a flood of random keys pushes out only other random keys), a key never seen valid
 * waits for one of a few lookup slots (the database pool stays free for everyone else, and keys
 * seen valid before skip the queue), and a client address that causes more than
 * UNKNOWN_KEYS_PER_MINUTE refusals is answered 429 for never-seen keys until its minute ends.
 */
export function createAuthenticator(db: Db, cacheMs: number, options: AuthenticatorOptions = {}) {
  const entries = options.entries ?? 10_000
  const now = options.now ?? Date.now
  // A console session's entry also keeps when the session itself ends.
  const known = new Lru<string, { caller: Caller; expires: number; sessionEnds?: number }>(entries)
  const unknown = new Lru<string, number>(entries)
  /** Digests that resolved to a key once (revoked since or not): their lookups never wait behind strangers'. */
  const seenValid = new Lru<string, true>(entries)
  const refusals = new Lru<string, { window: number; count: number }>(entries)
  const slots = new Slots(options.unknownLookups ?? 4, MAX_WAITING_LOOKUPS)
  const observe = options.observe ?? (() => {})

  const overBudget = (address: string): number => {
    const limit = options.unknownPerAddress ?? 0
    if (!limit) return 0
    const at = now()
    const entry = refusals.get(address)
    if (!entry || entry.window !== Math.floor(at / 60_000) || entry.count < limit) return 0
    return Math.max(1, Math.ceil((60_000 - (at % 60_000)) / 1000))
  }
  const refused = (address: string) => {
    const window = Math.floor(now() / 60_000)
    const entry = refusals.get(address)
    if (entry && entry.window === window) entry.count++
    else refusals.set(address, { window, count: 1 })
  }

  // Raised by every forget: a lookup that began before one may have read the row as it was, so its
  // answer serves its own request but is not cached (else a change made meanwhile would be missed
  // for AUTH_CACHE_MS).
  let epoch = 0
  const lookUp = async (id: string, token: string): Promise<Caller | undefined> => {
    const began = epoch
    const caller = await resolveCaller(db, token)
    observe(caller ? 'valid' : 'unknown')
    if (began !== epoch) return caller
    if (caller) {
      seenValid.set(id, true)
      known.set(id, { caller, expires: now() + cacheMs })
      unknown.delete(id)
    } else {
      known.delete(id)
      unknown.set(id, now() + cacheMs)
    }
    return caller
  }

  // When each key was last noted as used by this process (its minute): at most one write a minute per key.
  const noted = new Lru<string, number>(entries)
  const noteUse = (keyId: string) => {
    const minute = Math.floor(now() / 60_000)
    if (noted.get(keyId) === minute) return
    noted.set(keyId, minute)
    void noteKeyUse(db, keyId).catch(() => noted.delete(keyId))
  }

  /** A known key, counted against its requests per minute (and noted as used). */
  const counted = (caller: Caller | undefined): Caller | undefined => {
    if (caller) noteUse(caller.keyId)
    const wait = caller && options.rate ? options.rate.take(caller.keyId) : 0
    if (wait) {
      observe('rate_limited')
      throw new AppError(
        'rate_limited',
        `this key has made its requests for this minute (KEY_REQUESTS_PER_MINUTE); retry in ${wait} s`,
        { retryAfter: wait },
      )
    }
    return caller
  }

  /**
   * A web console session's caller (the key it was signed in with, as that key is now), cached as a
   * key is; a change made with it must come from the console (session-cookie.ts).
   */
  const sessionCaller = (req: FastifyRequest, sessionId: string): Caller | undefined | Promise<Caller | undefined> => {
    assertSameOriginChange(req)
    req.viaConsoleSession = true
    const found = consoleSession(sessionId)
    return found instanceof Promise ? found.then((s) => counted(s?.caller)) : counted(found?.caller)
  }

  /** A live console session (its caller, and when it ends), from the cache or the database. */
  function consoleSession(
    sessionId: string,
  ): { caller: Caller; endsAt: number } | undefined | Promise<{ caller: Caller; endsAt: number } | undefined> {
    const idHash = sessionIdHash(sessionId)
    const id = `session:${idHash.toString('base64')}`
    const hit = known.get(id)
    if (hit && hit.expires > now() && hit.sessionEnds) return { caller: hit.caller, endsAt: hit.sessionEnds }
    const began = epoch
    return (async () => {
      const session = await liveConsoleSession(db, idHash)
      // The operator's sessions act as no key (operator-access.ts reads them).
      const key = session?.kind !== 'operator' && session && (await resolveCallerByHash(db, session.keyHash))
      if (!session || !key) return undefined
      // A person signed in through single sign-on acts as their member is now: a disabled one not at all.
      const member = session.userId ? await memberById(db, session.userId) : undefined
      if (session.userId && (!member || member.disabled_at || member.account_id !== key.accountId)) return undefined
      const caller = member ? asPerson(key, member) : key
      const endsAt = session.expiresAt.getTime()
      if (began === epoch) known.set(id, { caller, expires: Math.min(now() + cacheMs, endsAt), sessionEnds: endsAt })
      return { caller, endsAt }
    })()
  }

  /**
   * The key is the bearer token, unless the caller says where else it may be (`token`); with none,
   * a web console session's cookie (an Authorization header always wins).
   */
  function authenticate(
    req: FastifyRequest,
    token = bearerToken(req.headers.authorization),
  ): Caller | undefined | Promise<Caller | undefined> {
    if (!token) {
      const sessionId = sessionIdOf(req)
      return sessionId ? sessionCaller(req, sessionId) : undefined
    }
    if (token.length > 512) return undefined
    if (cacheMs === 0) return resolveCaller(db, token).then(counted)
    // One-shot hashing: no Hash object per request (createHash showed up in the gateway's profile).
    const id = hash('sha256', token, 'base64')
    const at = now()
    const hit = known.get(id)
    if (hit && hit.expires > at) {
      // A key past its expiry stops at once, whatever the cache still holds.
      if (hit.caller.expiresAt !== null && hit.caller.expiresAt <= at) return undefined
      return counted(hit.caller)
    }
    const miss = unknown.get(id)
    if (miss !== undefined && miss > at) {
      refused(req.ip)
      return undefined
    }
    if (seenValid.has(id)) return lookUp(id, token).then(counted)
    const wait = overBudget(req.ip)
    if (wait) {
      observe('throttled')
      const refusal = new AppError(
        'rate_limited',
        `too many requests with unknown API keys from this address; retry in ${wait} s`,
        { retryAfter: wait },
      )
      return new Promise((_, reject) => afterRefusalDelay(options.refusalDelayMs ?? 0, () => reject(refusal)))
    }
    return slots
      .run(() => lookUp(id, token))
      .then((caller) => {
        if (!caller) refused(req.ip)
        return counted(caller)
      })
  }
  /** Forgets what is cached of the key with this digest (its settings changed, or it was deleted). */
  const forget = (digest: Buffer) => {
    epoch++
    const id = digest.toString('base64')
    known.delete(id)
    // A disabled key refused meanwhile may be enabled again: its refusal is forgotten too.
    unknown.delete(id)
  }
  /** Forgets a console session signed out here (other processes drop it within AUTH_CACHE_MS). */
  const forgetSession = (idHash: Buffer) => {
    epoch++
    known.delete(`session:${idHash.toString('base64')}`)
  }
  /** Forgets a member's console sessions (disabled, or their role changed). */
  const forgetMember = (userId: string) => {
    epoch++
    known.deleteWhere((e) => e.caller.person?.userId === userId)
  }
  /** Forgets every cached key of a workspace (its budgets or switches changed, or it was deleted). */
  const forgetWorkspace = (workspaceId: string) => {
    epoch++
    known.deleteWhere((e) => e.caller.workspaceId === workspaceId)
  }
  /** Forgets every cached key of an account (its guardrails changed). */
  const forgetAccount = (accountId: string) => {
    epoch++
    known.deleteWhere((e) => e.caller.accountId === accountId)
  }
  return Object.assign(authenticate, {
    forget,
    forgetWorkspace,
    forgetAccount,
    forgetSession,
    forgetMember,
    consoleSession,
  })
}

/** At most `size` tasks at once; the rest wait in turn, up to `waiting` of them (then refused with 429). */
class Slots {
  private running = 0
  private readonly queue: (() => void)[] = []

  constructor(
    private readonly size: number,
    private readonly waiting: number,
  ) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.size) {
      if (this.queue.length >= this.waiting)
        throw new AppError(
          'rate_limited',
          'too many unknown API keys are being checked on this server; retry shortly',
          { retryAfter: 1 },
        )
      await new Promise<void>((resolve) => this.queue.push(resolve))
    } else this.running++
    try {
      return await task()
    } finally {
      const next = this.queue.shift()
      if (next) next()
      else this.running--
    }
  }
}
export type Authenticator = ReturnType<typeof createAuthenticator>

/** The Anthropic client's header for the key (`x-api-key`), which its door also accepts. */
function apiKeyHeader(req: FastifyRequest): string | undefined {
  const v = req.headers['x-api-key']
  return typeof v === 'string' && v ? v.trim() : undefined
}

/** Management keys manage keys, presets and the rest; they make no model call (governance-contract.md §0). */
const MANAGEMENT_KEY_INFERENCE = new GatewayError(
  403,
  'permission_denied',
  'a management key cannot make model calls: use an inference key (POST /api/v1/keys makes one)',
)

/**
 * onRequest hook for routes open to any valid key (models, responses): 401 otherwise. With
 * `xApiKey`, a key in the `x-api-key` header is taken where no bearer token is given; with
 * `inference` (the gateway's doors), management keys are refused (403).
 */
export function requireKey(
  authenticate: Authenticator,
  options: { xApiKey?: boolean; inference?: boolean } = {},
): onRequestHookHandler {
  const admit = (req: FastifyRequest, caller: Caller | undefined, done: (err?: Error) => void) => {
    if (!caller) return done(new AppError('unauthorized', 'a valid API key is required'))
    // A console session makes model calls (the playground) as its key, from the console alone: its
    // header and origin were checked with the cookie (session-cookie.ts), as for every change.
    if (options.inference && caller.kind === 'management') return done(MANAGEMENT_KEY_INFERENCE)
    req.caller = caller
    done()
  }
  // A callback hook, so a cached key admits the request without a promise.
  return (req, _reply, done) => {
    let found: ReturnType<Authenticator>
    try {
      found = options.xApiKey
        ? authenticate(req, bearerToken(req.headers.authorization) ?? apiKeyHeader(req))
        : authenticate(req)
    } catch (err) {
      return done(err as Error)
    }
    if (found instanceof Promise) found.then((caller) => admit(req, caller, done), done)
    else admit(req, found, done)
  }
}
