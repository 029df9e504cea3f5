import { inputItems, type ResponsesRequest } from './request.js'
import type { CallOptions, Run } from './run.js'
import type { Consultation, Consulted } from './server-tools/index.js'
import { isProviderItem } from './wire.js'

/** What of the engine a consultation runs through. */
export interface ConsultingEngine {
  /** The request's model names resolved, as the engine resolves a client's. */
  named(req: ResponsesRequest, opts: CallOptions): ResponsesRequest
  /** A run set up as a client's request is. */
  start(req: ResponsesRequest, opts: CallOptions): Run
  /** The run's turns, to its end. */
  loop(run: Run): Promise<void>
}

/**
 * A tool's consultation of another model (advisor, subagent): a whole request of its own through
 * this engine, with the calling request's options (its key, guardrails, BYOK, cancellation), never
 * streamed; its model calls join the calling run's (generations of the same request), and so
 * does its cost.
 */
export async function consultation(parent: Run, c: Consultation, engine: ConsultingEngine): Promise<Consulted> {
  const opts: CallOptions = {
    ...parent.opts,
    anthropic: undefined,
    doorStream: undefined,
    providerItemNames: undefined,
  }
  const input = c.transcript
    ? [...inputItems(parent.req.input), { role: 'user' as const, content: c.prompt }]
    : c.prompt
  const req = engine.named(
    {
      model: c.model ?? parent.route.candidates[parent.chosen]?.model.id ?? parent.req.model,
      input,
      ...(c.instructions ? { instructions: c.instructions } : {}),
      ...(c.max_output_tokens ? { max_output_tokens: c.max_output_tokens } : {}),
      ...(c.temperature !== undefined ? { temperature: c.temperature } : {}),
      ...(c.reasoning ? { reasoning: c.reasoning } : {}),
      ...(c.tools ? { tools: c.tools, max_tool_calls: c.max_tool_calls } : {}),
    } as ResponsesRequest,
    { ...opts, names: 'openai' },
  )
  const sub = engine.start(req, opts)
  try {
    await engine.loop(sub)
  } finally {
    parent.calls.push(...sub.calls)
    parent.cost.input += sub.cost.input
    parent.cost.output += sub.cost.output
  }
  const text = sub.assembler.output
    .flatMap((item) => (!isProviderItem(item) && item.type === 'message' ? item.content : []))
    .flatMap((part) => (part.type === 'output_text' ? [part.text] : []))
    .join('')
  return { text, model: sub.route.candidates[sub.chosen]?.model.id ?? String(req.model) }
}
