import { failSpan, SpanKind, startSpan } from '@roster/shared'
import type { GatewayObserver } from '@roster/gateway'

/**
 * Each upstream model call as a client span under the request's span, with the attributes of
 * OpenTelemetry's GenAI semantic conventions (gen_ai.*: operation, provider, request and response
 * model, sampling, usage, finish reasons; error.type on failure). Prompts and completions are not
 * recorded: they are the users' data, and may hold what their vaults keep from the model.
 */
export function gatewayTracing(): GatewayObserver {
  return {
    upstream(call) {
      const url = new URL(call.baseUrl)
      const span = startSpan(`chat ${call.model}`, {
        kind: SpanKind.CLIENT,
        attributes: {
          'gen_ai.operation.name': 'chat',
          'gen_ai.provider.name': call.provider,
          'gen_ai.request.model': call.upstreamModel,
          'gen_ai.request.stream': call.stream,
          ...(call.maxTokens !== undefined && { 'gen_ai.request.max_tokens': call.maxTokens }),
          ...(call.temperature !== undefined && { 'gen_ai.request.temperature': call.temperature }),
          ...(call.topP !== undefined && { 'gen_ai.request.top_p': call.topP }),
          'server.address': url.hostname,
          'server.port': Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
          'roster.model': call.model,
          'roster.provider.protocol': call.protocol,
        },
      })
      return (end) => {
        if (!span) return
        if (end.firstByteMs !== undefined)
          span.setAttribute('gen_ai.response.time_to_first_chunk', end.firstByteMs / 1000)
        if (end.ok) {
          // gen_ai.response.model is left out: the adapters do not read the model a provider reports.
          if (end.finish) span.setAttribute('gen_ai.response.finish_reasons', [end.finish])
          if (end.usage) {
            span.setAttribute('gen_ai.usage.input_tokens', end.usage.input)
            span.setAttribute('gen_ai.usage.output_tokens', end.usage.output)
            if (end.usage.cached) span.setAttribute('gen_ai.usage.cache_read.input_tokens', end.usage.cached)
          }
        } else {
          span.setAttribute('error.type', end.errorType ?? '_OTHER')
          failSpan(span, new Error(`upstream call failed: ${end.errorType ?? 'unknown'}`))
        }
        span.end()
      }
    },
    request() {},
  }
}
