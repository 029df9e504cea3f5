import { isUtf8 } from 'node:buffer'
import type { Socket } from 'node:net'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import {
  AppError,
  errorBody,
  isStorableText,
  rawErrorResponse,
  REQUEST_TIMEOUT_RESPONSE,
  vaultErrorBody,
} from '@roster/shared'

// What no route can take, refused before any route runs, in the documented error body.

/** Deepest JSON a body may nest (objects and arrays). Deeper bodies are 400, before anything walks them recursively. */
export const MAX_JSON_DEPTH = 64

/**
 * How deep `value` nests, walked without recursion and stopped as soon as it passes `limit`:
 * a body 20,000 levels deep must not overflow the stack of whatever reads it next.
 */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  if (typeof value !== 'object' || value === null) return false
  // Two parallel stacks rather than one of pairs: every request's body passes through here.
  const nodes: object[] = [value]
  const depths: number[] = [1]
  while (nodes.length) {
    const node = nodes.pop()!
    const depth = depths.pop()!
    if (depth > limit) return true
    if (Array.isArray(node)) {
      for (const v of node) {
        if (typeof v === 'object' && v !== null) {
          nodes.push(v)
          depths.push(depth + 1)
        }
      }
    } else {
      for (const k in node) {
        const v = (node as Record<string, unknown>)[k]
        if (typeof v === 'object' && v !== null) {
          nodes.push(v)
          depths.push(depth + 1)
        }
      }
    }
  }
  return false
}

/** Where in `value` a string (or key) holds text Postgres cannot store (isStorableText). */
export function unstorableText(value: unknown, path = ''): string | undefined {
  const stack: [unknown, string][] = [[value, path]]
  while (stack.length) {
    const [node, at] = stack.pop()!
    if (typeof node === 'string') {
      if (!isStorableText(node)) return at || '/'
    } else if (Array.isArray(node)) {
      node.forEach((v, i) => stack.push([v, `${at}/${i}`]))
    } else if (typeof node === 'object' && node !== null) {
      for (const k in node) {
        if (!isStorableText(k)) return `${at}/${k.replace(/\0/g, '\\u0000')}`
        stack.push([(node as Record<string, unknown>)[k], `${at}/${k}`])
      }
    }
  }
  return undefined
}

export function registerInputGuards(app: FastifyInstance) {
  // Bytes that are not UTF-8 are not JSON (RFC 8259 §8.1): refused, not read with U+FFFD in their
  // place. Then Fastify's own JSON parser (with its prototype-poisoning checks), then the depth limit.
  const parseJson = app.getDefaultJsonParser('error', 'error')
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, bytes, done) => {
    if (!isUtf8(bytes as Buffer))
      return done(new AppError('invalid_body', 'invalid request: the body is not valid UTF-8'), undefined)
    const text = (bytes as Buffer).toString('utf8')
    void parseJson(req, text, (err, value) => {
      if (err) return done(whyNotJson(err, text), undefined)
      if (nestsDeeperThan(value, MAX_JSON_DEPTH))
        return done(
          new AppError('invalid_body', `invalid request: the body nests deeper than ${MAX_JSON_DEPTH} levels`),
          undefined,
        )
      done(null, value)
    })
  })
}

/**
 * Fastify's parser says only that a body is not JSON; the client is told why: where the syntax
 * breaks (JSON.parse's own words), or that it is JSON with a key that could poison a prototype.
 * Only refused bodies pay for the second parse.
 */
function whyNotJson(err: Error & { code?: string }, text: string): Error {
  if (err.code !== 'FST_ERR_CTP_INVALID_JSON_BODY') return err
  try {
    JSON.parse(text)
  } catch (syntax) {
    return new AppError('invalid_body', `invalid request: the body is not valid JSON (${(syntax as Error).message})`)
  }
  return new AppError(
    'invalid_body',
    'invalid request: the body holds a "__proto__" or "constructor.prototype" key, which no request may hold',
  )
}

/**
 * A preValidation hook for the routes that reach the database (interns, presets, the vault): text
 * Postgres would refuse (a NUL: error 22021) or alter (a lone surrogate), wherever it came in, is
 * 400 naming where. `/responses` stores nothing and passes such text on to the provider.
 */
export function refuseUnstorableText(req: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) {
  const where = textProblem(req)
  done(
    where
      ? new AppError(
          'invalid_body',
          `invalid request: ${where} holds a NUL character or a lone surrogate, which cannot be stored`,
        )
      : undefined,
  )
}

function textProblem(req: FastifyRequest): string | undefined {
  const inParams = unstorableText(req.params)
  if (inParams) return `the path parameter ${inParams.slice(1)}`
  const inQuery = unstorableText(req.query)
  if (inQuery) return `the query parameter ${inQuery.slice(1)}`
  if (typeof req.body !== 'object' || req.body === null || Buffer.isBuffer(req.body)) return undefined
  const inBody = unstorableText(req.body)
  return inBody && `the body at ${inBody}`
}

/**
 * Fastify's router refusals (a path that is not valid percent-encoding; a path parameter over its
 * length) answered in the documented body instead of Fastify's own. No resource has such a path:
 * intern ids are UUIDs, preset slugs at most 64 characters and secret names 255.
 */
export function frameworkErrors(error: Error & { code?: string }, req: FastifyRequest, reply: FastifyReply) {
  // The vault's errors carry the contract's message and no reason (see the error handler).
  if (req.url.startsWith('/api/v1/vault/')) {
    void reply.code(404).type('application/json').send(vaultErrorBody('not_found', 'Not found'))
    return
  }
  const why =
    error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? 'a path segment is longer than any id, slug or name'
      : 'the path is not valid percent-encoding'
  void reply
    .code(404)
    .type('application/json')
    .send(errorBody('not_found', `no resource at this path: ${why}`))
}

/**
 * A request that is not readable HTTP (Node's parser refused it) or did not arrive in time (headers
 * past HEADERS_TIMEOUT_MS, the request past REQUEST_TIMEOUT_MS), answered in the documented body;
 * `cut` is told why the connection ends.
 */
export const clientErrorHandler =
  (cut: (reason: 'request_timeout' | 'bad_request') => void = () => {}) =>
  (err: Error & { code?: string }, socket: Socket) => {
    if (err.code === 'ECONNRESET') return
    const timedOut = err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
    cut(timedOut ? 'request_timeout' : 'bad_request')
    if (socket.destroyed || !socket.writable) return
    socket.end(
      timedOut
        ? REQUEST_TIMEOUT_RESPONSE
        : err.code === 'HPE_HEADER_OVERFLOW'
          ? // No reason of the spec's names this: the status says it.
            rawErrorResponse(431, { error: { code: 431, message: 'the request headers are too large' } })
          : rawErrorResponse(400, errorBody('invalid_body', 'the request is not valid HTTP')),
    )
    // A client that sends nothing more would otherwise hold the half-closed socket.
    socket.destroySoon()
  }
