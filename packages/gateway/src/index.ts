export * from './request.js'
export * from './catalogue.js'
export * from './model-directory.js'
export * from './engine.js'
export { ProviderPreferences } from './routing.js'
export type { TraceLogger } from './trace.js'
export * from './presets.js'
export { Cancellation } from './cancellation.js'
export type { CallHooks, Transport } from './upstream.js'
export { describeIssues, explainIssue, gatewayError, type GatewayErrorType, type ZodIssueLike } from './errors.js'
export {
  guardedLookup,
  isForbiddenAddress,
  readCapped,
  refusedLiteral,
  FILE_ID,
  type FileRecord,
  type FilesPort,
  type SandboxPort,
  type SearchBackendOptions,
} from './server-tools/index.js'
export * from './wire.js'
export type { DoorStream, PassThroughWhole } from './doors/door.js'
export { PROVIDER_REPLY, type WithProviderReply } from './response-object.js'
export {
  ChatCompletionRequest,
  ChatCompletionStream,
  chatPassThrough,
  chatReplyOptions,
  chatToNeutral,
  parseChatCompletionRequest,
  toChatCompletion,
} from './doors/chat-completions.js'
export {
  CountTokensRequest,
  countTokens,
  MessagesRequest,
  MessagesStream,
  messagesPassThrough,
  parseCountTokensRequest,
  messagesToNeutral,
  parseMessagesRequest,
  toMessage,
} from './doors/messages.js'
export { CompactRequest } from './compaction.js'
export { patternError, type FilterMatch } from './guardrails.js'
export { isByok, SEARCH_PROVIDERS, type ByokCredential, type ByokCaller } from './byok.js'
export { anthropicExtras, ANTHROPIC_FIELDS, betasOf } from './doors/anthropic-betas.js'
export * from './provider-catalogue.js'
export { ADAPTERS, PROTOCOLS } from './adapters/registry.js'
export * from './model-names.js'
