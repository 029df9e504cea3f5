import { createHash } from 'node:crypto'
import type { Ask, Plan } from '../plan.js'
import { sincePrompt, textOf, wantsCache } from '../plan.js'
import { pieces, type StreamWriter } from '../writer.js'
import { list, num, obj, str, strings, type Json } from '../json-view.js'

// Anthropic Messages: POST /v1/messages.

export function askFromMessages(body: Json): Ask {
  const messages = list(body.messages)
  const choice = obj(body.tool_choice)
  const hasBlock = (m: Json | undefined, type: string) => list(m?.content).some((b) => b.type === type)
  return {
    model: String(body.model ?? 'sim'),
    inputText: [textOf(body.system ?? ''), ...messages.map((m) => textOf(m.content))].filter(Boolean).join('\n'),
    tools: list(body.tools).flatMap((t) => {
      const name = str(t.name)
      // A typed tool (web_search_20250305…) is one Anthropic runs itself: not the client's to call.
      return name && (t.type == null || t.type === 'custom') ? [{ name, parameters: t.input_schema }] : []
    }),
    toolChoice:
      choice.type === 'tool'
        ? (str(choice.name) ?? 'auto')
        : choice.type === 'none'
          ? 'none'
          : choice.type === 'any'
            ? 'required'
            : 'auto',
    afterToolResult: hasBlock(messages.at(-1), 'tool_result'),
    ...sincePrompt(
      messages,
      (m) => m.role === 'user' && (typeof m.content === 'string' || hasBlock(m, 'text')),
      (m) => hasBlock(m, 'tool_result'),
    ),
    maxTokens: num(body.max_tokens),
    stop: strings(body.stop_sequences),
    cache: wantsCache(body),
    reasoning: obj(body.thinking).type === 'enabled',
  }
}

/**
 * A thinking block's signature: Anthropic's is opaque and checked (thinking given back altered, or
 * unsigned, is refused); the simulator's is a digest of the thinking, so that it can check it too.
 */
export const signatureOf = (thinking: string) =>
  'sim-sig-' + createHash('sha256').update(thinking).digest('base64url').slice(0, 32)

const THINKING_DOCS =
  'Please consult our documentation at https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking'

/**
 * What Anthropic refuses (400 invalid_request_error, its words) of a conversation with thinking:
 * with thinking on, the last assistant turn before the lastmost tool results must begin with its
 * thinking (or redacted thinking) block; and thinking given back must carry the signature it was
 * sent with.
 */
export function refuseMessages(body: Json): string | undefined {
  const messages = list(body.messages)
  for (const [i, m] of messages.entries())
    for (const [j, b] of list(m.content).entries())
      if (b.type === 'thinking' && b.signature !== signatureOf(String(b.thinking ?? '')))
        return `messages.${i}.content.${j}: Invalid \`signature\` in \`thinking\` block`
  if (obj(body.thinking).type !== 'enabled') return undefined
  const last = messages.length - 1
  if (!list(messages[last]?.content).some((b) => b.type === 'tool_result')) return undefined
  const turn = messages[last - 1]
  if (turn?.role !== 'assistant') return undefined
  const first = typeof turn.content === 'string' ? 'text' : String(list(turn.content)[0]?.type)
  if (first === 'thinking' || first === 'redacted_thinking') return undefined
  return (
    `messages.${last - 1}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${first}\`. ` +
    'When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the ' +
    'lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous ' +
    `turns. To avoid this requirement, disable \`thinking\`. ${THINKING_DOCS}`
  )
}

const stopReason = (p: Plan) => (p.finish === 'tool' ? 'tool_use' : p.finish === 'length' ? 'max_tokens' : 'end_turn')

// Every key the Anthropic client's types require of a Message and its usage (messages.d.ts), null
// where the simulator has nothing to say, as the API sends them.

function usageOf(p: Plan) {
  return {
    input_tokens: p.usage.input - p.usage.cached - p.usage.cacheWrite,
    output_tokens: p.usage.output,
    cache_read_input_tokens: p.usage.cached,
    cache_creation_input_tokens: p.usage.cacheWrite,
    cache_creation: null,
    // As Anthropic reports thinking: the part of the output tokens spent on it.
    output_tokens_details: p.usage.reasoning ? { thinking_tokens: p.usage.reasoning } : null,
    server_tool_use: null,
    inference_geo: null,
    service_tier: 'standard',
    speed: null,
  }
}

/** message_delta's usage: the counters of the Message's (MessageDeltaUsage). */
function deltaUsageOf(p: Plan) {
  const u = usageOf(p)
  return {
    input_tokens: u.input_tokens,
    output_tokens: u.output_tokens,
    cache_read_input_tokens: u.cache_read_input_tokens,
    cache_creation_input_tokens: u.cache_creation_input_tokens,
    output_tokens_details: u.output_tokens_details,
    server_tool_use: null,
  }
}

/** A tool_use block's caller: the model itself. */
const DIRECT = { type: 'direct' }

function blocks(p: Plan) {
  const out: Json[] = []
  if (p.reasoning.length) {
    const thinking = p.reasoning.join('')
    out.push({ type: 'thinking', thinking, signature: signatureOf(thinking) })
  }
  if (p.toolCall)
    out.push({
      type: 'tool_use',
      id: p.toolCall.id,
      name: p.toolCall.name,
      input: JSON.parse(p.toolCall.arguments),
      caller: DIRECT,
    })
  else out.push({ type: 'text', text: p.text.join('') })
  return out
}

export function messagesResponse(p: Plan) {
  return {
    id: `msg_${p.id}`,
    type: 'message',
    role: 'assistant',
    model: p.model,
    content: blocks(p),
    stop_reason: stopReason(p),
    stop_sequence: null,
    stop_details: null,
    container: null,
    diagnostics: null,
    usage: usageOf(p),
  }
}

export async function messagesStream(p: Plan, out: StreamWriter) {
  const send = (type: string, fields: Json, paced = false) => out.event({ type, ...fields }, type, paced)
  const start = { ...messagesResponse(p), content: [], stop_reason: null, usage: { ...usageOf(p), output_tokens: 1 } }
  if (!(await send('message_start', { message: start }))) return
  let index = 0
  if (p.reasoning.length) {
    if (
      !(await send('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } }))
    )
      return
    for (const r of p.reasoning)
      if (!(await send('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: r } }, true))) return
    const signature = signatureOf(p.reasoning.join(''))
    if (!(await send('content_block_delta', { index, delta: { type: 'signature_delta', signature } }))) return
    if (!(await send('content_block_stop', { index }))) return
    index++
  }
  if (p.toolCall) {
    if (
      !(await send('content_block_start', {
        index,
        content_block: { type: 'tool_use', id: p.toolCall.id, name: p.toolCall.name, input: {}, caller: DIRECT },
      }))
    )
      return
    for (const a of pieces(p.toolCall.arguments)) {
      if (!(await send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: a } }, true)))
        return
    }
  } else {
    if (!(await send('content_block_start', { index, content_block: { type: 'text', text: '' } }))) return
    for (const t of p.text)
      if (!(await send('content_block_delta', { index, delta: { type: 'text_delta', text: t } }, true))) return
  }
  if (!(await send('content_block_stop', { index }))) return
  if (
    !(await send('message_delta', {
      delta: { stop_reason: stopReason(p), stop_sequence: null, stop_details: null, container: null },
      usage: deltaUsageOf(p),
    }))
  )
    return
  if (await send('message_stop', {})) out.end()
}

export function messagesError(status: number, message: string) {
  const type =
    status === 429
      ? 'rate_limit_error'
      : status === 401
        ? 'authentication_error'
        : status === 529 || status === 503
          ? 'overloaded_error'
          : status === 400
            ? 'invalid_request_error'
            : 'api_error'
  return { type: 'error', error: { type, message } }
}
