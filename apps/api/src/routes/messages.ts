import type { FastifyPluginAsync } from 'fastify'
import {
  catalogueIdOf,
  anthropicExtras,
  betasOf,
  CountTokensRequest,
  countTokens,
  MessagesRequest,
  MessagesStream,
  messagesPassThrough,
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
 * as `x-api-key` (the Anthropic client's header) or as a bearer token; `anthropic-version` is
 * accepted, and `anthropic-beta` may name any feature (anthropic-betas.ts: passed on to Anthropic
 * endpoints, dropped elsewhere; a body that uses a feature no endpoint can serve is refused by its name). Errors leave in the shape the Anthropic client parses
 * (`{type: "error", error: {type, message}}`).
 */
export const messagesRoutes = (deps: AppDeps) =>
  doorRoute(deps, {
    aliases: 'anthropic',
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
    passThrough: { whole: messagesPassThrough },
    extras: (headers, body) => anthropicExtras(headers['anthropic-beta'], body),
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
        betasOf(req.headers['anthropic-beta'])
        const body = req.body as CountTokensRequest
        // Anthropic answers a model it does not serve 404 "model: <name>" (a preset form is a name too).
        if (!catalogueIdOf(deps.catalogue, 'anthropic', body.model) && !body.model.includes('@preset/'))
          throw new AppError('not_found', `model: ${body.model}`)
        return countTokens(body)
      },
    )
  }
