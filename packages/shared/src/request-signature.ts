import { createHmac, timingSafeEqual } from 'node:crypto'

// Request signing as Slack does it, and Roster's webhooks after it: `<version>=` + hex HMAC-SHA256
// of `<version>:{timestamp}:{raw body}` under a shared secret, the timestamp (Unix seconds) in a
// header beside it. A timestamp more than five minutes away from now is refused, so a captured
// request cannot be replayed later (and within the window, a receiver that keeps what it took
// refuses the same request twice).

/** Slack's own window. */
const MAX_SKEW_S = 5 * 60

export type SignatureCheck = 'ok' | 'missing' | 'stale' | 'mismatch'

const digest = (version: string, secret: string, timestamp: string, rawBody: string | Buffer) =>
  createHmac('sha256', secret).update(`${version}:${timestamp}:`).update(rawBody).digest('hex')

export function checkRequestSignature(
  version: string,
  secret: string,
  timestamp: string | undefined,
  signature: string | undefined,
  rawBody: string | Buffer,
  nowMs = Date.now(),
): SignatureCheck {
  if (!timestamp || !signature || !/^\d{1,12}$/.test(timestamp)) return 'missing'
  if (Math.abs(nowMs / 1000 - Number(timestamp)) > MAX_SKEW_S) return 'stale'
  const want = Buffer.from(`${version}=${digest(version, secret, timestamp, rawBody)}`)
  const got = Buffer.from(signature)
  return want.length === got.length && timingSafeEqual(want, got) ? 'ok' : 'mismatch'
}

/** The timestamp and signature of a request signed now. */
export function signRequest(version: string, secret: string, rawBody: string | Buffer, nowMs = Date.now()) {
  const timestamp = String(Math.floor(nowMs / 1000))
  return { timestamp, signature: `${version}=${digest(version, secret, timestamp, rawBody)}` }
}
