import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify'
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod'
import {
  AppError,
  anthropicErrorBody,
  errorBody,
  gatewayErrorBody,
  isAppError,
  isDatabaseBusy,
  vaultErrorBody,
  type Reason,
} from '@roster/shared'
import { GatewayError, explainIssue } from '@roster/gateway'
import { anthropicClient } from './anthropic-clients.js'

// Fastify's own request errors, mapped onto the spec's reasons.
const fastifyCodes: Record<string, Reason> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_body',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'invalid_body',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_body',
  FST_ERR_VALIDATION: 'invalid_body',
}

/**
 * The one error handler: every failure leaves as JSON, in the wire format of its route (its
 * `config.errorWire`; the lifecycle envelope by default), rendered from the one table of errors.
 */
export function registerErrorHandling(app: FastifyInstance) {
  app.setErrorHandler((err: FastifyError, req, reply) => {
    const wire = anthropicClient(req) ? 'anthropic' : (req.routeOptions.config.errorWire ?? 'lifecycle')
    const failure = err instanceof GatewayError ? err : (toAppError(err) ?? unhandled(err, req))
    if (failure.retryAfter) reply.header('retry-after', String(failure.retryAfter))
    return reply.code(failure.status).type('application/json').send(render(wire, failure))
  })
  app.setNotFoundHandler((req, reply) =>
    reply
      .code(404)
      .type('application/json')
      .send(errorBody('not_found', `no route for ${req.method} ${req.url.split('?')[0]}`)),
  )
}

/** A failure in a route's wire format. */
function render(wire: ErrorWire, failure: AppError | GatewayError) {
  switch (wire) {
    case 'anthropic':
      // The Anthropic door answers every failure in the shape the Anthropic client parses.
      return anthropicErrorBody(failure.status, failure.message, failure.errorType)
    case 'gateway':
      // The responses doors name every failure by the spec's canonical error type, their own
      // refusals and the HTTP layer's alike, so a client reads one field whatever went wrong.
      if (failure instanceof GatewayError)
        return gatewayErrorBody(failure.errorType, failure.message, failure.status, failure.metadata)
      return withMetadata(failure, { error_type: failure.errorType })
    case 'vault':
      return failure instanceof AppError
        ? vaultErrorBody(failure.reason, failure.message, failure.status)
        : { error: { code: failure.status, message: failure.message } }
    case 'chat':
      // Intern chat names an invalid request bad_request (its contract's §1.7), where the lifecycle says invalid_body.
      return failure instanceof AppError && failure.reason === 'invalid_body'
        ? withMetadata(failure, { reason: 'bad_request' })
        : lifecycle(failure)
    case 'lifecycle':
      return lifecycle(failure)
  }
}

const lifecycle = (failure: AppError | GatewayError) =>
  failure instanceof AppError
    ? errorBody(failure.reason, failure.message, failure.status)
    : gatewayErrorBody(failure.errorType, failure.message, failure.status, failure.metadata)

/** The lifecycle envelope with more in its metadata. */
function withMetadata(failure: AppError, extra: Record<string, unknown>) {
  const body: { error: { metadata?: Record<string, unknown> } } = errorBody(
    failure.reason,
    failure.message,
    failure.status,
  )
  body.error.metadata = { ...body.error.metadata, ...extra }
  return body
}

function unhandled(err: FastifyError, req: FastifyRequest): AppError {
  req.log.error({ err }, 'unhandled error')
  return new AppError('internal_error', `internal error (request ${req.id}); the same request may be sent again`)
}

/** The wire formats of the routes' errors (packages/protocol/src/errors.ts renders each). */
type ErrorWire = 'lifecycle' | 'chat' | 'vault' | 'gateway' | 'anthropic'

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The route's error bodies: the lifecycle envelope (default); intern chat's (bad_request for an
     * invalid request); the vault's (no reason); the gateway's (`metadata.error_type`, the spec's
     * canonical error type: responses, chat completions); the Anthropic client's (messages).
     */
    errorWire?: ErrorWire
    /** A route the Anthropic client calls besides /messages (models): its errors in its shape when it calls. */
    anthropicClients?: boolean
  }
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
  if (isDatabaseBusy(err))
    return new AppError('overloaded', 'the database is too busy to take this request now; nothing was changed: retry', {
      retryAfter: 1,
    })
  const reason = err.code ? fastifyCodes[err.code] : undefined
  if (reason) return new AppError(reason, err.message)
  // JSON.parse failures surface as a SyntaxError with statusCode 400.
  if (err.statusCode === 400) return new AppError('invalid_body', `invalid request: ${err.message}`)
  return undefined
}
