import type { Ask, Plan } from '../plan.js'
import { sincePrompt, textOf, wantsCache } from '../plan.js'
import { pieces, type StreamWriter } from '../writer.js'
import { list, num, obj, str, strings, type Json } from '../json-view.js'

// OpenAI Chat Completions: POST /v1/chat/completions (also what vLLM, Ollama, llama.cpp speak).

export function askFromChat(body: Json): Ask {
  const messages = list(body.messages)
  const choice = body.tool_choice
  return {
    model: String(body.model ?? 'sim'),
    inputText: messages.map((m) => textOf(m.content)).join('\n'),
    tools: list(body.tools).flatMap((t) => {
      const fn = obj(t.function)
      const name = str(fn.name)
      return t.type === 'function' && name ? [{ name, parameters: fn.parameters }] : []
    }),
    toolChoice: str(choice) ?? str(obj(obj(choice).function).name) ?? 'auto',
    afterToolResult: messages.at(-1)?.role === 'tool',
    ...sincePrompt(
      messages,
      (m) => m.role === 'user',
      (m) => m.role === 'tool',
    ),
    maxTokens: num(body.max_completion_tokens) ?? num(body.max_tokens),
    stop: typeof body.stop === 'string' ? [body.stop] : strings(body.stop),
    cache: wantsCache(body),
    reasoning: Boolean((body.reasoning_effort && body.reasoning_effort !== 'none') || body.reasoning),
    logprobs: body.logprobs === true ? Number(body.top_logprobs ?? 0) : undefined,
  }
}

const finishReason = (p: Plan) => (p.finish === 'tool' ? 'tool_calls' : p.finish)

function usageOf(p: Plan) {
  return {
    prompt_tokens: p.usage.input,
    completion_tokens: p.usage.output,
    total_tokens: p.usage.input + p.usage.output,
    prompt_tokens_details: { cached_tokens: p.usage.cached },
    completion_tokens_details: { reasoning_tokens: p.usage.reasoning },
  }
}

export function chatResponse(p: Plan, withUsage: boolean) {
  return {
    id: p.id,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: p.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: p.toolCall ? null : p.text.join(''),
          refusal: null,
          ...(p.reasoning.length ? { reasoning_content: p.reasoning.join('') } : {}),
          ...(p.toolCall
            ? {
                tool_calls: [
                  {
                    id: p.toolCall.id,
                    type: 'function',
                    function: { name: p.toolCall.name, arguments: p.toolCall.arguments },
                  },
                ],
              }
            : {}),
        },
        finish_reason: finishReason(p),
        logprobs: p.logprobs ? { content: p.logprobs, refusal: null } : null,
      },
    ],
    ...(withUsage ? { usage: usageOf(p) } : {}),
  }
}

export async function chatStream(p: Plan, out: StreamWriter, body: Json, withUsage: boolean) {
  const chunk = (delta: Json, finish: string | null = null) => ({
    id: p.id,
    object: 'chat.completion.chunk',
    created: Math.floor(Date.now() / 1000),
    model: p.model,
    choices: [{ index: 0, delta, finish_reason: finish } as Json],
  })
  if (!(await out.event(chunk({ role: 'assistant', content: '' })))) return
  for (const r of p.reasoning) if (!(await out.event(chunk({ reasoning_content: r }), undefined, true))) return
  for (const [i, t] of p.text.entries()) {
    const c = chunk({ content: t })
    if (p.logprobs) c.choices[0]!.logprobs = { content: [p.logprobs[i]!], refusal: null }
    if (!(await out.event(c, undefined, true))) return
  }
  if (p.toolCall) {
    const head = { index: 0, id: p.toolCall.id, type: 'function', function: { name: p.toolCall.name, arguments: '' } }
    if (!(await out.event(chunk({ tool_calls: [head] })))) return
    for (const a of pieces(p.toolCall.arguments)) {
      if (!(await out.event(chunk({ tool_calls: [{ index: 0, function: { arguments: a } }] }), undefined, true))) return
    }
  }
  if (!(await out.event(chunk({}, finishReason(p))))) return
  if (withUsage && obj(body.stream_options).include_usage) {
    if (!(await out.event({ ...chunk({}), choices: [], usage: usageOf(p) }))) return
  }
  if (await out.event('[DONE]')) out.end()
}

export function chatError(status: number, message: string) {
  const type = status === 429 ? 'rate_limit_exceeded' : status === 401 ? 'invalid_api_key' : 'server_error'
  return { error: { message, type, code: type } }
}
