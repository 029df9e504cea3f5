import { createHmac, timingSafeEqual } from 'node:crypto'

// Short signed tokens a browser carries (an install link, Slack's OAuth `state`): a payload and its
// expiry, HMAC-SHA256 under a key derived from the vault's master key. Nothing secret is inside;
// what makes a token single-use is the nonce the link row holds (taken once by the callback).

const signingKey = (masterKey: Buffer, purpose: string) =>
  createHmac('sha256', masterKey).update(`roster slack ${purpose}`).digest()

const mac = (key: Buffer, body: string) => createHmac('sha256', key).update(body).digest('base64url')

/** `payload` with `exp` (seconds since the epoch), signed for `purpose`. */
export function signToken(masterKey: Buffer, purpose: string, payload: Record<string, string>, ttlSeconds: number) {
  const body = Buffer.from(JSON.stringify({ ...payload, exp: Math.floor(Date.now() / 1000) + ttlSeconds })).toString(
    'base64url',
  )
  return `${body}.${mac(signingKey(masterKey, purpose), body)}`
}

export type TokenCheck =
  | { ok: true; payload: Record<string, string> }
  | { ok: false; why: 'malformed' | 'forged' }
  /** Signed by Roster, so its payload is Roster's (who it was for), but too late. */
  | { ok: false; why: 'expired'; payload: Record<string, string> }

/** Whether a token was signed for `purpose` and has not expired; its payload when it is good. */
export function checkToken(masterKey: Buffer, purpose: string, token: string | undefined): TokenCheck {
  if (!token || token.length > 2048) return { ok: false, why: 'malformed' }
  const [body, sig, extra] = token.split('.')
  if (!body || !sig || extra !== undefined) return { ok: false, why: 'malformed' }
  const want = Buffer.from(mac(signingKey(masterKey, purpose), body))
  const got = Buffer.from(sig)
  if (want.length !== got.length || !timingSafeEqual(want, got)) return { ok: false, why: 'forged' }
  let parsed: unknown
  try {
    parsed = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'))
  } catch {
    return { ok: false, why: 'malformed' }
  }
  const { exp, ...payload } = parsed as Record<string, unknown>
  if (typeof exp !== 'number' || !Object.values(payload).every((v) => typeof v === 'string'))
    return { ok: false, why: 'malformed' }
  if (exp < Date.now() / 1000) return { ok: false, why: 'expired', payload: payload as Record<string, string> }
  return { ok: true, payload: payload as Record<string, string> }
}
