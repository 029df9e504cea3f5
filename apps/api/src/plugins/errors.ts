import type { FastifyError, FastifyInstance } from 'fastify'
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod'
import { AppError, errorBody, isAppError, type Reason } from '@roster/shared'
import { GatewayError } from '@roster/gateway'

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
    if (err instanceof GatewayError) {
      // The standard envelope, with the spec's canonical error type; a 429 keeps its Retry-After.
      if (err.retryAfter) reply.header('retry-after', err.retryAfter)
      return reply
        .code(err.status)
        .type('application/json')
        .send({ error: { code: err.status, message: err.message, metadata: { error_type: err.errorType } } })
    }
    const known = toAppError(err)
    if (known) return reply.code(known.status).type('application/json').send(errorBody(known.reason, known.message))
    req.log.error({ err }, 'unhandled error')
    return reply
      .code(500)
      .type('application/json')
      .send(errorBody('internal_error', `internal error (request ${req.id}); the same request may be sent again`))
  })
  app.setNotFoundHandler((req, reply) =>
    reply.code(404).type('application/json').send(errorBody('not_found', `no route for ${req.method} ${req.url.split('?')[0]}`)),
  )
}

function toAppError(err: FastifyError): AppError | undefined {
  if (isAppError(err)) return err
  if (hasZodFastifySchemaValidationErrors(err)) {
    const detail = err.validation
      .slice(0, 5)
      .map((v) => `${v.instancePath || '/'} ${v.message ?? 'is invalid'}`)
      .join('; ')
    return new AppError('invalid_body', `invalid request: ${detail}`)
  }
  const reason = err.code ? fastifyCodes[err.code] : undefined
  if (reason) return new AppError(reason, err.message)
  // JSON.parse failures surface as a SyntaxError with statusCode 400.
  if (err.statusCode === 400) return new AppError('invalid_body', `invalid request: ${err.message}`)
  return undefined
}
