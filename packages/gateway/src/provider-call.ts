import { EventStreamDecoder } from '@roster/platform'
import type { AnyAdapter } from './adapters/adapter.js'
import type { ResponseAssembler } from './assembler.js'
import { GatewayError, gatewayError } from './errors.js'
import type { GatewayObserver } from './observer.js'
import type { Candidate, Router } from './routing.js'
import type { Run, Timing } from './run.js'
import { forwardEvent, holdForTick } from './stream-writer.js'
import { passes } from './pass-through.js'
import { traceOf, type TraceLogger } from './trace.js'
import { counterFor } from './token-count.js'
import { estimateInputTokens } from './token-estimate.js'
import type { Usage } from './deltas.js'
import type { CallHooks, Transport } from './upstream.js'

/** What one turn came to (ResponseAssembler.endTurn), and whether Roster counted tokens its provider did not. */
type TurnResult = ReturnType<ResponseAssembler['endTurn']> & { countedByRoster: boolean }

// One call of a model turn to a provider: sent through the transport, its reply (whole, or its
// stream of events as they come) turned into deltas for the run's assembler, and reported.

/** What of the engine a provider call uses (options are read at each call: the trace logger may be set later). */
export interface ProviderParts {
  transport: Transport
  router: Router
  options: { observer?: GatewayObserver; traceLogger?: TraceLogger }
}

/** One upstream call, reported to the observer (when there is one) with its first byte, its length and its outcome. */
export async function callProvider(
  engine: ProviderParts,
  run: Run,
  c: Candidate,
  adapter: AnyAdapter,
  body: object,
  timing: Timing,
): Promise<TurnResult> {
  const observer = engine.options.observer
  if (!observer) return callOnce(engine, run, c, adapter, body, timing)
  const req = run.req
  const ended = observer.upstream({
    provider: c.endpoint.provider,
    protocol: c.endpoint.protocol,
    model: c.model.id,
    upstreamModel: c.endpoint.upstream_model,
    baseUrl: c.endpoint.base_url,
    stream: !!run.live,
    maxTokens: req.max_output_tokens ?? undefined,
    temperature: req.temperature ?? undefined,
    topP: req.top_p ?? undefined,
  })
  try {
    const turn = await callOnce(engine, run, c, adapter, body, timing)
    ended({
      firstByteMs: timing.firstByte,
      totalMs: performance.now() - timing.sent,
      ok: true,
      usage: turn.usage,
      finish: run.assembler.finish,
    })
    return turn
  } catch (err) {
    ended({
      firstByteMs: timing.firstByte,
      totalMs: performance.now() - timing.sent,
      ok: false,
      errorType: err instanceof GatewayError ? err.errorType : 'server',
    })
    throw err
  }
}

async function callOnce(
  engine: ProviderParts,
  run: Run,
  c: Candidate,
  adapter: AnyAdapter,
  body: object,
  timing?: Timing,
): Promise<TurnResult> {
  const trace = traceOf(run.req)
  const sent = performance.now()
  const hooks: CallHooks = {
    cancel: run.opts.cancel,
    tenant: run.opts.tenant,
    headers: anthropicHeaders(run, c, trace?.headers),
    onStart: () => {
      const firstByte = performance.now() - sent
      engine.router.stats.record(c.endpoint, firstByte)
      if (timing) timing.firstByte = firstByte
    },
  }
  const live = run.live
  if (!live) {
    const whole = await engine.transport.call(c.endpoint, adapter, body, hooks)
    let reply: unknown
    const text = whole!.toString('utf8')
    try {
      reply = JSON.parse(text)
    } catch {
      throw gatewayError('provider_unavailable', `${c.endpoint.provider} answered something that is not JSON`)
    }
    if (!reply || typeof reply !== 'object')
      throw gatewayError('provider_unavailable', `${c.endpoint.provider} answered JSON that is not an object`)
    for (const d of adapter.reply(reply, c.endpoint.provider)) run.assembler.push(d)
    // Read as any reply is (for the record, the loop, the usage); kept as it came for its door.
    run.providerReply = passes(run, c) ? { text, json: reply } : undefined
  } else {
    if (run.req.debug?.echo_upstream_body) live.pendingDebug = body
    const translate = adapter.streamer(c.endpoint.provider)
    run.pass = passes(run, c) ? run.opts.doorStream?.passThrough?.(c.endpoint.protocol) : undefined
    const reader = new EventStreamDecoder()
    let finished = false
    hooks.onChunk = (chunk) => {
      const events = reader.push(chunk)
      // What one read from the provider brought leaves in one write, at the end of this tick: undici
      // hands a chunked reply over chunk by chunk in one go, and a provider that sends each event
      // as its own chunk would otherwise cost the client a system call (and a wake-up) per event.
      // The first event leaves the moment it is made, so the first byte waits on nothing else.
      holdForTick(live)
      try {
        for (const e of events) {
          // Forwarded as it came first (pass-through), then read as any event is.
          if (run.pass) forwardEvent(run, e)
          for (const d of translate(e)) {
            if (d.type === 'finish') finished = true
            const opening = !live.opened
            run.assembler.push(d)
            if (opening && live.opened) {
              live.sink.uncork()
              live.sink.cork()
            }
          }
        }
      } catch (err) {
        throw err instanceof SyntaxError
          ? gatewayError('provider_unavailable', `${c.endpoint.provider} sent an event that is not JSON`)
          : err
      }
      if (!live.backlog) return
      live.backlog = false
      return live.sink.drain()
    }
    await engine.transport.call(c.endpoint, adapter, body, hooks)
    // What the protocol says only by ending (a Chat Completions stream's [DONE] with no finish reason).
    for (const d of translate('end')) {
      if (d.type === 'finish') finished = true
      run.assembler.push(d)
    }
    // A stream that ends without saying how it finished was cut short, however cleanly it closed.
    if (!finished)
      throw gatewayError(
        'provider_unavailable',
        `${c.endpoint.provider} ended the stream before the reply was finished`,
      )
  }
  const countedByRoster = await countWhatWasNotCounted(run, c)
  const turn = { ...run.assembler.endTurn(), countedByRoster }
  if (engine.options.traceLogger && trace)
    trace.log(engine.options.traceLogger, {
      model: c.model.id,
      provider: c.endpoint.provider,
      usage: turn.usage,
      ms: performance.now() - sent,
    })
  return turn
}

/**
 * A finished turn's tokens its provider did not count, counted by Roster (token-count.ts) and given
 * to the assembler as the turn's usage: the input where the provider reported none (or 0), the
 * output where it reported none (or 0) while something was written (text, reasoning, a call). A
 * provider that is silent about usage (a server that ignores `stream_options`) is so never a free
 * call. Answers whether it counted.
 */
async function countWhatWasNotCounted(run: Run, c: Candidate): Promise<boolean> {
  const a = run.assembler
  const so = a.usageSoFar
  const texts = so.output === 0 ? a.textsSoFar().filter(Boolean) : []
  const input = so.input === 0
  const output = texts.length > 0
  if (!input && !output) return false
  const counter = await counterFor(c.endpoint.upstream_model)
  const usage: Partial<Usage> = {}
  if (input) {
    // The estimate's walk of the request gives the texts to count, and what it counts itself (images, messages).
    const sent: string[] = []
    const fixed = estimateInputTokens(run.req, (text) => (sent.push(text), 0))
    usage.input = fixed + (await counter.countAll(sent))
  }
  if (output) usage.output = Math.max(1, await counter.countAll(texts))
  a.push({ type: 'usage', usage })
  return true
}

/** An Anthropic client's `anthropic-beta`, passed on as it came to an Anthropic endpoint (beside the trace's headers). */
function anthropicHeaders(run: Run, c: Candidate, headers: Record<string, string> | undefined) {
  const betas = run.opts.anthropic?.betas
  if (!betas?.length || c.endpoint.protocol !== 'anthropic-messages') return headers
  return { ...headers, 'anthropic-beta': betas.join(',') }
}
