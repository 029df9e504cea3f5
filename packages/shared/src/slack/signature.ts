import { checkRequestSignature, signRequest, type SignatureCheck } from '../request-signature.js'

// Slack's request signing (v0): `v0=` + hex HMAC-SHA256 of `v0:{timestamp}:{raw body}` under the
// app's signing secret, in X-Slack-Signature, the timestamp in X-Slack-Request-Timestamp.

export type { SignatureCheck }

export const checkSlackSignature = (
  signingSecret: string,
  timestamp: string | undefined,
  signature: string | undefined,
  rawBody: string,
  nowMs = Date.now(),
): SignatureCheck => checkRequestSignature('v0', signingSecret, timestamp, signature, rawBody, nowMs)

/** The headers a request signed now carries (the Slack stand-in signs what it sends with this). */
export function slackSignatureHeaders(signingSecret: string, rawBody: string, nowMs = Date.now()) {
  const { timestamp, signature } = signRequest('v0', signingSecret, rawBody, nowMs)
  return { 'x-slack-request-timestamp': timestamp, 'x-slack-signature': signature }
}
