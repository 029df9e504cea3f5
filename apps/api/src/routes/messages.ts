import type { FastifyPluginAsync } from 'fastify'
import {
  CountTokensRequest,
  countTokens,
  findModel,
  MessagesRequest,
  MessagesStream,
  messagesToNeutral,
  parseCountTokensRequest,
  parseMessagesRequest,
  toMessage,
} from '@roster/gateway'
import { AppError } from '@roster/shared'
import type { AppDeps } from '../deps.js'
import { requireKey } from '../plugins/auth.js'
import { doorRoute, RESPONSES_BODY_LIMIT, sparseValidator } from './gateway-run.js'

/**
 * POST /messages: the Anthropic Messages door of the same engine as /responses. The key may come
 * as `x-api-key` (the Anthropic client's header) or as a bearer token; `anthropic-version` and
 * `anthropic-beta` are accepted and change nothing. Errors leave in the shape the Anthropic
 * client parses (`{type: "error", error: {type, message}}`).
 */
export const messagesRoutes = (deps: AppDeps) =>
  doorRoute(deps, {
    path: '/messages',
    operationId: 'createMessage',
    summary: 'Run a model request (Anthropic Messages format)',
    schema: MessagesRequest,
    parse: parseMessagesRequest,
    name: 'messages',
    anthropic: true,
    toNeutral: messagesToNeutral,
    stream: () => new MessagesStream(),
    reply: toMessage,
  })

/**
 * POST /messages/count_tokens: what Anthropic's clients call to size a request (`messages.countTokens`).
 * The answer is Roster's estimate of the input (documented as one in docs/gateway.md), for a model
 * this Roster serves; no provider is asked.
 */
export const countTokensRoutes =
  (deps: AppDeps): FastifyPluginAsync =>
  async (app) => {
    app.post(
      '/messages/count_tokens',
      {
        onRequest: requireKey(deps.authenticate, { xApiKey: true, inference: true }),
        bodyLimit: RESPONSES_BODY_LIMIT,
        config: { errorWire: 'anthropic' },
        validatorCompiler: sparseValidator(parseCountTokensRequest),
        schema: {
          operationId: 'countMessageTokens',
          summary: "A Messages request's input tokens (Roster's estimate)",
          body: CountTokensRequest,
        },
      },
      async (req) => {
        const body = req.body as CountTokensRequest
        if (!body.model.startsWith('@preset/') && !findModel(deps.catalogue, body.model))
          throw new AppError('not_found', `no model named ${body.model} is served here; GET /api/v1/models lists them`)
        return countTokens(body)
      },
    )
  }
