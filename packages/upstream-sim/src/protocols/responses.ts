import type { Ask, Plan } from '../plan.js'
import { sincePrompt, textOf, wantsCache } from '../plan.js'
import { pieces, type StreamWriter } from '../writer.js'
import { list, num, obj, str, strings, type Json } from '../json-view.js'

// OpenAI Responses: POST /v1/responses.

export function askFromResponses(body: Json): Ask {
  const items: Json[] = typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : list(body.input)
  const choice = body.tool_choice
  const reasoning = obj(body.reasoning)
  return {
    model: String(body.model ?? 'sim'),
    inputText: [textOf(body.instructions ?? ''), ...items.map((i) => textOf(i.content ?? i.output ?? ''))]
      .filter(Boolean)
      .join('\n'),
    tools: list(body.tools).flatMap((t) => {
      const name = str(t.name)
      return t.type === 'function' && name ? [{ name, parameters: t.parameters }] : []
    }),
    toolChoice: str(choice) ?? str(obj(choice).name) ?? 'auto',
    afterToolResult: items.at(-1)?.type === 'function_call_output',
    ...sincePrompt(
      items,
      (i) => i.role === 'user',
      (i) => i.type === 'function_call_output',
    ),
    maxTokens: num(body.max_output_tokens),
    cache: wantsCache(body),
    reasoning: Boolean(reasoning.effort ?? reasoning.enabled),
    // As OpenAI's Responses: log probabilities come when `include` asks for them.
    logprobs: strings(body.include)?.includes('message.output_text.logprobs')
      ? Number(body.top_logprobs ?? 0)
      : undefined,
  }
}

function usageOf(p: Plan) {
  return {
    input_tokens: p.usage.input,
    input_tokens_details: { cached_tokens: p.usage.cached },
    output_tokens: p.usage.output,
    output_tokens_details: { reasoning_tokens: p.usage.reasoning },
    total_tokens: p.usage.input + p.usage.output,
  }
}

function items(p: Plan) {
  const out: Json[] = []
  if (p.reasoning.length) {
    out.push({ type: 'reasoning', id: `rs_${p.id}`, summary: [{ type: 'summary_text', text: p.reasoning.join('') }] })
  }
  if (p.toolCall) {
    out.push({
      type: 'function_call',
      id: `fc_${p.id}`,
      call_id: p.toolCall.id,
      name: p.toolCall.name,
      arguments: p.toolCall.arguments,
      status: 'completed',
    })
  } else {
    out.push({
      type: 'message',
      id: `msg_${p.id}`,
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: p.text.join(''), annotations: [], logprobs: p.logprobs ?? [] }],
    })
  }
  return out
}

export function responsesResponse(p: Plan, withUsage: boolean, status: 'completed' | 'in_progress' = 'completed') {
  const done = status === 'completed'
  return {
    id: `resp_${p.id}`,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status: done && p.finish === 'length' ? 'incomplete' : status,
    incomplete_details: done && p.finish === 'length' ? { reason: 'max_output_tokens' } : null,
    model: p.model,
    output: done ? items(p) : [],
    ...(withUsage && done ? { usage: usageOf(p) } : {}),
  }
}

export async function responsesStream(p: Plan, out: StreamWriter, withUsage: boolean) {
  let seq = 0
  const send = (type: string, fields: Json, paced = false) =>
    out.event({ type, sequence_number: seq++, ...fields }, type, paced)
  if (!(await send('response.created', { response: responsesResponse(p, false, 'in_progress') }))) return
  let index = 0
  if (p.reasoning.length) {
    const item = { type: 'reasoning', id: `rs_${p.id}`, summary: [] }
    if (!(await send('response.output_item.added', { output_index: index, item }))) return
    for (const r of p.reasoning) {
      if (
        !(await send(
          'response.reasoning_summary_text.delta',
          { item_id: item.id, output_index: index, summary_index: 0, delta: r },
          true,
        ))
      )
        return
    }
    const text = p.reasoning.join('')
    if (
      !(await send('response.output_item.done', {
        output_index: index,
        item: { ...item, summary: [{ type: 'summary_text', text }] },
      }))
    )
      return
    index++
  }
  if (p.toolCall) {
    const item = {
      type: 'function_call',
      id: `fc_${p.id}`,
      call_id: p.toolCall.id,
      name: p.toolCall.name,
      arguments: '',
      status: 'in_progress',
    }
    if (!(await send('response.output_item.added', { output_index: index, item }))) return
    for (const a of pieces(p.toolCall.arguments)) {
      if (
        !(await send(
          'response.function_call_arguments.delta',
          { item_id: item.id, output_index: index, delta: a },
          true,
        ))
      )
        return
    }
    if (
      !(await send('response.function_call_arguments.done', {
        item_id: item.id,
        output_index: index,
        name: p.toolCall.name,
        arguments: p.toolCall.arguments,
      }))
    )
      return
    if (
      !(await send('response.output_item.done', {
        output_index: index,
        item: { ...item, arguments: p.toolCall.arguments, status: 'completed' },
      }))
    )
      return
  } else {
    const id = `msg_${p.id}`
    const base = { item_id: id, output_index: index, content_index: 0 }
    if (
      !(await send('response.output_item.added', {
        output_index: index,
        item: { type: 'message', id, role: 'assistant', status: 'in_progress', content: [] },
      }))
    )
      return
    if (
      !(await send('response.content_part.added', {
        ...base,
        part: { type: 'output_text', text: '', annotations: [], logprobs: [] },
      }))
    )
      return
    for (const [i, t] of p.text.entries()) {
      if (
        !(await send(
          'response.output_text.delta',
          { ...base, delta: t, logprobs: p.logprobs ? [p.logprobs[i]] : [] },
          true,
        ))
      )
        return
    }
    const text = p.text.join('')
    const logprobs = p.logprobs ?? []
    if (!(await send('response.output_text.done', { ...base, text, logprobs }))) return
    const part = { type: 'output_text', text, annotations: [], logprobs }
    if (!(await send('response.content_part.done', { ...base, part }))) return
    const message = { type: 'message', id, role: 'assistant', status: 'completed', content: [part] }
    if (!(await send('response.output_item.done', { output_index: index, item: message }))) return
  }
  const final = responsesResponse(p, withUsage)
  if (await send(final.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response: final }))
    out.end()
}
