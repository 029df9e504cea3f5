import type { Catalogue, Endpoint } from './catalogue.js'
import { maxToolSteps, sessionKey, type InputItem, type ResponsesRequest } from './request.js'
import { createHash } from 'node:crypto'
import type { CallSpec } from './adapters/adapter.js'
import { ADAPTERS } from './adapters/registry.js'
import { webSearchOf } from './web-search.js'
import { conversation, reasoningInput } from './conversation.js'
import { itemId, type TurnCall } from './assembler.js'
import { GatewayError, gatewayError, retryable } from './errors.js'
import { Router, type Route } from './routing.js'
import {
  citeSources,
  serverToolKinds,
  sourcesOf,
  type SandboxPort,
  type SearchBackendOptions,
  type WebFetchOptions,
} from './server-tools/index.js'
import { Upstream, type Transport, type UpstreamOptions } from './upstream.js'
import type { TraceLogger } from './trace.js'
import {
  CompactionSeal,
  compactionRequest,
  compactResource,
  type CompactRequest,
  type CompactResource,
} from './compaction.js'
import type { ResponseObject } from './wire.js'
import type { GatewayObserver } from './observer.js'
import type { CallOptions, Run, Timing } from './run.js'
import type { Usage } from './deltas.js'
import { modelCall, observeRun, recordRun } from './run-accounting.js'
import { costPicoParts, usdOfPico, type GenerationLedger } from '@roster/protocol'
import { outcome, PROVIDER_REPLY, responseObject, type WithProviderReply } from './response-object.js'
import { endStream, failStream, writeEvent, type Live, type StreamSink } from './stream-writer.js'
import { startRun, type EngineParts } from './run-setup.js'
import { callProvider, type ProviderParts } from './provider-call.js'
import { runServerTool, type ToolServices } from './server-tool-turn.js'
import { consultation } from './consultation.js'
import { generateImage } from './image-call.js'
import type { FilesPort } from './server-tools/tool.js'
import { Moderator, type ModerationOptions } from './moderation.js'
import { parsesFiles, withFilesRead, type PluginRun } from './plugins/index.js'
import { Cancellation } from './cancellation.js'
import { estimateInputTokens, tokensOfBytes } from './token-estimate.js'
import { withPreset, type PresetLookup } from './presets.js'
import { resolveModelNames } from './model-names.js'

export type { CallOptions } from './run.js'
export type { StreamSink } from './stream-writer.js'
export * from './observer.js'

export { GatewayError } from './errors.js'

export interface EngineOptions {
  catalogue: Catalogue
  env: NodeJS.ProcessEnv
  /** Key of the HMAC that replaces `user` before it goes upstream. */
  userHashKey: Buffer
  webFetch?: Partial<WebFetchOptions>
  /** The search engines `openrouter:web_search` may call where the endpoint has no search (absent: none). */
  search?: Partial<SearchBackendOptions>
  /** The workspaces' files (`openrouter:files`; absent: the tool tells the model files are unavailable). */
  files?: FilesPort
  /** The moderation service the `moderation` plugin asks (absent: the plugin is refused). */
  moderation?: ModerationOptions
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
  /** Where each model call's generation is appended before the reply ends (absent: none are recorded). */
  ledger?: GenerationLedger
  /**
   * Asked before a request's first upstream call: throws to refuse it (a key past its spending
   * limit). Undefined when there is nothing to wait for.
   */
  admit?: (opts: CallOptions) => Promise<void> | undefined
  /** Where a request's preset (`@preset/<slug>`, `preset`) is found, in its workspace (absent: none is). */
  presets?: PresetLookup
  /** Where `openrouter:bash` runs its commands (runtime hosts; absent: it answers that none can run). */
  sandbox?: SandboxPort
}

/**
 * The responses engine: validates what it cannot serve, routes to an endpoint, speaks the
 * provider's protocol, runs server tools between turns, and answers a Response object or its
 * stream of events. Nothing is stored.
 */
export class ResponsesEngine {
  private readonly compaction: CompactionSeal
  /** What a run is set up with (run-setup.ts) and what its provider calls go through (provider-call.ts). */
  private readonly parts: EngineParts & ProviderParts

  /**
   * The request as the engine serves it: merged with the preset it names (through the port; its id
   * on the generations), its model names resolved for the door's protocol; a new object, the caller's
   * untouched. A door that answers an unknown model itself (Anthropic's 404 `model: <name>`) says so.
   * Without a preset it answers at once (no promise): most requests go on without waiting a tick.
   */
  private prepared(body: ResponsesRequest, opts: CallOptions): ResponsesRequest | Promise<ResponsesRequest> {
    const merging = withPreset(this.options.presets, opts.generation?.workspaceId, body)
    if (!merging)
      return parsesFiles(body) ? withFilesRead(body).then((r) => this.named(r, opts)) : this.named(body, opts)
    return merging.then(async (merged) => {
      if (opts.generation) opts.generation.presetId = merged.presetId
      return this.named(parsesFiles(merged.req) ? await withFilesRead(merged.req) : merged.req, opts)
    })
  }

  /** The request's model names resolved for the door's protocol (see prepared). */
  private named(body: ResponsesRequest, opts: CallOptions): ResponsesRequest {
    const { req, id } = resolveModelNames(this.options.catalogue, body, opts.names ?? 'openai')
    if (opts.unknownModel === 'not_found' && req.model && !id) throw gatewayError('not_found', `model: ${req.model}`)
    return req
  }

  constructor(private readonly options: EngineOptions) {
    this.compaction = new CompactionSeal(options.userHashKey)
    this.parts = {
      compaction: this.compaction,
      router: new Router(options.catalogue),
      serverTools: serverToolKinds({
        webFetch: { allowPrivateNetworks: false, maxBytes: 256 * 1024, timeoutMs: 10_000, ...options.webFetch },
        search: { timeoutMs: 10_000, ...options.search },
      }),
      userHashKey: options.userHashKey,
      ...(options.moderation ? { moderation: new Moderator(options.moderation) } : {}),
      catalogue: options.catalogue,
      transport: options.transport ?? new Upstream(options.env, options.upstream),
      options,
    }
  }

  /**
   * What a request would come to, with no model called: its setup run as a real request's is (the
   * guardrails' region, content filters and routing limits, the workspace's own keys, its tools),
   * throwing the error the request would get, else its request as it would go upstream (redactions
   * made) and the endpoints it would try, in order. The guardrail dry run's engine.
   */
  plan(req: ResponsesRequest, opts: CallOptions = {}): { req: ResponsesRequest; route: Route } {
    const run = startRun(this.parts, req, opts)
    return { req: run.req, route: run.route }
  }

  /** A whole Response object. */
  async respond(body: ResponsesRequest, opts: CallOptions = {}): Promise<ResponseObject> {
    const preparing = this.prepared(body, opts)
    const req = preparing instanceof Promise ? await preparing : preparing
    const admitted = this.options.admit?.(opts)
    if (admitted) await admitted
    const run = startRun(this.parts, req, opts)
    try {
      await this.loop(run)
    } catch (err) {
      observeRun(this.options.observer, run, err)
      await recordRun(this.options.ledger, run, false, err)
      throw err
    }
    observeRun(this.options.observer, run)
    const response = answered(run, responseObject(run, outcome(run)))
    await recordRun(this.options.ledger, run, true)
    return response
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

  /**
   * A streamed Response. Until the first event is written a failure moves on to the next endpoint,
   * and if none is left it is thrown (so the caller answers an ordinary HTTP error); after that a
   * failure ends the stream with `error` and `response.failed`.
   */
  async stream(body: ResponsesRequest, opts: CallOptions, sink: StreamSink): Promise<void> {
    const preparing = this.prepared(body, opts)
    const req = preparing instanceof Promise ? await preparing : preparing
    const admitted = this.options.admit?.(opts)
    if (admitted) await admitted
    const run = startRun(this.parts, req, opts)
    const live: Live = { sink, seq: 0, opened: false, sinceAttempt: 0, backlog: false, held: false }
    run.live = live
    try {
      await this.loop(run)
    } catch (err) {
      observeRun(this.options.observer, run, err)
      await recordRun(this.options.ledger, run, false, err)
      if (opts.cancel?.aborted) return
      if (!live.opened || !(err instanceof GatewayError)) throw err
      return failStream(run, err)
    }
    observeRun(this.options.observer, run)
    // What the last read brought leaves with the end, after the ledger's append: one write, as without it.
    const holding = live.opened && run.calls.length > 0 && !!this.options.ledger
    if (holding) live.sink.cork()
    try {
      try {
        await recordRun(this.options.ledger, run, !opts.cancel?.aborted)
      } catch (err) {
        if (!live.opened) throw err
        return failStream(run, err as GatewayError)
      }
      if (opts.cancel?.aborted) return
      endStream(run, outcome(run))
    } finally {
      if (holding) live.sink.uncork()
    }
  }

  /** Where `trace` records go (the API's logger); without one, trace only reaches providers. */
  useTraceLogger(logger: TraceLogger) {
    this.options.traceLogger = logger
  }

  async close() {
    await this.options.sandbox?.close?.()
    await this.parts.moderation?.close()
    await this.parts.transport.close()
  }

  /** Turns until the model stops calling server tools, or a stop condition ends the loop; a request's sandbox goes with it. */
  private async loop(run: Run) {
    try {
      await this.turns(run)
    } finally {
      const port = this.options.sandbox
      // A session's sandbox is kept for its next request (the host discards it once unused).
      if (port && run.sandboxUsed && !sessionKey(run.req, run.opts.sessionHeader))
        void port.discard(sandboxKey(run)).catch(() => {})
    }
  }

  private async turns(run: Run) {
    if (run.live) run.assembler.emit = run.tap ?? ((event) => writeEvent(run, event))
    const extra: InputItem[] = []
    // Most requests name no plugin: they make no view of themselves for one.
    const view = run.plugins.length ? pluginView(run, this.toolServices(run)) : undefined
    for (const use of run.plugins) await use.plugin.check?.(view!, use.parameters, this.parts)
    for (const use of run.plugins)
      if (use.plugin.before) extra.push(...(await use.plugin.before(view!, use.parameters, this.parts)))
    const limit = maxToolSteps(run.req)
    let final = false
    for (let steps = 0; ;) {
      const turnStart = run.assembler.output.length
      const { usage, calls, reasoning } = await this.turn(run, extra, final)
      const c = run.route.candidates[run.chosen]!
      const prices = c.endpoint.pricing ?? c.model.pricing
      // Priced as the generation is (costPicoParts): exactly, reasoning and cached tokens at their own prices.
      const cost = costPicoParts(prices, usage)
      run.cost.input += usdOfPico(cost.input)
      run.cost.output += usdOfPico(cost.output)
      if (final || !calls.some((k) => k.server)) {
        citeFound(run, turnStart)
        for (const use of run.plugins) if (!run.live) use.plugin.finish?.(view!, use.parameters)
        return
      }
      // The turn's reasoning goes back before its calls, as the provider gave it (reasoningInput).
      extra.push(...reasoning.map(reasoningInput))
      let handedOver = false
      for (const call of calls)
        if (call.server) {
          const ran = await runServerTool(run, call, this.toolServices(run))
          extra.push(...ran.items)
          handedOver ||= !!ran.handedOver
        }
      // Calls the client must answer end the loop: the response hands them over.
      if (handedOver || calls.some((k) => !k.server)) return
      steps++
      final = limit !== undefined ? steps >= limit : stopFired(run, steps, calls)
    }
  }

  /** What a run's server tool calls are given: consultations through this engine, the request's sandbox. */
  private toolServices(run: Run): ToolServices {
    return {
      keepAliveMs: this.options.keepAliveMs,
      consult: (c) =>
        consultation(run, c, {
          named: (req, opts) => this.named(req, opts),
          start: (req, opts) => startRun(this.parts, req, opts),
          loop: (sub) => this.loop(sub),
        }),
      sandbox: this.options.sandbox && {
        port: this.options.sandbox,
        key: sandboxKey(run),
        ...(sessionContainer(run) ? { containerId: sessionContainer(run) } : {}),
        keyOf: (containerId) => containerKey(run, containerId),
      },
      generateImage: (model, prompt, fields) => generateImage(this.parts, run, model, prompt, fields),
      files:
        this.options.files && run.opts.generation?.workspaceId
          ? {
              port: this.options.files,
              workspaceId: run.opts.generation.workspaceId,
              keyId: run.opts.generation.keyId ?? undefined,
            }
          : undefined,
    }
  }

  /** One model turn, moving on to the next endpoint while nothing of this turn has been shown. */
  private async turn(run: Run, extra: InputItem[], final: boolean) {
    const entries = conversation(run.req, extra)
    let last: GatewayError | undefined
    const allowed = run.route.candidates
    for (let i = run.chosen; i < allowed.length; i++) {
      const candidate = allowed[i]!
      const adapter = ADAPTERS[candidate.endpoint.protocol]
      const spec: CallSpec = {
        req: run.req,
        entries,
        tools: run.functions,
        search: run.webSearch && searchOn(run, candidate.endpoint),
        toolChoice: final ? 'none' : run.toolChoice,
        upstreamModel: candidate.endpoint.upstream_model,
        user: run.user,
        stream: !!run.live,
        caching: candidate.model.capabilities.caching,
        defaultMaxTokens: candidate.model.max_output_tokens ?? 4096,
        ...(run.opts.anthropic && candidate.endpoint.protocol === 'anthropic-messages'
          ? { anthropicFields: run.opts.anthropic.fields }
          : {}),
      }
      const body = adapter.body(spec)
      if (!run.chosenOnce) run.attempts++
      run.chosen = i
      if (run.live) run.live.sinceAttempt = 0
      const timing: Timing = { sent: performance.now() }
      const sentAt = Date.now()
      try {
        const turn = await callProvider(this.parts, run, candidate, adapter, body, timing)
        run.chosenOnce = true
        modelCall(run, candidate, timing, sentAt, turn.usage, run.assembler.finish, false, turn.countedByRoster)
        return turn
      } catch (err) {
        // A call the provider had begun answering (it answered 200) is a generation however it
        // ended: the client left (cancelled), or the reply broke or said it failed. The provider
        // likely charged for what it sent, so it is recorded with the usage it reported so far.
        const cancelled = !!run.opts.cancel?.aborted
        if (timing.firstByte !== undefined) {
          const { usage, countedByRoster } = usageOfUnfinishedCall(run)
          modelCall(run, candidate, timing, sentAt, usage, cancelled ? null : 'error', cancelled, countedByRoster)
        } else
          run.tried.push({
            provider_name: candidate.endpoint.provider,
            status: err instanceof GatewayError ? err.status : null,
            latency: Math.round(performance.now() - timing.sent),
          })
        if (!(err instanceof GatewayError) || run.opts.cancel?.aborted) throw err
        if (run.live && run.live.sinceAttempt > 0) throw err
        run.assembler.abandonTurn()
        last = err
        if (!retryable(err)) throw err
      }
    }
    throw last ?? gatewayError('provider_unavailable', 'no endpoint was left to try')
  }
}

/**
 * A whole reply as its door answers it: the provider's own, where the call passed through and its
 * door may forward what it sent (the text on the Response, under PROVIDER_REPLY), else translated.
 */
function answered(run: Run, response: WithProviderReply): WithProviderReply {
  const reply = run.providerReply
  const text = reply && run.opts.passThrough?.whole(reply.text, reply.json, response)
  if (!text) return response
  response[PROVIDER_REPLY] = text
  run.passedThrough = true
  if (run.opts.replyPath) run.opts.replyPath.passedThrough = true
  return response
}

/**
 * The client's web search as this endpoint's provider takes it; where it takes none, the answer
 * warns (once) that the model was not offered it.
 */
function searchOn(run: Run, endpoint: Endpoint) {
  const search = endpoint.web_search ? ADAPTERS[endpoint.protocol].webSearch?.(run.webSearch!) : undefined
  if (!search && !run.searchLeftOut) {
    run.searchLeftOut = true
    run.opts.warnings?.push(
      `tools not offered to the model: ${String(run.webSearch!.given.type)}, as the endpoint chosen (${endpoint.provider}, ${endpoint.protocol}) has no web search of its provider's that can take it, and this Roster runs none`,
    )
  }
  return search
}

/**
 * The usage of a call that ended before its provider reported it whole (the client left, or the
 * reply broke): what the provider reported so far, where it counts at least what Roster passed on;
 * else Roster's own count (token-estimate.ts) of the output it passed on and, where the provider
 * had not counted it, of the input. The provider likely charged for what it sent.
 */
function usageOfUnfinishedCall(run: Run): { usage: Usage; countedByRoster: boolean } {
  const usage = run.assembler.usageSoFar
  const passedOn = tokensOfBytes(run.assembler.bytesSoFar)
  let countedByRoster = false
  if (usage.output < passedOn) {
    usage.output = passedOn
    countedByRoster = true
  }
  if (!usage.input) {
    usage.input = estimateInputTokens(run.req)
    countedByRoster = true
  }
  return { usage, countedByRoster }
}

/**
 * A request's sandbox key: its session's container within the caller's workspace (kept between its
 * requests), else the request's own. Another workspace's session or container of the same name is
 * another sandbox.
 */
function sandboxKey(run: Run): string {
  const container = sessionContainer(run)
  return container ? containerKey(run, container) : `r-${run.id}`
}

/** A named container's sandbox key, within the caller's workspace. */
function containerKey(run: Run, containerId: string): string {
  const tenant = run.opts.generation?.workspaceId ?? run.opts.generation?.keyId ?? ''
  return `c-${createHash('sha256').update(`${tenant}\0${containerId}`).digest('hex').slice(0, 40)}`
}

/**
 * The container a request's session names (`sess_` and the session, letters, digits, `_` and `-`
 * kept, at most 40 characters: a long one ends in a digest of it), as OpenRouter names it; none
 * without a session.
 */
function sessionContainer(run: Run): string | undefined {
  const session = sessionKey(run.req, run.opts.sessionHeader)
  if (!session) return undefined
  const clean = session.replace(/[^A-Za-z0-9_-]/g, '_')
  const id = `sess_${clean}`
  return id.length <= 40 && clean === session
    ? id
    : `sess_${clean.slice(0, 18)}_${createHash('sha256').update(session).digest('hex').slice(0, 16)}`
}

/** Cites, in the last turn's text, the sources the run's web searches (its tools' and its plugins') found. */
function citeFound(run: Run, from: number) {
  const found = [...run.found, ...[...run.tools.values()].flatMap((tool) => sourcesOf(tool) ?? [])]
  for (const sources of found) citeSources(run.assembler.output, from, sources, run.assembler.emit)
}

/** What of a run its plugins read and add to. */
const pluginView = (run: Run, services: ToolServices): PluginRun => ({
  req: run.req,
  route: run.route,
  assembler: run.assembler,
  live: run.live,
  found: run.found,
  signal: (run.opts.cancel ?? new Cancellation()).signal,
  runTool: (tool, args) =>
    runServerTool(
      run,
      { callId: itemId('call'), name: tool.definition.name, arguments: JSON.stringify(args), server: true },
      services,
      tool,
    ),
  useProviderSearch(fields) {
    const endpoint = run.route.candidates[run.chosen]?.endpoint
    if (!endpoint?.web_search || !ADAPTERS[endpoint.protocol].webSearch) return false
    run.webSearch = webSearchOf(fields)
    return !!run.webSearch
  },
})

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
        return calls.some((k) => k.name === c.tool_name || run.tools.get(k.name)?.type === c.tool_name)
    }
  })
}
