import { createHash, timingSafeEqual } from 'node:crypto'
import * as oidc from 'openid-client'
import type { ApiConfig, RedisClient } from '@roster/shared'

// Single sign-on to the web console through OpenID Connect (docs/console.md): the authorization
// code flow with PKCE, a state bound to the browser that began it (a cookie) and a nonce bound to
// the ID token; the flow's secrets wait in Redis for ten minutes and are taken once, so a callback
// replayed or forged finds nothing. The person is whoever the issuer vouches for by e-mail.

export const FLOW_COOKIE = 'roster_sso'
const FLOW_TTL_S = 600

export interface SsoIdentity {
  email: string
  subject: string
}

/** Why a sign-in was refused, in words for the person (shown on the sign-in page). */
export class SsoRefusal extends Error {}

export type Sso = ReturnType<typeof createSso>

export function createSso(config: ApiConfig, redis: RedisClient) {
  const issuer = config.OIDC_ISSUER
  if (!issuer || !config.OIDC_CLIENT_ID) return undefined
  let discovered: Promise<oidc.Configuration> | undefined
  /** The issuer's metadata, read once (again after a failure). */
  const configuration = () =>
    (discovered ??= oidc
      .discovery(
        new URL(issuer),
        config.OIDC_CLIENT_ID!,
        config.OIDC_CLIENT_SECRET,
        config.OIDC_CLIENT_SECRET ? undefined : oidc.None(),
        { execute: config.OIDC_ALLOW_HTTP ? [oidc.allowInsecureRequests] : [], timeout: 10 },
      )
      .catch((err: unknown) => {
        discovered = undefined
        throw err
      }))
  const flowKey = (state: string) =>
    `${config.QUEUE_PREFIX}:sso:${createHash('sha256').update(state).digest('base64url')}`

  return {
    name: config.OIDC_DISPLAY_NAME,
    /** Where the issuer sends the browser back. */
    redirectUri: (origin: string) => config.OIDC_REDIRECT_URL ?? `${origin}/api/v1/console/sso/callback`,

    /** Begins a sign-in: the issuer's authorization URL, and the state the browser's cookie keeps. */
    async begin(redirectUri: string): Promise<{ url: string; state: string; maxAge: number }> {
      const c = await configuration()
      const state = oidc.randomState()
      const nonce = oidc.randomNonce()
      const verifier = oidc.randomPKCECodeVerifier()
      await redis.set(flowKey(state), JSON.stringify({ nonce, verifier, redirectUri }), 'EX', FLOW_TTL_S)
      const url = oidc.buildAuthorizationUrl(c, {
        redirect_uri: redirectUri,
        scope: config.OIDC_SCOPES,
        state,
        nonce,
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
      })
      return { url: url.href, state, maxAge: FLOW_TTL_S }
    },

    /** Ends a sign-in: the person the issuer vouches for, or a refusal saying why. */
    async complete(query: URLSearchParams, cookieState: string | undefined): Promise<SsoIdentity> {
      const state = query.get('state') ?? ''
      if (!cookieState || !sameText(state, cookieState))
        throw new SsoRefusal('this sign-in was not begun in this browser (or it took too long): sign in again')
      const raw = await redis.getdel(flowKey(state))
      if (!raw) throw new SsoRefusal('this sign-in has expired or was already used: sign in again')
      const flow = JSON.parse(raw) as { nonce: string; verifier: string; redirectUri: string }
      const error = query.get('error')
      if (error)
        throw new SsoRefusal(
          `the identity provider refused: ${(query.get('error_description') ?? error).slice(0, 200)}`,
        )
      const c = await configuration()
      const current = new URL(flow.redirectUri)
      current.search = query.toString()
      let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>
      try {
        tokens = await oidc.authorizationCodeGrant(c, current, {
          pkceCodeVerifier: flow.verifier,
          expectedState: state,
          expectedNonce: flow.nonce,
          idTokenExpected: true,
        })
      } catch (err) {
        throw new SsoRefusal(`the identity provider's answer could not be verified: ${describe(err)}`)
      }
      const claims = tokens.claims()
      if (!claims) throw new SsoRefusal('the identity provider sent no ID token')
      // Many issuers put the e-mail only in the userinfo answer (the ID token keeps the subject).
      let profile: Record<string, unknown> = claims
      if (typeof claims.email !== 'string') {
        try {
          profile = { ...claims, ...(await oidc.fetchUserInfo(c, tokens.access_token, claims.sub)) }
        } catch (err) {
          throw new SsoRefusal(`the identity provider's userinfo could not be read: ${describe(err)}`)
        }
      }
      const email = typeof profile.email === 'string' ? profile.email.trim() : ''
      if (!email) throw new SsoRefusal('the identity provider did not say who you are (no e-mail): ask your admin')
      if (config.OIDC_REQUIRE_VERIFIED_EMAIL && profile.email_verified !== true)
        throw new SsoRefusal(`the identity provider does not say ${email} is verified`)
      return { email, subject: claims.sub }
    },
  }
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

const describe = (err: unknown) => (err instanceof Error ? err.message : String(err)).slice(0, 200)
