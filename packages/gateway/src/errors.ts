import type { z } from 'zod'

/** A failure with its HTTP status and the spec's canonical error type. */
export class GatewayError extends Error {
  override name = 'GatewayError'
  constructor(
    readonly status: number,
    readonly errorType: string,
    message: string,
    readonly retryAfter?: string,
  ) {
    super(message)
  }
}

export const invalid = (message: string) => new GatewayError(400, 'invalid_request', message)

/** Whether another endpoint may succeed where this one failed. */
export const retryable = (e: GatewayError) => e.status === 429 || e.status >= 500

/**
 * A provider's error as the spec's canonical type. The provider's message is kept (trimmed) since
 * it usually says what was wrong with the request; credentials never appear in it because Roster
 * never sends them in a body.
 */
export function upstreamError(provider: string, status: number, body: string, retryAfter?: string | string[]): GatewayError {
  let detail = ''
  let kind = ''
  try {
    const j = JSON.parse(body)
    detail = String(j?.error?.message ?? j?.message ?? '').slice(0, 300)
    kind = String(j?.error?.type ?? j?.error?.code ?? '')
  } catch {}
  const said = detail ? `: ${detail}` : ''
  const after = Array.isArray(retryAfter) ? retryAfter[0] : retryAfter
  if (status === 429 || kind === 'rate_limit_error') return new GatewayError(429, 'rate_limit_exceeded', `${provider} is rate limiting${said}`, after)
  if (/context[ _]length|context window|too many tokens|prompt is too long/i.test(detail) || kind === 'context_length_exceeded') {
    return new GatewayError(400, 'context_length_exceeded', `${provider}: the input is longer than the model's context${said}`)
  }
  if (status === 400 || status === 422) return new GatewayError(400, 'invalid_request', `${provider} refused the request${said}`)
  if (status === 401) return new GatewayError(502, 'authentication', `${provider} refused Roster's credential`)
  if (status === 403) return new GatewayError(502, 'permission_denied', `${provider} denied Roster's credential this request`)
  if (status === 402) return new GatewayError(402, 'payment_required', `${provider} asks for payment${said}`)
  if (status === 404) return new GatewayError(502, 'not_found', `${provider} does not know the configured model${said}`)
  if (status === 413) return new GatewayError(413, 'payload_too_large', `${provider} found the request too large${said}`)
  if (status === 529 || status === 503 || kind === 'overloaded_error') return new GatewayError(503, 'provider_overloaded', `${provider} is overloaded${said}`)
  if (status === 408 || status === 504) return new GatewayError(504, 'timeout', `${provider} timed out${said}`)
  return new GatewayError(502, 'provider_unavailable', `${provider} failed (${status})${said}`)
}

/** A zod error as one line for an error message: the first few issues, each with its path. */
export const describeIssues = (error: z.ZodError, max = 5) =>
  error.issues
    .slice(0, max)
    .map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`)
    .join('; ')
