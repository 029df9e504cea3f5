import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify'
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod'
import { AppError, errorBody, isAppError, type Reason } from '@roster/shared'
import { GatewayError, anthropicErrorBody, explainIssue } from '@roster/gateway'

// Fastify's own request errors, mapped onto the spec's reasons.
const fastifyCodes: Record<string, Reason> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_body',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'invalid_body',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_body',
  FST_ERR_VALIDATION: 'invalid_body',
}

/** The one error handler: every failure leaves as the InternLifecycleError body, as JSON. */
export function registerErrorHandling(app: FastifyInstance) {
  app.setErrorHandler((err: FastifyError, req, reply) => {
    const config = req.routeOptions.config
    if (err instanceof GatewayError) {
      // The gateway's canonical error type, in the door's shape (the Anthropic client's on its
      // door, the standard envelope elsewhere); a 429 keeps its Retry-After.
      if (err.retryAfter) reply.header('retry-after', err.retryAfter)
      const body = config.anthropicErrors
        ? anthropicErrorBody(err.status, err.message, err.errorType)
        : { error: { code: err.status, message: err.message, metadata: { error_type: err.errorType } } }
      return reply.code(err.status).type('application/json').send(body)
    }
    const known = toAppError(err) ?? unhandled(err, req)
    if (known.retryAfter) reply.header('retry-after', String(known.retryAfter))
    // The Anthropic door answers every failure in the shape the Anthropic client parses.
    if (config.anthropicErrors)
      return reply
        .code(known.status)
        .type('application/json')
        .send(anthropicErrorBody(known.status, known.message, canonicalErrorType[known.reason]))
    if (config.vaultErrors) return reply.code(known.status).type('application/json').send(vaultErrorBody(known))
    const body: { error: { metadata?: Record<string, unknown> } } = errorBody(known.reason, known.message, known.status)
    // Intern chat names an invalid request bad_request (its contract's §1.7), where the lifecycle says invalid_body.
    if (config.chatErrors && known.reason === 'invalid_body')
      body.error.metadata = { ...body.error.metadata, reason: 'bad_request' }
    // The responses operation names every failure by the spec's canonical error type, its own
    // refusals and the HTTP layer's alike, so a client reads one field whatever went wrong.
    if (config.canonicalErrorTypes)
      body.error.metadata = { ...body.error.metadata, error_type: canonicalErrorType[known.reason] }
    return reply.code(known.status).type('application/json').send(body)
  })
  app.setNotFoundHandler((req, reply) =>
    reply
      .code(404)
      .type('application/json')
      .send(errorBody('not_found', `no route for ${req.method} ${req.url.split('?')[0]}`)),
  )
}

function unhandled(err: FastifyError, req: FastifyRequest): AppError {
  req.log.error({ err }, 'unhandled error')
  return new AppError('internal_error', `internal error (request ${req.id}); the same request may be sent again`)
}

/**
 * The vault routes' errors: the standard envelope with the contract's messages and no reason
 * (its §2.6: "the message is the only thing that tells failures apart"); a refusal of the input
 * also says what was wrong.
 */
function vaultErrorBody(err: AppError) {
  const message =
    err.reason === 'invalid_body'
      ? `Invalid vault request: ${err.message.replace(/^invalid request: /, '')}`
      : err.reason === 'payload_too_large'
        ? 'Request body too large'
        : err.reason === 'internal_error'
          ? 'Internal Server Error'
          : err.message
  return { error: { code: err.status, message } }
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The vault's error bodies (vaultErrorBody). */
    vaultErrors?: boolean
    /** Intern chat's reasons (bad_request for an invalid request). */
    chatErrors?: boolean
    /** Errors also carry `metadata.error_type`, the spec's canonical error type (responses, chat completions). */
    canonicalErrorTypes?: boolean
    /** Errors in the Anthropic client's shape (messages). */
    anthropicErrors?: boolean
  }
}

/** Our reasons as the spec's canonical error types (the enum of the Response object's error). */
const canonicalErrorType: Record<Reason, string> = {
  invalid_body: 'invalid_request',
  unsupported_media_type: 'invalid_request',
  payload_too_large: 'payload_too_large',
  unauthorized: 'authentication',
  no_acting_user: 'permission_denied',
  workspace_capability_unavailable: 'permission_denied',
  management_key_required: 'permission_denied',
  not_found: 'not_found',
  timeout: 'timeout',
  idempotency_key_reused: 'precondition_failed',
  name_taken: 'precondition_failed',
  intern_limit_reached: 'precondition_failed',
  vault_not_attachable: 'precondition_failed',
  already_running: 'precondition_failed',
  already_provisioning: 'precondition_failed',
  already_stopped: 'precondition_failed',
  intern_deleting: 'precondition_failed',
  workspace_loss_unacknowledged: 'precondition_failed',
  preset_conflict: 'precondition_failed',
  vault_conflict: 'precondition_failed',
  intern_not_ready: 'precondition_failed',
  busy: 'rate_limit_exceeded',
  interaction_unknown: 'not_found',
  interaction_not_pending: 'precondition_failed',
  intern_rejected: 'provider_unavailable',
  rate_limited: 'rate_limit_exceeded',
  intern_unreachable: 'provider_unavailable',
  vault_writes_disabled: 'provider_unavailable',
  internal_error: 'server',
  configuration_error: 'server',
  upstream_unavailable: 'provider_unavailable',
  overloaded: 'server',
}

function toAppError(err: FastifyError): AppError | undefined {
  if (isAppError(err)) return err
  if (hasZodFastifySchemaValidationErrors(err)) {
    const detail = err.validation
      .slice(0, 5)
      .map((v) => {
        const { path, message } = explainIssue({ ...v.params, code: v.keyword, path: [], message: v.message })
        return `${[v.instancePath === '/' ? '' : v.instancePath, ...path.map(String)].join('/') || '/'} ${message}`
      })
      .join('; ')
    return new AppError('invalid_body', `invalid request: ${detail}`)
  }
  const reason = err.code ? fastifyCodes[err.code] : undefined
  if (reason) return new AppError(reason, err.message)
  // JSON.parse failures surface as a SyntaxError with statusCode 400.
  if (err.statusCode === 400) return new AppError('invalid_body', `invalid request: ${err.message}`)
  return undefined
}
