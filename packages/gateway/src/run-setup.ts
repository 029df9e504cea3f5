import { createHmac } from 'node:crypto'
import type { ChoiceSpec, FunctionDef } from './adapters/adapter.js'
import { ResponseAssembler } from './assembler.js'
import { runId } from './item-id.js'
import type { CompactionSeal } from './compaction.js'
import { describeIssues, gatewayError, GatewayError, invalid } from './errors.js'
import { checkRegion, constrainRoute, filterContent } from './guardrails.js'
import { searchCredentials, withByok } from './byok.js'
import { FunctionTool, sessionKey, type ResponsesRequest } from './request.js'
import type { Route, Router } from './routing.js'
import type { Catalogue } from './catalogue.js'
import type { Moderator } from './moderation.js'
import { pluginUses, type PluginUse } from './plugins/index.js'
import { ADAPTERS } from './adapters/registry.js'
import { ANTHROPIC_FIELDS } from './doors/anthropic-betas.js'
import type { CallOptions, Run } from './run.js'
import {
  allowsNative,
  readParameters,
  wantsNative,
  type ServerTool,
  type ServerToolKind,
  type ServerToolType,
  type WebSearchParameters,
  type DeferredTools,
} from './server-tools/index.js'
import { flatName, type NamespacedName } from './namespaces.js'
import { isWebSearchKind, webSearchOf, type WebSearch } from './web-search.js'

/** The workspace setting that disables web search (`disabled_server_tools`) disables a provider's too. */
const WEB_SEARCH_SERVER_TOOL = 'openrouter:web_search'

// A request made ready to run: its tools sorted into functions the client answers and server tools
// Roster runs (and what it refuses to serve), its tool choice in neutral terms, its route.

/** What of the engine a run is set up with. */
export interface EngineParts {
  compaction: CompactionSeal
  serverTools: Map<ServerToolType, ServerToolKind>
  /** What server tools read of the models (search_models). */
  catalogue: Catalogue
  router: Router
  /** Key of the HMAC that replaces `user` before it goes upstream. */
  userHashKey: Buffer
  /** The moderation service (the `moderation` plugin's), where one is configured. */
  moderation?: Moderator
}

// Shared by the requests that offer no tools; nothing adds to them (startRun makes its own when
// tools are offered). The array is frozen, so a change that pushed onto it would fail loudly, not leak.
const NO_SERVER_TOOLS: Map<string, ServerTool> = new Map()
const NO_FUNCTIONS = Object.freeze([]) as unknown as FunctionDef[]
const NO_NAMES: ReadonlySet<string> = new Set()
const NO_PLUGINS: PluginUse[] = Object.freeze([]) as unknown as PluginUse[]

/**
 * Marks a tool entry a server tool put in a request of its own (fusion's default web tools): one
 * this Roster cannot offer there (no search engine configured) is left out, with a warning, rather
 * than refusing the request. Never on a client's entries (a symbol: it does not come over the wire).
 */
export const OPTIONAL_TOOL = Symbol('a tool the request may go without')

/** A server tool offered, or, for an entry marked OPTIONAL_TOOL that cannot be, left out (undefined) with a warning. */
function offerOrLeave(
  entry: object,
  index: number,
  offer: () => ServerTool,
  opts: CallOptions,
): ServerTool | undefined {
  try {
    return offer()
  } catch (err) {
    if (!(OPTIONAL_TOOL in entry) || !(err instanceof GatewayError)) throw err
    opts.warnings?.push(`tools not offered to the model: /tools/${index} (${err.message})`)
    return undefined
  }
}

export function startRun(engine: EngineParts, given: ResponsesRequest, opts: CallOptions): Run {
  const guardrails = opts.guardrails
  if (guardrails) checkRegion(guardrails, opts.region ?? 'global')
  // Compaction items sent back are read to the model as the summaries they sealed; guardrails'
  // content filters then see all the text that goes to the provider.
  const expanded = engine.compaction.expand(given)
  const filtered = guardrails ? filterContent(guardrails, expanded, opts.onFilterMatch) : expanded
  // The request's plugins, read (a 400 names one that cannot be served), each given its turn at the request.
  const plugins = filtered.plugins?.length ? pluginUses(filtered) : NO_PLUGINS
  const req = plugins.reduce((r, u) => u.plugin.prepare?.(r, u.parameters, engine) ?? r, filtered)
  // Most requests offer no tools: they share empty collections instead of making their own.
  const offered = req.tools?.length ? req.tools : undefined
  const tools = offered ? new Map<string, ServerTool>() : NO_SERVER_TOOLS
  const functions: FunctionDef[] = offered ? [] : NO_FUNCTIONS
  const refused = new Set<string>()
  const dropped = new Set<string>()
  let namespaced: Map<string, NamespacedName> | undefined
  let webSearch: WebSearch | undefined
  /** An `openrouter:web_search` entry that may go to the endpoint's own search (decided once routed). */
  let searchEntry: { parameters: WebSearchParameters; index: number; optional: boolean } | undefined
  // Functions offered with `defer_loading`, withheld until tool_search finds them (the list offered
  // is set below), and what a server tool may read when offered: made only where tools are offered.
  const deferred: DeferredTools | undefined = offered ? { withheld: [], offered: functions } : undefined
  const offerContext = offered
    ? {
        catalogue: engine.catalogue,
        deferred,
        ...(opts.byok ? { searchKeys: searchCredentials(opts.byok.credentials, opts.byok.caller) } : {}),
      }
    : undefined
  for (const [i, t] of (offered ?? []).entries()) {
    if (opts.disabledTools?.has(t.type))
      throw gatewayError('permission_denied', `the server tool ${t.type} is disabled in this workspace`)
    if (isFunctionTool(t)) {
      if (namespaced?.has(t.name))
        throw invalid(`/tools the function ${t.name} takes the name a namespace's function is offered by upstream`)
      if (t.defer_loading === true) deferred!.withheld.push(functionDef(t.name, t))
      else functions.push(functionDef(t.name, t))
    } else if (engine.serverTools.has(t.type as ServerToolType)) {
      const kind = engine.serverTools.get(t.type as ServerToolType)!
      // A patch is handed over as an item only the Responses protocol has (as OpenRouter serves it).
      if (kind.type === 'openrouter:apply_patch' && opts.door && !opts.door.startsWith('responses'))
        throw invalid(`/tools/${i} openrouter:apply_patch is served on /responses only`)
      const parameters = entryParameters(kind, t, i)
      if (kind.type === WEB_SEARCH_SERVER_TOOL && allowsNative(parameters as WebSearchParameters)) {
        if (searchEntry) throw invalid(`/tools/${i} offers ${t.type} a second time`)
        searchEntry = { parameters: parameters as WebSearchParameters, index: i, optional: OPTIONAL_TOOL in t }
      } else {
        const tool = offerOrLeave(t, i, () => kind.offer(parameters, offerContext!), opts)
        // A tool whose engine is the client's: a function it answers.
        if (tool?.client) functions.push(tool.definition)
        else if (tool) addServerTool(tools, tool, i)
      }
    } else if (t.type === 'namespace') {
      // Each function of the group under a flat name; the calls come back as the client named them.
      const ns = namespaceOf(t)
      namespaced ??= new Map()
      for (const [i, given] of ns.tools.entries()) {
        if (given?.type !== 'function') {
          dropped.add(`${String(given?.type)} in namespace ${ns.name}`)
          continue
        }
        // Checked as a function tool offered by itself is.
        const checked = FunctionTool.safeParse(given)
        if (!checked.success)
          throw invalid(`/tools the namespace ${ns.name}'s tools/${i}: ${describeIssues(checked.error)}`)
        const f = checked.data
        const flat = flatName(ns.name, f.name)
        // Two functions under one name upstream: the calls of one would come back as the other's.
        if (functions.some((g) => g.name === flat))
          throw invalid(
            `/tools ${f.name} in namespace ${ns.name} is offered upstream as ${flat}, a name another tool takes`,
          )
        namespaced.set(flat, { namespace: ns.name, name: f.name })
        functions.push(functionDef(flat, f))
      }
    } else if (t.type.startsWith('openrouter:')) refused.add(t.type)
    else if (isWebSearchKind(t.type) && opts.disabledTools?.has(WEB_SEARCH_SERVER_TOOL))
      opts.warnings?.push(`tools not offered to the model: ${t.type}, as web search is disabled in this workspace`)
    // Sent to the endpoints whose provider searches (engine turn), left out with a warning elsewhere.
    else if (isWebSearchKind(t.type) && !webSearch) webSearch = webSearchOf(t)
    else dropped.add(t.type)
  }
  if (refused.size)
    throw invalid(
      `/tools server tools not served by this Roster: ${[...refused].join(', ')} (served: ${[...engine.serverTools.keys()].join(', ')})`,
    )
  // A kind of tool Roster cannot offer (a provider's own, such as web_search) must not fail a
  // request the model can answer without it: it is left out, and the answer says so (a warning).
  if (dropped.size)
    opts.warnings?.push(
      `tools not offered to the model, as this Roster does not serve their kinds: ${[...dropped].join(', ')}`,
    )
  if (req.modalities?.includes('image'))
    throw invalid('/modalities image output is not served by this Roster; ask for text')
  const routed = engine.router.route(req, sessionKey(req, opts.sessionHeader))
  // The workspace's own credentials take their places first, so guardrails rule them too.
  const own = opts.byok ? withByok(routed, opts.byok.credentials, opts.byok.caller) : routed
  const guarded = guardrails ? constrainRoute(guardrails, own) : own
  const route = opts.anthropic ? anthropicRoute(guarded, opts) : guarded
  if (searchEntry) {
    const native = nativeSearch(route, searchEntry.parameters)
    if (native) webSearch = native
    else if (wantsNative(searchEntry.parameters))
      throw invalid(
        `/tools/${searchEntry.index} openrouter:web_search asks for engine native, but the endpoint chosen (${route.candidates[0]?.endpoint.provider ?? 'none'}) has no web search of its own that can honour it`,
      )
    else {
      const entry = searchEntry
      const tool = offerOrLeave(
        entry.optional ? { [OPTIONAL_TOOL]: true } : {},
        entry.index,
        () => engine.serverTools.get(WEB_SEARCH_SERVER_TOOL)!.offer(entry.parameters, offerContext!),
        opts,
      )
      if (tool) addServerTool(tools, tool, entry.index)
    }
  }
  for (const tool of tools.values()) {
    if (functions.some((f) => f.name === tool.definition.name))
      throw invalid(
        `/tools a function tool is named ${tool.definition.name}, like the server tool offered with it; rename it`,
      )
    functions.push(tool.definition)
  }
  // allowed_tools is a hard limit (the spec's MUST): only the tools it names are offered upstream.
  const allowed = allowedToolNames(req.tool_choice, tools)
  const offeredFunctions = allowed ? functions.filter((f) => allowed.has(f.name)) : functions
  if (deferred?.withheld.length) {
    if (![...tools.values()].some((t) => t.type === 'openrouter:tool_search'))
      throw invalid(
        '/tools a function with defer_loading is withheld until openrouter:tool_search finds it: offer that tool too',
      )
    deferred.offered = offeredFunctions
  }
  const serverNames = tools.size ? new Set([...tools.values()].map((t) => t.definition.name)) : NO_NAMES
  return {
    req,
    id: runId(),
    createdAt: Math.floor(Date.now() / 1000),
    started: performance.now(),
    route,
    assembler: new ResponseAssembler(undefined, serverNames, namespaced, opts.providerItemNames === 'slugged'),
    functions: offeredFunctions,
    tools,
    plugins,
    found: [],
    ...(webSearch ? { webSearch } : {}),
    toolChoice: choiceOf(req, tools),
    user: req.user ? createHmac('sha256', engine.userHashKey).update(req.user).digest('hex') : undefined,
    cost: { input: 0, output: 0 },
    calls: [],
    tried: [],
    chosen: 0,
    attempts: 0,
    chosenOnce: false,
    opts,
  }
}

/** A server tool entry's `parameters`, read by its kind (absent: `{}`); a 400 names the first problem. */
const entryParameters = (kind: ServerToolKind, t: { [k: string]: unknown }, i: number): unknown =>
  readParameters(kind, t.parameters ?? {}, `/tools/${i}/parameters of ${kind.type}`)

/** Adds an offered server tool under the function name the model calls it by (one per name). */
function addServerTool(tools: Map<string, ServerTool>, tool: ServerTool, i: number) {
  if (tools.has(tool.definition.name))
    throw invalid(`/tools/${i} offers ${tool.type} a second time (as ${tool.definition.name})`)
  tools.set(tool.definition.name, tool)
}

/**
 * `openrouter:web_search` as the endpoint's own search, as a client's web search tool goes to it,
 * where the first endpoint of the route has one that honours the entry's limits; else undefined.
 */
function nativeSearch(route: Route, p: WebSearchParameters): WebSearch | undefined {
  const endpoint = route.candidates[0]?.endpoint
  if (!endpoint?.web_search || !ADAPTERS[endpoint.protocol].webSearch || p.excluded_domains) return undefined
  return webSearchOf({
    type: 'web_search',
    ...(p.allowed_domains ? { filters: { allowed_domains: p.allowed_domains } } : {}),
    ...(p.user_location ? { user_location: p.user_location } : {}),
    ...(p.search_context_size ? { search_context_size: p.search_context_size } : {}),
  })
}

/** A function as offered upstream, under `name`. */
const functionDef = (name: string, f: { [k: string]: unknown }): FunctionDef => ({
  name,
  description: typeof f.description === 'string' ? f.description : undefined,
  parameters: (f.parameters as FunctionDef['parameters'] | null | undefined) ?? { type: 'object', properties: {} },
  strict: typeof f.strict === 'boolean' ? f.strict : undefined,
})

/** The functions one namespace may hold (as many as a request's tools). */
const MAX_NAMESPACE_TOOLS = 128

/** A namespace tool's name and functions, checked (the request's schema lets other kinds of tool pass unread). */
function namespaceOf(t: { [k: string]: unknown }): { name: string; tools: ({ type?: unknown } | null)[] } {
  if (typeof t.name !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(t.name))
    throw invalid('/tools a namespace tool needs a name (letters, digits, _ and -, at most 64)')
  if (!Array.isArray(t.tools) || t.tools.length > MAX_NAMESPACE_TOOLS)
    throw invalid(`/tools the namespace ${t.name} needs tools: an array of at most ${MAX_NAMESPACE_TOOLS}`)
  return { name: t.name, tools: t.tools as ({ type?: unknown } | null)[] }
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
  if (c.type === 'function') return { name: functionName(c) }
  if (c.type === 'allowed_tools') return c.mode === 'required' ? 'required' : 'auto'
  const server = [...tools.values()].find((t) => t.type === c.type)
  if (server) return { name: server.definition.name }
  if (isWebSearchKind(c.type))
    throw invalid(
      `/tool_choice of type ${c.type} is not served by this Roster (a provider's search may be left out); use auto`,
    )
  throw invalid(`/tool_choice of type ${c.type} names a tool this request does not offer`)
}

/** The function names an allowed_tools choice permits (a server tool by its kind), or undefined when it sets no limit. */
function allowedToolNames(
  choice: ResponsesRequest['tool_choice'],
  tools: Map<string, ServerTool>,
): Set<string> | undefined {
  if (typeof choice !== 'object' || choice === null || choice.type !== 'allowed_tools' || !Array.isArray(choice.tools))
    return undefined
  const names = new Set<string>()
  for (const t of choice.tools as { type?: unknown; name?: unknown; namespace?: unknown }[]) {
    if (t?.type === 'function' && typeof t.name === 'string') names.add(functionName(t))
    else if (typeof t?.type === 'string')
      for (const tool of tools.values()) if (tool.type === t.type) names.add(tool.definition.name)
  }
  return names
}

/** The upstream name of the function a choice names: a namespace's function (`namespace` given) by its flat name. */
const functionName = (c: { [k: string]: unknown }) =>
  typeof c.namespace === 'string' ? flatName(c.namespace, String(c.name)) : String(c.name)

/**
 * The route of a request that uses a feature only Anthropic serves (ANTHROPIC_FIELDS): its Anthropic
 * endpoints, refused by the feature's name where it has none. A feature other endpoints can do
 * without is dropped for them, and the answer says so.
 */
function anthropicRoute(route: Route, opts: CallOptions): Route {
  const used = Object.keys(opts.anthropic!.fields).map((k) => ({ field: k, ...ANTHROPIC_FIELDS[k]! }))
  const needed = used.filter((u) => u.elsewhere === 'refused')
  if (!needed.length) {
    if (used.length && route.candidates.some((c) => c.endpoint.protocol !== 'anthropic-messages'))
      opts.warnings?.push(`left out where the endpoint is not Anthropic's: ${used.map((u) => u.feature).join(', ')}`)
    return route
  }
  const candidates = route.candidates.filter((c) => c.endpoint.protocol === 'anthropic-messages')
  if (!candidates.length)
    throw invalid(
      `/${needed[0]!.field} ${needed.map((u) => u.feature).join(' and ')} is served only by Anthropic endpoints, and no endpoint of ${route.requested} this request may use is one`,
    )
  return { ...route, candidates }
}
