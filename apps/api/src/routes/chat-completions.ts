import type { FastifyPluginAsync } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { ChatCompletionRequest, ChatCompletionStream, chatReplyOptions, chatToNeutral, parseChatCompletionRequest, toChatCompletion } from '@roster/gateway'
import { requireKey } from '../plugins/auth.js'
import type { AppDeps } from '../deps.js'
import { RESPONSES_BODY_LIMIT } from './responses.js'
import { runGateway, sparseValidator } from './gateway-run.js'

/**
 * POST /chat/completions: the OpenAI Chat Completions door of the same engine as /responses. The
 * request becomes the engine's neutral request; the Response (or its events) becomes a
 * `chat.completion` (or `chat.completion.chunk`s ending in `[DONE]`). Errors are the API's
 * envelope with the canonical error type, as on /responses.
 */
export const chatCompletionsRoutes = (deps: AppDeps): FastifyPluginAsync => async (app) => {
  app.withTypeProvider<ZodTypeProvider>().post(
    '/chat/completions',
    {
      onRequest: requireKey(deps.authenticate),
      bodyLimit: RESPONSES_BODY_LIMIT,
      config: { canonicalErrorTypes: true },
      validatorCompiler: sparseValidator(parseChatCompletionRequest),
      schema: { operationId: 'sendChatCompletionRequest', summary: 'Run a model request (OpenAI Chat Completions format)', body: ChatCompletionRequest },
    },
    async (req, reply) => {
      const options = chatReplyOptions(req.body)
      const neutral = chatToNeutral(req.body)
      const response = await runGateway(deps, req, reply, neutral, { name: 'chat_completions', stream: neutral.stream ? new ChatCompletionStream(options) : undefined })
      return response ? toChatCompletion(response, options) : reply
    },
  )
}
