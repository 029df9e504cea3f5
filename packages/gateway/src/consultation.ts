import { inputItems, type ResponsesRequest } from './request.js'
import type { CallOptions, Live, Run, StreamSink } from './run.js'
import type { Consultation, Consulted } from './server-tools/index.js'
import { isProviderItem } from './wire.js'
import { invalid } from './errors.js'
import { FUSION_MODEL } from './plugins/fusion.js'
import { OPTIONAL_TOOL } from './run-setup.js'

/** Consultations within consultations: a subagent's fusion panel is as deep as it goes. */
const MAX_DEPTH = 2

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
 * this engine, with the calling request's options (its key, guardrails, BYOK, cancellation); its
 * model calls join the calling run's (generations of the same request), and so does its cost. It
 * is streamed only for a tool that reads it as it comes, on a streamed request (`onText`).
 */
export async function consultation(parent: Run, c: Consultation, engine: ConsultingEngine): Promise<Consulted> {
  // Tools that consult may be given to the models they consult (a subagent's tools, a fusion panel's):
  // bounded, so that no request fans out without end.
  const depth = (parent.depth ?? 0) + 1
  if (depth > MAX_DEPTH)
    throw invalid(`consultations go at most ${MAX_DEPTH} deep (a consulted model's tools consulting again)`)
  if (c.model === FUSION_MODEL) throw invalid(`${FUSION_MODEL} cannot be consulted (fusion does not recurse)`)
  const opts: CallOptions = {
    ...parent.opts,
    anthropic: undefined,
    doorStream: undefined,
    providerItemNames: undefined,
  }
  // Tools the consulting tool chose itself leave out those the caller's workspace disables.
  // They are left out too where they cannot be offered (a web search with no engine configured).
  const tools =
    c.tools && c.defaultTools
      ? c.tools
          .filter((t) => !parent.opts.disabledTools?.has(String(t.type)))
          .map((t) => ({ ...t, [OPTIONAL_TOOL]: true }))
      : c.tools
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
      ...(tools?.length ? { tools, max_tool_calls: c.max_tool_calls } : {}),
    } as ResponsesRequest,
    { ...opts, names: 'openai' },
  )
  const sub = engine.start(req, opts)
  sub.depth = depth
  // Streamed where the calling request is, its events read here, never written to the client as they are.
  if (parent.live && (c.onText || c.onReasoning)) tapped(sub, c)
  try {
    await engine.loop(sub)
  } finally {
    parent.calls.push(...sub.calls)
    parent.cost.input += sub.cost.input
    parent.cost.output += sub.cost.output
  }
  const parts = sub.assembler.output
    .flatMap((item) => (!isProviderItem(item) && item.type === 'message' ? item.content : []))
    .flatMap((part) => (part.type === 'output_text' ? [part] : []))
  const sources = new Map<string, string>()
  for (const a of parts.flatMap((p) => p.annotations))
    if (a.type === 'url_citation' && typeof a.url === 'string' && !sources.has(a.url))
      sources.set(a.url, typeof a.title === 'string' ? a.title : a.url)
  return {
    text: parts.map((p) => p.text).join(''),
    model: sub.route.candidates[sub.chosen]?.model.id ?? String(req.model),
    ...(sources.size ? { sources: [...sources].map(([url, title]) => ({ url, title })) } : {}),
  }
}

/** Where a tapped run's stream writes go: nowhere (its events are read through its tap). */
const NOWHERE: StreamSink = {
  open() {},
  write: () => true,
  cork() {},
  uncork() {},
  drain: async () => {},
  end() {},
}

/**
 * The consultation streamed from its provider, its text and reasoning handed to the tool as they
 * come. Once a piece has been handed on, a failure of that call is not retried on another endpoint
 * (as with a client's stream: what was shown is not taken back).
 */
function tapped(sub: Run, c: Consultation) {
  const live: Live = { sink: NOWHERE, seq: 0, opened: true, sinceAttempt: 0, backlog: false, held: false }
  sub.live = live
  sub.tap = (event) => {
    if (event.type === 'response.output_text.delta' && event.delta) {
      live.sinceAttempt++
      c.onText?.(event.delta)
    } else if (event.type === 'response.reasoning_summary_text.delta' && event.delta) {
      live.sinceAttempt++
      c.onReasoning?.(event.delta)
    }
  }
}
