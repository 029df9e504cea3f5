import type { ResponsesRequest } from '../request.js'

// Responses request ⇄ OpenAI Chat Completions (also vLLM, Ollama, llama.cpp, LM Studio and most
// hosted providers). Non-streaming for now; the stream translation comes with the streaming path.

type Json = Record<string, any>

/** One turn's outcome, whatever the provider protocol: what the Response object is built from. */
export interface Turn {
  upstreamId: string
  text: string | null
  refusal: string | null
  reasoning: string | null
  toolCalls: { id: string; name: string; arguments: string }[]
  finish: 'stop' | 'length' | 'tool_calls' | 'content_filter'
  usage: { input: number; cached: number; output: number; reasoning: number }
}

const partText = (part: Json): Json | null => {
  switch (part?.type) {
    case 'input_text':
    case 'output_text':
    case 'text':
      return { type: 'text', text: String(part.text ?? '') }
    case 'input_image':
      return { type: 'image_url', image_url: { url: part.image_url ?? part.url, ...(part.detail ? { detail: part.detail } : {}) } }
    default:
      return null
  }
}

function content(c: unknown): string | Json[] | null {
  if (typeof c === 'string' || c === null) return c
  if (!Array.isArray(c)) return null
  const parts = c.map(partText).filter((p): p is Json => p !== null)
  return parts.length === 1 && parts[0]!.type === 'text' ? parts[0]!.text : parts
}

/** Input items → chat messages: messages, function calls (grouped into one assistant turn), results. */
export function toChatMessages(req: ResponsesRequest): Json[] {
  const messages: Json[] = []
  if (req.instructions) messages.push({ role: 'system', content: req.instructions })
  const items = typeof req.input === 'string' ? [{ role: 'user', content: req.input }] : (req.input ?? [])
  for (const item of items as Json[]) {
    if (item.type === 'function_call') {
      const call = { id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments ?? '{}' } }
      const last = messages.at(-1)
      if (last?.role === 'assistant' && Array.isArray(last.tool_calls)) last.tool_calls.push(call)
      else messages.push({ role: 'assistant', content: null, tool_calls: [call] })
    } else if (item.type === 'function_call_output') {
      messages.push({ role: 'tool', tool_call_id: item.call_id, content: typeof item.output === 'string' ? item.output : JSON.stringify(item.output) })
    } else if (item.role) {
      messages.push({ role: item.role === 'developer' ? 'system' : item.role, content: content(item.content) })
    }
  }
  return messages
}

/** The Chat Completions body for a request (`user` arrives already hashed; credentials never here). */
export function toChatBody(req: ResponsesRequest, upstreamModel: string, user: string | undefined): Json {
  const body: Json = { model: upstreamModel, messages: toChatMessages(req), stream: false }
  if (req.max_output_tokens != null) body.max_tokens = req.max_output_tokens
  for (const k of ['temperature', 'top_p', 'frequency_penalty', 'presence_penalty', 'parallel_tool_calls'] as const) {
    if (req[k] != null) body[k] = req[k]
  }
  if (req.stop != null) body.stop = req.stop
  const tools = (req.tools ?? []).filter((t) => t.type === 'function') as Json[]
  if (tools.length) {
    body.tools = tools.map((t) => ({
      type: 'function',
      function: { name: t.name, ...(t.description ? { description: t.description } : {}), parameters: t.parameters ?? { type: 'object', properties: {} }, ...(t.strict != null ? { strict: t.strict } : {}) },
    }))
  }
  const choice = req.tool_choice as Json | string | undefined
  if (typeof choice === 'string') body.tool_choice = choice
  else if (choice?.type === 'function') body.tool_choice = { type: 'function', function: { name: choice.name } }
  const format = req.text?.format as Json | undefined
  if (format?.type === 'json_object') body.response_format = { type: 'json_object' }
  if (format?.type === 'json_schema') {
    body.response_format = { type: 'json_schema', json_schema: { name: format.name, schema: format.schema, ...(format.strict != null ? { strict: format.strict } : {}) } }
  }
  if (req.reasoning?.effort && req.reasoning.effort !== 'none') body.reasoning_effort = req.reasoning.effort
  if (user) body.user = user
  return body
}

/** A Chat Completions reply → one turn. */
export function fromChatReply(reply: Json): Turn {
  const choice = reply.choices?.[0] ?? {}
  const message = choice.message ?? {}
  const usage = reply.usage ?? {}
  return {
    upstreamId: String(reply.id ?? ''),
    text: typeof message.content === 'string' ? message.content : null,
    refusal: typeof message.refusal === 'string' ? message.refusal : null,
    reasoning: message.reasoning_content ?? message.reasoning ?? null,
    toolCalls: (message.tool_calls ?? []).map((c: Json) => ({ id: String(c.id), name: String(c.function?.name), arguments: String(c.function?.arguments ?? '') })),
    finish: (['stop', 'length', 'tool_calls', 'content_filter'] as const).find((f) => f === choice.finish_reason) ?? 'stop',
    usage: {
      input: usage.prompt_tokens ?? 0,
      cached: usage.prompt_tokens_details?.cached_tokens ?? 0,
      output: usage.completion_tokens ?? 0,
      reasoning: usage.completion_tokens_details?.reasoning_tokens ?? 0,
    },
  }
}
