import type { z } from 'zod'
import { GatewayErrors, type ErrorType } from '@roster/shared/errors'

/** The canonical error types (the one table of errors: packages/shared/src/errors.ts). */
export type GatewayErrorType = ErrorType

/** A failure with its HTTP status and the spec's canonical error type. */
export class GatewayError extends Error {
  override name = 'GatewayError'
  constructor(
    readonly status: number,
    readonly errorType: ErrorType,
    message: string,
    readonly retryAfter?: string,
  ) {
    super(message)
  }
}

/**
 * The error of a canonical type, with the type's status unless `status` says otherwise (a
 * provider refusing Roster's own credential is `authentication`, but the caller's request was
 * fine: 502, not 401).
 */
export function gatewayError(
  type: ErrorType,
  message: string,
  options: { status?: number; retryAfter?: string } = {},
): GatewayError {
  return new GatewayError(options.status ?? GatewayErrors[type].status, type, message, options.retryAfter)
}

export const invalid = (message: string) => gatewayError('invalid_request', message)

/** Whether another endpoint may succeed where this one failed. */
export const retryable = (e: GatewayError) => e.status === 429 || e.status >= 500

/**
 * A provider's error as the spec's canonical type. The provider's message is kept (trimmed) since
 * it usually says what was wrong with the request; credentials never appear in it because Roster
 * never sends them in a body.
 */
export function upstreamError(
  provider: string,
  status: number,
  body: string,
  retryAfter?: string | string[],
): GatewayError {
  let detail = ''
  let kind = ''
  try {
    const j = JSON.parse(body)
    detail = String(j?.error?.message ?? j?.message ?? '').slice(0, 300)
    kind = String(j?.error?.type ?? j?.error?.code ?? '')
  } catch {}
  const said = detail ? `: ${detail}` : ''
  const after = Array.isArray(retryAfter) ? retryAfter[0] : retryAfter
  if (status === 429 || kind === 'rate_limit_error')
    return gatewayError('rate_limit_exceeded', `${provider} is rate limiting${said}`, { retryAfter: after })
  if (
    /context[ _]length|context window|too many tokens|prompt is too long/i.test(detail) ||
    kind === 'context_length_exceeded'
  ) {
    return gatewayError('context_length_exceeded', `${provider}: the input is longer than the model's context${said}`)
  }
  if (status === 400 || status === 422) return gatewayError('invalid_request', `${provider} refused the request${said}`)
  if (status === 401) return gatewayError('authentication', `${provider} refused Roster's credential`, { status: 502 })
  if (status === 403)
    return gatewayError('permission_denied', `${provider} denied Roster's credential this request`, { status: 502 })
  if (status === 402) return gatewayError('payment_required', `${provider} asks for payment${said}`)
  if (status === 404)
    return gatewayError('not_found', `${provider} does not know the configured model${said}`, { status: 502 })
  if (status === 413) return gatewayError('payload_too_large', `${provider} found the request too large${said}`)
  if (status === 529 || status === 503 || kind === 'overloaded_error')
    return gatewayError('provider_overloaded', `${provider} is overloaded${said}`)
  if (status === 408 || status === 504) return gatewayError('timeout', `${provider} timed out${said}`)
  return gatewayError('provider_unavailable', `${provider} failed (${status})${said}`)
}

/** A zod error as one line for an error message: the first few issues, each with its path and broken rule. */
export const describeIssues = (error: z.ZodError, max = 5) =>
  error.issues
    .slice(0, max)
    .map((i) => {
      const { path, message } = explainIssue(i as unknown as ZodIssueLike)
      return `${path.map(String).join('.') || '(body)'}: ${message}`
    })
    .join('; ')

/** The parts of a zod issue the explanation reads (fastify-type-provider-zod keeps them in a validation error's params). */
export interface ZodIssueLike {
  code: string
  path: PropertyKey[]
  message?: string
  expected?: string
  errors?: ZodIssueLike[][]
  issues?: ZodIssueLike[]
}

/**
 * zod reports a rule broken inside a union member or by a record's key under a generic message
 * ("Invalid input", "Invalid key in record"). Name the rule instead: the one union member whose
 * type matched (so `stop: [5 strings]` reads "at most 4 stop sequences"), or the types a value
 * could have had; the key's own rule. Where several members matched, which one the caller meant
 * is a guess, so each one's first broken rule is named.
 */
export function explainIssue(issue: ZodIssueLike): { path: PropertyKey[]; message: string } {
  const generic = { path: issue.path, message: issue.message ?? 'is invalid' }
  if (issue.code === 'invalid_union' && issue.errors) {
    const typeMismatch = (branch: ZodIssueLike[]) =>
      branch.every((i) => i.code === 'invalid_type' && i.path.length === 0)
    const matched = issue.errors.filter((branch) => branch.length > 0 && !typeMismatch(branch))
    if (matched.length === 1) {
      const inner = explainIssue(matched[0]![0]!)
      return { path: [...issue.path, ...inner.path], message: inner.message }
    }
    if (matched.length === 0) {
      const expected = [...new Set(issue.errors.flat().flatMap((i) => (i.expected ? [i.expected] : [])))]
      if (expected.length > 0) return { path: issue.path, message: `Invalid input: expected ${expected.join(' or ')}` }
      return generic
    }
    const forms = matched.slice(0, 4).map((branch) => {
      const inner = explainIssue(branch[0]!)
      return inner.path.length > 0 ? `${inner.path.map(String).join('/')}: ${inner.message}` : inner.message
    })
    return { path: issue.path, message: `matches none of its forms (${forms.join('; or ')})` }
  }
  if (issue.code === 'invalid_key' && issue.issues?.length) {
    return { path: issue.path, message: `invalid key: ${issue.issues.map((i) => explainIssue(i).message).join('; ')}` }
  }
  return generic
}
