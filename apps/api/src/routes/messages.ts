import { MessagesRequest, MessagesStream, messagesToNeutral, parseMessagesRequest, toMessage } from '@roster/gateway'
import type { AppDeps } from '../deps.js'
import { doorRoute } from './gateway-run.js'

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
