import type { FastifyPluginAsync } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { MessagesRequest, MessagesStream, messagesToNeutral, parseMessagesRequest, toMessage } from '@roster/gateway'
import { requireKey } from '../plugins/auth.js'
import type { AppDeps } from '../deps.js'
import { RESPONSES_BODY_LIMIT } from './responses.js'
import { runGateway, sparseValidator } from './gateway-run.js'

/**
 * POST /messages: the Anthropic Messages door of the same engine as /responses. The key may come
 * as `x-api-key` (the Anthropic client's header) or as a bearer token; `anthropic-version` and
 * `anthropic-beta` are accepted and change nothing. Errors leave in the shape the Anthropic
 * client parses (`{type: "error", error: {type, message}}`).
 */
export const messagesRoutes = (deps: AppDeps): FastifyPluginAsync => async (app) => {
  app.withTypeProvider<ZodTypeProvider>().post(
    '/messages',
    {
      onRequest: requireKey(deps.authenticate, { xApiKey: true }),
      bodyLimit: RESPONSES_BODY_LIMIT,
      config: { anthropicErrors: true },
      validatorCompiler: sparseValidator(parseMessagesRequest),
      schema: { operationId: 'createMessage', summary: 'Run a model request (Anthropic Messages format)', body: MessagesRequest },
    },
    async (req, reply) => {
      const neutral = messagesToNeutral(req.body)
      const response = await runGateway(deps, req, reply, neutral, { name: 'messages', stream: neutral.stream ? new MessagesStream() : undefined })
      return response ? toMessage(response) : reply
    },
  )
}
