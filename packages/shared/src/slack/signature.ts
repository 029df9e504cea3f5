import { createHmac, timingSafeEqual } from 'node:crypto'

// Slack's request signing (v0): `v0=` + hex HMAC-SHA256 of `v0:{timestamp}:{raw body}` under the
// app's signing secret, in X-Slack-Signature, the timestamp in X-Slack-Request-Timestamp. A
// timestamp more than five minutes away from now is refused, so a captured request cannot be replayed.

/** Slack's own window. */
const MAX_SKEW_S = 5 * 60

export type SignatureCheck = 'ok' | 'missing' | 'stale' | 'mismatch'

export function checkSlackSignature(
  signingSecret: string,
  timestamp: string | undefined,
  signature: string | undefined,
  rawBody: string,
  nowMs = Date.now(),
): SignatureCheck {
  if (!timestamp || !signature || !/^\d{1,12}$/.test(timestamp)) return 'missing'
  if (Math.abs(nowMs / 1000 - Number(timestamp)) > MAX_SKEW_S) return 'stale'
  const want = Buffer.from(
    `v0=${createHmac('sha256', signingSecret).update(`v0:${timestamp}:${rawBody}`).digest('hex')}`,
  )
  const got = Buffer.from(signature)
  return want.length === got.length && timingSafeEqual(want, got) ? 'ok' : 'mismatch'
}

/** The headers a request signed now carries (the Slack stand-in signs what it sends with this). */
export function slackSignatureHeaders(signingSecret: string, rawBody: string, nowMs = Date.now()) {
  const timestamp = String(Math.floor(nowMs / 1000))
  const digest = createHmac('sha256', signingSecret).update(`v0:${timestamp}:${rawBody}`).digest('hex')
  return { 'x-slack-request-timestamp': timestamp, 'x-slack-signature': `v0=${digest}` }
}
