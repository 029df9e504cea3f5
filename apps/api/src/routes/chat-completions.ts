import {
  ChatCompletionRequest,
  ChatCompletionStream,
  chatPassThrough,
  chatReplyOptions,
  chatToNeutral,
  parseChatCompletionRequest,
  toChatCompletion,
} from '@roster/gateway'
import type { AppDeps } from '../deps.js'
import { doorRoute } from './gateway-run.js'

/**
 * POST /chat/completions: the OpenAI Chat Completions door of the same engine as /responses. The
 * request becomes the engine's neutral request; the Response (or its events) becomes a
 * `chat.completion` (or `chat.completion.chunk`s ending in `[DONE]`). Errors are the API's
 * envelope with the canonical error type, as on /responses.
 */
export const chatCompletionsRoutes = (deps: AppDeps) =>
  doorRoute(deps, {
    aliases: 'openai',
    path: '/chat/completions',
    operationId: 'sendChatCompletionRequest',
    summary: 'Run a model request (OpenAI Chat Completions format)',
    schema: ChatCompletionRequest,
    parse: parseChatCompletionRequest,
    name: 'chat_completions',
    toNeutral: chatToNeutral,
    stream: (body) => new ChatCompletionStream(chatReplyOptions(body)),
    reply: (response, body) => toChatCompletion(response, chatReplyOptions(body)),
    // A reply whose reasoning the client asked not to see is the door's to write.
    passThrough: { whole: chatPassThrough, allowed: (body) => !chatReplyOptions(body).hideReasoning },
  })
