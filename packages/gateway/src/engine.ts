import { createHmac } from 'node:crypto'
import { StringDecoder } from 'node:string_decoder'
import { createParser, type EventSourceMessage } from 'eventsource-parser'
import type { Catalogue } from './catalogue.js'
import { maxToolSteps, sessionKey, type InputItem, type ResponsesRequest } from './request.js'
import type { AnyAdapter, CallSpec, ChoiceSpec, FunctionDef } from './adapters/adapter.js'
import { openaiChat } from './adapters/openai-chat.js'
import { openaiResponses } from './adapters/openai-responses.js'
import { anthropic } from './adapters/anthropic-messages.js'
import { conversation } from './conversation.js'
import type { Usage } from './deltas.js'
import { ResponseAssembler, itemId, type TurnCall } from './assembler.js'
import { GatewayError, gatewayError, invalid, retryable } from './errors.js'
import { Router, type Candidate } from './routing.js'
import { serverTools, type ServerTool, type WebFetchOptions } from './server-tools.js'
import { Upstream, type CallHooks, type Transport, type UpstreamOptions } from './upstream.js'
import { traceOf, type TraceLogger } from './trace.js'
import { Cancellation } from './cancellation.js'
import {
  CompactionSeal,
  compactionRequest,
  compactResource,
  type CompactRequest,
  type CompactResource,
} from './compaction.js'
import type { ResponseObject, ServerToolItem } from './wire.js'
import type { GatewayObserver } from './observer.js'
import type { CallOptions, Run, Timing } from './run.js'
import { outcome, responseObject } from './response-object.js'
import { endStream, failStream, holdForTick, writeEvent, type Live, type StreamSink } from './stream-writer.js'

export type { CallOptions } from './run.js'
export type { StreamSink } from './stream-writer.js'
export * from './observer.js'

export { GatewayError } from './errors.js'

// Shared by the requests that offer no tools; nothing adds to them (prepare makes its own when tools
// are offered). The array is frozen, so a change that pushed onto it would fail loudly, not leak.
const NO_SERVER_TOOLS: Map<string, ServerTool> = new Map()
const NO_FUNCTIONS = Object.freeze([]) as unknown as FunctionDef[]
const NO_NAMES: ReadonlySet<string> = new Set()

const ADAPTERS: Record<string, AnyAdapter> = {
  'openai-chat': openaiChat,
  'openai-responses': openaiResponses,
  'anthropic-messages': anthropic,
}

export interface EngineOptions {
  catalogue: Catalogue
  env: NodeJS.ProcessEnv
  /** Key of the HMAC that replaces `user` before it goes upstream. */
  userHashKey: Buffer
  webFetch?: Partial<WebFetchOptions>
  /** Where a request's `trace` is recorded (one record per generation). */
  traceLogger?: TraceLogger
  /** How often an open stream waiting on a server tool gets a comment line (default 10 s). */
  keepAliveMs?: number
  /** Told of each upstream call and each finished request (metrics); absent, nothing is measured. */
  observer?: GatewayObserver
  /** Connections per provider origin and each tenant's share of them (fair shares between keys). */
  upstream?: UpstreamOptions
  /** How providers are reached; default HTTP (`Upstream`, with `env`'s credentials and `upstream`'s limits). */
  transport?: Transport
}

/**
 * The responses engine: validates what it cannot serve, routes to an endpoint, speaks the
 * provider's protocol, runs server tools between turns, and answers a Response object or its
 * stream of events. Nothing is stored.
 */
export class ResponsesEngine {
  private readonly upstream: Transport
  private readonly router: Router
  private readonly serverTools: Map<string, ServerTool>
  private readonly compaction: CompactionSeal

  constructor(private readonly options: EngineOptions) {
    this.compaction = new CompactionSeal(options.userHashKey)
    this.upstream = options.transport ?? new Upstream(options.env, options.upstream)
    this.router = new Router(options.catalogue)
    this.serverTools = serverTools({
      allowPrivateNetworks: false,
      maxBytes: 256 * 1024,
      timeoutMs: 10_000,
      ...options.webFetch,
    })
  }

  /** A whole Response object. */
  async respond(req: ResponsesRequest, opts: CallOptions = {}): Promise<ResponseObject> {
    const run = this.prepare(req, opts)
    try {
      await this.loop(run)
    } catch (err) {
      this.observed(run, err)
      throw err
    }
    this.observed(run)
    return responseObject(run, outcome(run))
  }

  /**
   * POST /responses/compact: the conversation summarised by its model (routing, fallbacks and cost
   * as for any request), handed back as the user's messages and a sealed compaction item.
   */
  async compact(req: CompactRequest, opts: CallOptions = {}): Promise<CompactResource> {
    const response = await this.respond(compactionRequest(req), opts)
    return compactResource(req, response, this.compaction, {
      message: () => itemId('msg'),
      compaction: () => itemId('cmp'),
    })
  }

  /** Reports a finished request to the observer (when there is one). */
  private observed(run: Run, err?: unknown) {
    const observer = this.options.observer
    if (!observer) return
    const c = run.route.candidates[run.chosen]
    const outcome = run.opts.cancel?.aborted
      ? 'cancelled'
      : err === undefined
        ? 'ok'
        : err instanceof GatewayError
          ? err.errorType
          : 'server'
    observer.request({
      model: c?.model.id ?? '(none)',
      provider: c?.endpoint.provider ?? '(none)',
      door: run.opts.door ?? 'responses',
      outcome,
      fallbacks: Math.max(0, run.attempts - 1),
      usage: run.assembler.usage,
      cost: run.cost.input + run.cost.output,
    })
  }

  /**
   * A streamed Response. Until the first event is written a failure moves on to the next endpoint,
   * and if none is left it is thrown (so the caller answers an ordinary HTTP error); after that a
   * failure ends the stream with `error` and `response.failed`.
   */
  async stream(req: ResponsesRequest, opts: CallOptions, sink: StreamSink): Promise<void> {
    const run = this.prepare(req, opts)
    const live: Live = { sink, seq: 0, opened: false, sinceAttempt: 0, backlog: false, held: false }
    run.live = live
    try {
      await this.loop(run)
    } catch (err) {
      this.observed(run, err)
      if (opts.cancel?.aborted) return
      if (!live.opened || !(err instanceof GatewayError)) throw err
      return failStream(run, err)
    }
    this.observed(run)
    if (opts.cancel?.aborted) return
    endStream(run, outcome(run))
  }

  /** Where `trace` records go (the API's logger); without one, trace only reaches providers. */
  useTraceLogger(logger: TraceLogger) {
    this.options.traceLogger = logger
  }

  async close() {
    await this.upstream.close()
  }

  private prepare(given: ResponsesRequest, opts: CallOptions): Run {
    // Compaction items sent back are read to the model as the summaries they sealed.
    const req = this.compaction.expand(given)
    // Most requests offer no tools: they share empty collections instead of making their own.
    const offered = req.tools?.length ? req.tools : undefined
    const tools = offered ? new Map<string, ServerTool>() : NO_SERVER_TOOLS
    const functions: FunctionDef[] = offered ? [] : NO_FUNCTIONS
    const refused = new Set<string>()
    for (const t of offered ?? []) {
      if (isFunctionTool(t))
        functions.push({
          name: t.name,
          description: t.description ?? undefined,
          parameters: t.parameters ?? { type: 'object', properties: {} },
          strict: t.strict,
        })
      else if (this.serverTools.has(t.type)) tools.set(t.type, this.serverTools.get(t.type)!)
      else refused.add(t.type)
    }
    if (refused.size)
      throw invalid(
        `/tools kinds not implemented by this Roster: ${[...refused].join(', ')} (served: function, ${[...this.serverTools.keys()].join(', ')})`,
      )
    if (req.modalities?.includes('image'))
      throw invalid('/modalities image output is not served by this Roster; ask for text')
    const plugins = (req.plugins ?? []).filter((p) => p.enabled !== false).map((p) => p.id)
    if (plugins.length) throw invalid(`/plugins not implemented by this Roster: ${plugins.join(', ')}`)
    for (const tool of tools.values()) {
      if (functions.some((f) => f.name === tool.definition.name))
        throw invalid(
          `/tools a function tool is named ${tool.definition.name}, like the server tool offered with it; rename it`,
        )
      functions.push(tool.definition)
    }
    // allowed_tools is a hard limit (the spec's MUST): only the tools it names are offered upstream.
    const allowed = allowedToolNames(req.tool_choice, this.serverTools)
    const offeredFunctions = allowed ? functions.filter((f) => allowed.has(f.name)) : functions
    const route = this.router.route(req, sessionKey(req, opts.sessionHeader))
    const serverNames = tools.size ? new Set([...tools.values()].map((t) => t.definition.name)) : NO_NAMES
    return {
      req,
      id: itemId('resp'),
      createdAt: Math.floor(Date.now() / 1000),
      started: performance.now(),
      route,
      assembler: new ResponseAssembler(undefined, serverNames),
      functions: offeredFunctions,
      tools,
      toolChoice: choiceOf(req, tools),
      user: req.user ? createHmac('sha256', this.options.userHashKey).update(req.user).digest('hex') : undefined,
      cost: { input: 0, output: 0 },
      chosen: 0,
      attempts: 0,
      chosenOnce: false,
      opts,
    }
  }

  /** Turns until the model stops calling server tools, or a stop condition ends the loop. */
  private async loop(run: Run) {
    if (run.live) run.assembler.emit = (event) => writeEvent(run, event)
    const extra: InputItem[] = []
    const limit = maxToolSteps(run.req)
    let final = false
    for (let steps = 0; ;) {
      const { usage, calls } = await this.turn(run, extra, final)
      const c = run.route.candidates[run.chosen]!
      const prices = c.endpoint.pricing ?? c.model.pricing
      run.cost.input +=
        (usage.input - usage.cached) * Number(prices.input) + usage.cached * Number(prices.cached_input ?? prices.input)
      run.cost.output += usage.output * Number(prices.output)
      if (final || !calls.some((k) => k.server)) return
      for (const call of calls) if (call.server) extra.push(...(await this.runTool(run, call)))
      // Calls the client must answer end the loop: the response hands them over.
      if (calls.some((k) => !k.server)) return
      steps++
      final = limit !== undefined ? steps >= limit : stopFired(run, steps, calls)
    }
  }

  /** One model turn, moving on to the next endpoint while nothing of this turn has been shown. */
  private async turn(run: Run, extra: InputItem[], final: boolean) {
    const entries = conversation(run.req, extra)
    let last: GatewayError | undefined
    const allowed = run.route.candidates
    for (let i = run.chosen; i < allowed.length; i++) {
      const candidate = allowed[i]!
      const adapter = ADAPTERS[candidate.endpoint.protocol]!
      const spec: CallSpec = {
        req: run.req,
        entries,
        tools: run.functions,
        toolChoice: final ? 'none' : run.toolChoice,
        upstreamModel: candidate.endpoint.upstream_model,
        user: run.user,
        stream: !!run.live,
        caching: candidate.model.capabilities.caching,
        defaultMaxTokens: candidate.model.max_output_tokens ?? 4096,
      }
      const body = adapter.body(spec)
      if (!run.chosenOnce) run.attempts++
      run.chosen = i
      if (run.live) run.live.sinceAttempt = 0
      try {
        const turn = await this.call(run, candidate, adapter, body)
        run.chosenOnce = true
        return turn
      } catch (err) {
        if (!(err instanceof GatewayError) || run.opts.cancel?.aborted) throw err
        if (run.live && run.live.sinceAttempt > 0) throw err
        run.assembler.abandonTurn()
        last = err
        if (!retryable(err)) throw err
      }
    }
    throw last ?? gatewayError('provider_unavailable', 'no endpoint was left to try')
  }

  /** One upstream call, reported to the observer (when there is one) with its first byte, its length and its outcome. */
  private async call(
    run: Run,
    c: Candidate,
    adapter: AnyAdapter,
    body: object,
  ): Promise<{ usage: Usage; calls: TurnCall[] }> {
    const observer = this.options.observer
    if (!observer) return this.callOnce(run, c, adapter, body)
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
    const timing: Timing = { sent: performance.now() }
    try {
      const turn = await this.callOnce(run, c, adapter, body, timing)
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

  private async callOnce(
    run: Run,
    c: Candidate,
    adapter: AnyAdapter,
    body: object,
    timing?: Timing,
  ): Promise<{ usage: Usage; calls: TurnCall[] }> {
    const trace = traceOf(run.req)
    const sent = performance.now()
    const hooks: CallHooks = {
      cancel: run.opts.cancel,
      tenant: run.opts.tenant,
      headers: trace?.headers,
      onStart: () => {
        const firstByte = performance.now() - sent
        this.router.stats.record(c.endpoint, firstByte)
        if (timing) timing.firstByte = firstByte
      },
    }
    const live = run.live
    if (!live) {
      const whole = await this.upstream.call(c.endpoint, adapter, body, hooks)
      let reply: unknown
      try {
        reply = JSON.parse(whole!.toString('utf8'))
      } catch {
        throw gatewayError('provider_unavailable', `${c.endpoint.provider} answered something that is not JSON`)
      }
      if (!reply || typeof reply !== 'object')
        throw gatewayError('provider_unavailable', `${c.endpoint.provider} answered JSON that is not an object`)
      for (const d of adapter.reply(reply)) run.assembler.push(d)
    } else {
      if (run.req.debug?.echo_upstream_body) live.pendingDebug = body
      const translate = adapter.streamer()
      const events: EventSourceMessage[] = []
      const parser = createParser({ onEvent: (e) => void events.push(e) })
      // StringDecoder, not TextDecoder: Node's TextDecoder decodes a stream (`stream: true`) through an
      // ICU converter made per decoder, ~3 times the cost of StringDecoder's native path per stream.
      const decoder = new StringDecoder('utf8')
      let started = false
      let finished = false
      hooks.onChunk = (chunk) => {
        let text = decoder.write(chunk)
        // A byte-order mark before the first event is not part of it (as TextDecoder would drop it).
        if (!started && text) {
          started = true
          if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
        }
        parser.feed(text)
        // What one read from the provider brought leaves in one write, at the end of this tick: undici
        // hands a chunked reply over chunk by chunk in one go, and a provider that sends each event
        // as its own chunk would otherwise cost the client a system call (and a wake-up) per event.
        // The first event leaves the moment it is made, so the first byte waits on nothing else.
        holdForTick(live)
        try {
          for (const e of events) {
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
        } finally {
          events.length = 0
        }
        if (!live.backlog) return
        live.backlog = false
        return live.sink.drain()
      }
      await this.upstream.call(c.endpoint, adapter, body, hooks)
      // A stream that ends without saying how it finished was cut short, however cleanly it closed.
      if (!finished)
        throw gatewayError(
          'provider_unavailable',
          `${c.endpoint.provider} ended the stream before the reply was finished`,
        )
    }
    const turn = run.assembler.endTurn()
    if (this.options.traceLogger && trace)
      trace.log(this.options.traceLogger, {
        model: c.model.id,
        provider: c.endpoint.provider,
        usage: turn.usage,
        ms: performance.now() - sent,
      })
    return turn
  }

  private async runTool(run: Run, call: TurnCall): Promise<InputItem[]> {
    const name = [...run.tools.keys()].find((k) => run.tools.get(k)!.definition.name === call.name)!
    let args: Record<string, unknown> = {}
    try {
      const parsed: unknown = JSON.parse(call.arguments || '{}')
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) args = parsed as Record<string, unknown>
    } catch {}
    const item: ServerToolItem = {
      type: name as ServerToolItem['type'],
      id: itemId('st'),
      call_id: call.callId,
      status: 'in_progress',
      arguments: call.arguments,
      output: null,
    }
    // Announced first, so a stream is open (and its client knows) while the tool runs.
    const index = run.assembler.startItem({ ...item })
    let output: unknown
    // A tool may take seconds (web_fetch): the stream gets SSE comments meanwhile, so proxies and
    // clients with idle timeouts keep it. Clients skip lines that start with ':'.
    const live = run.live
    const keepalive = run.opts.doorStream?.keepalive() ?? ': running a server tool\n\n'
    const heartbeat = live
      ? setInterval(() => live.sink.write(keepalive), this.options.keepAliveMs ?? 10_000)
      : undefined
    try {
      output = await run.tools.get(name)!.run(args, (run.opts.cancel ?? new Cancellation()).signal)
    } catch (err) {
      output = { error: (err as Error).message }
    } finally {
      clearInterval(heartbeat)
    }
    const text = JSON.stringify(output)
    run.assembler.finishItem(index, { ...item, status: 'completed', output: text })
    return [
      { type: 'function_call', call_id: call.callId, name: call.name, arguments: call.arguments },
      { type: 'function_call_output', call_id: call.callId, output: text },
    ]
  }
}

/** A function tool (checked by the request's schema), as opposed to a server tool named by its kind. */
const isFunctionTool = (
  t: NonNullable<ResponsesRequest['tools']>[number],
): t is Extract<typeof t, { type: 'function'; name: string }> => t.type === 'function'

/** tool_choice in neutral terms; a server tool may be chosen by its kind. */
function choiceOf(req: ResponsesRequest, tools: Map<string, ServerTool>): ChoiceSpec {
  const c = req.tool_choice
  if (c == null) return 'auto'
  if (typeof c === 'string') return c
  if (c.type === 'function') return { name: String(c.name) }
  if (c.type === 'allowed_tools') return c.mode === 'required' ? 'required' : 'auto'
  const server = tools.get(c.type)
  if (server) return { name: server.definition.name }
  throw invalid(`/tool_choice of type ${c.type} names a tool this request does not offer`)
}

/** The function names an allowed_tools choice permits (a server tool by its kind), or undefined when it sets no limit. */
function allowedToolNames(
  choice: ResponsesRequest['tool_choice'],
  serverTools: Map<string, ServerTool>,
): Set<string> | undefined {
  if (typeof choice !== 'object' || choice === null || choice.type !== 'allowed_tools' || !Array.isArray(choice.tools))
    return undefined
  const names = new Set<string>()
  for (const t of choice.tools as { type?: unknown; name?: unknown }[]) {
    if (t?.type === 'function' && typeof t.name === 'string') names.add(t.name)
    else if (typeof t?.type === 'string' && serverTools.has(t.type)) names.add(serverTools.get(t.type)!.definition.name)
  }
  return names
}

/** Whether any stop_server_tools_when condition fired after this step (OR). */
function stopFired(run: Run, steps: number, calls: TurnCall[]): boolean {
  const u = run.assembler.usage
  return (run.req.stop_server_tools_when ?? []).some((c) => {
    switch (c.type) {
      case 'step_count_is':
        return steps >= c.step_count
      case 'max_cost':
        return run.cost.input + run.cost.output >= c.max_cost_in_dollars
      case 'max_tokens_used':
        return u.input + u.output >= c.max_tokens
      case 'finish_reason_is':
        return run.assembler.finish === c.reason
      case 'has_tool_call':
        return calls.some((k) => k.name === c.tool_name || `openrouter:${k.name}` === c.tool_name)
    }
  })
}
