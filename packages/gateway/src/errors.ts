import type { z } from 'zod'
import { GatewayErrors, type ErrorType } from '@roster/protocol'

/** The canonical error types (the one table of errors: packages/protocol/src/errors.ts). */
export type GatewayErrorType = ErrorType

/** A failure with its HTTP status and the spec's canonical error type. */
export class GatewayError extends Error {
  override name = 'GatewayError'
  constructor(
    readonly status: number,
    readonly errorType: ErrorType,
    message: string,
    readonly retryAfter?: string,
    /** What the error body's `metadata` documents beside the type (a moderation refusal's reasons). */
    readonly metadata?: Record<string, unknown>,
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
  options: { status?: number; retryAfter?: string; metadata?: Record<string, unknown> } = {},
): GatewayError {
  return new GatewayError(
    options.status ?? GatewayErrors[type].status,
    type,
    message,
    options.retryAfter,
    options.metadata,
  )
}

export const invalid = (message: string) => gatewayError('invalid_request', message)

/** Whether another endpoint may succeed where this one failed. */
export const retryable = (e: GatewayError) => e.status === 429 || e.status >= 500

/**
 * The HTTP status a provider's error code or type stands for, where it names one: OpenAI's `code`
 * and `type`, Anthropic's `error.type`, as they come in an error body or in a stream (where the
 * HTTP status was already 200, and only the code says what went wrong).
 */
const PROVIDER_ERROR_STATUS: Record<string, number> = {
  invalid_request_error: 400,
  invalid_prompt: 400,
  context_length_exceeded: 400,
  authentication_error: 401,
  invalid_api_key: 401,
  insufficient_quota: 402,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  model_not_found: 404,
  request_too_large: 413,
  rate_limit_exceeded: 429,
  rate_limit_error: 429,
  api_error: 500,
  server_error: 500,
  overloaded_error: 529,
  server_is_overloaded: 503,
  timeout_error: 504,
}

const text = (v: unknown) => (typeof v === 'string' ? v : undefined)

/**
 * A provider's error reported inside a stream (or a reply that says it failed), read wherever
 * providers put it: the event's own `code`/`message` (OpenAI's `error` event), its `error` object
 * (Anthropic's, and OpenAI's newer events), or a failed Response's `response.error`. The code picks
 * the canonical type; the provider's message is kept.
 */
export function providerError(provider: string, event: unknown, response?: unknown): GatewayError {
  const e = (event && typeof event === 'object' ? event : {}) as Record<string, unknown>
  const nested = (e.error && typeof e.error === 'object' ? e.error : {}) as Record<string, unknown>
  const failed = ((response as { error?: unknown } | undefined)?.error ?? {}) as Record<string, unknown>
  const code = text(nested.code) ?? text(nested.type) ?? text(e.code) ?? text(failed.code) ?? text(failed.type)
  const message = text(nested.message) ?? text(e.message) ?? text(failed.message)
  // OpenRouter's chunks name an HTTP status as the code.
  const numeric = typeof nested.code === 'number' && nested.code >= 400 && nested.code < 600 ? nested.code : undefined
  const status = (code && PROVIDER_ERROR_STATUS[code]) || numeric || 502
  return upstreamError(provider, status, JSON.stringify({ error: { message, type: code } }))
}

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
  // Out of funds or quota is the state of Roster's credential with that provider, not the caller's
  // (as a refused credential is): another endpoint may serve, so it is a 502, not a 402.
  if (status === 402 || kind === 'insufficient_quota' || kind === 'billing_error')
    return gatewayError('payment_required', `${provider} refused Roster's credential for payment or quota${said}`, {
      status: 502,
    })
  if (status === 429 || kind === 'rate_limit_error' || kind === 'rate_limit_exceeded')
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
