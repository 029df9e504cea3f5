import type { ResponseAssembler } from './assembler.js'
import type { ChoiceSpec, FunctionDef } from './adapters/adapter.js'
import type { Cancellation } from './cancellation.js'
import type { DoorStream, PassThroughStream, PassThroughWhole } from './doors/door.js'
import type { ResponsesRequest } from './request.js'
import type { Candidate, Route } from './routing.js'
import type { Usage } from './deltas.js'
import type { GenerationContext } from '@roster/protocol'
import type { AppliedGuardrail, DataRegion } from '@roster/protocol'
import type { FilterMatch } from './guardrails.js'
import type { AliasFamily } from './catalogue.js'
import type { ByokCaller, ByokCredential } from './byok.js'
import type { WebSearch } from './web-search.js'
import type { ServerTool } from './server-tools/index.js'
import type { FoundSources } from './server-tools/web-search.js'
import type { PluginUse } from './plugins/index.js'
import type { Emit } from './items-in-progress.js'

// One request as the engine runs it: what came with it, and its state as it goes.

/** Per call: what came in headers, and the client's connection. */
export interface CallOptions {
  sessionHeader?: string
  /** The routing-metadata opt-in: `service` answers `service_metadata`, `openrouter` also `openrouter_metadata`. */
  metadata?: { service: boolean; openrouter: boolean }
  /** Cancelled when the client goes away: the upstream request is cancelled with it. */
  cancel?: Cancellation
  /** Which door the request came by, for metrics (default responses). */
  door?: string
  /** A stream in another door's wire format: the engine's events go through it (absent: Open Responses events). */
  doorStream?: DoorStream
  /** Whose request this is (the API key's id): its upstream calls hold that tenant's share of each provider's connections. */
  tenant?: string
  /** Who the request is for and where it came from, for the generations it records (absent: none are recorded). */
  generation?: GenerationContext
  /** Server tools the caller's workspace refuses (403), as `openrouter:<name>`. */
  disabledTools?: ReadonlySet<string> | null
  /** The guardrails in force on the caller (absent or null: none). */
  guardrails?: readonly AppliedGuardrail[] | null
  /** The region the request arrived in, by its host (default global). */
  region?: DataRegion
  /** Told of each content filter that matched (never the text). */
  onFilterMatch?: (m: FilterMatch) => void
  /** The workspace's own provider credentials, and who the request is for as their allow-lists name it. */
  byok?: { credentials: readonly ByokCredential[]; caller: ByokCaller }
  /** Where the run says what it left out of the request (a tool it cannot offer): the answer carries them. */
  warnings?: string[]
  /**
   * What an Anthropic client sent of Anthropic's own (doors/anthropic-betas.ts): the `anthropic-beta`
   * names and the body's Anthropic-only fields, both passed on to Anthropic endpoints as they came.
   */
  anthropic?: { betas: string[]; fields: Record<string, unknown> }
  /**
   * How the Responses door names a provider's items of kinds Open Responses does not define: by the
   * provider's slug (`openai:web_search_call`, Open Responses' rule for extension items), or by
   * OpenAI's own names, for the clients typed for them (the openai client, the official one). Absent: OpenAI's names.
   */
  providerItemNames?: 'slugged' | 'openai'
  /** Whose protocol the door speaks: the provider names (catalogue aliases) its model names are read as. */
  names?: AliasFamily
  /** A model name the catalogue does not know is refused 404 `model: <name>` (Anthropic's way), not by routing. */
  unknownModel?: 'not_found'
  /**
   * The door may answer with its provider's own reply where the endpoint speaks its protocol
   * (pass-through): how it answers a whole one (a stream's is its doorStream's). Absent: always translated.
   */
  passThrough?: PassThroughWhole
  /** Told which way the reply went, before its first byte: the provider's own (pass-through) or translated. */
  replyPath?: { passedThrough: boolean }
}

/** One model call that reached a provider: what the ledger records of it. */
export interface ModelCall {
  candidate: Candidate
  usage: Usage
  finish: string | null
  /** Epoch ms when it was sent. */
  sentAt: number
  firstByteMs?: number
  totalMs: number
  /** When it ended, in ms since the request began (the generation's latency). */
  endedAfterMs: number
  cancelled: boolean
  /** Roster counted its tokens (it ended before its provider reported them); absent: the provider did. */
  countedByRoster?: true
  /** Endpoints tried for it before (failed), then itself. */
  tried: ProviderAttempt[]
}
export interface ProviderAttempt {
  provider_name: string
  status: number | null
  latency: number
}

/** When an upstream call was sent, and its first byte came (ms since sent). */
export interface Timing {
  sent: number
  firstByte?: number
}

/** The state of one request as it runs: route, output so far, cost, and (streaming) the sink. */
export interface Run {
  req: ResponsesRequest
  id: string
  createdAt: number
  started: number
  route: Route
  assembler: ResponseAssembler
  functions: FunctionDef[]
  /** The server tools offered, by the function name the model calls them by. */
  tools: Map<string, ServerTool>
  /** The request's plugins, with their parameters. */
  plugins: PluginUse[]
  /** Sources found beyond the run's own tools (a plugin's search), cited in the answer. */
  found: FoundSources[]
  /** A sandbox was used (`openrouter:bash`): a request's is discarded when it ends. */
  sandboxUsed?: boolean
  /** Calls made of each server tool (by function name), against its `max_uses`. */
  toolUses?: Map<string, number>
  /** The client's web search tool, for the endpoints whose provider searches itself. */
  webSearch?: WebSearch
  /** The web search was left out of a call (its warning given). */
  searchLeftOut?: boolean
  toolChoice: ChoiceSpec
  user?: string
  cost: { input: number; output: number }
  chosen: number
  /** Upstream calls made to choose the endpoint (the first turn's; later turns reuse the choice). */
  attempts: number
  chosenOnce: boolean
  /** The model calls made so far (each a generation), and the failed attempts of the call under way. */
  calls: ModelCall[]
  tried: ProviderAttempt[]
  opts: CallOptions
  live?: Live
  /** How deep in consultations this run is (0: the client's own request; a consultation's is its parent's + 1). */
  depth?: number
  /** Where a streamed run's events go instead of its sink (a consultation's, read by the tool that asked). */
  tap?: Emit
  /** The provider's events forwarded as they came, for the call under way (pass-through), while they are. */
  pass?: PassThroughStream
  /** The reply went out as its provider's own (whole, or a stream forwarded to its end). */
  passedThrough?: boolean
  /** A whole reply of the provider's in the door's protocol, as it came and parsed, for the door to forward. */
  providerReply?: { text: string; json: unknown }
}

/** Where a stream goes. `open` is called once, just before the first event. */
export interface StreamSink {
  open(): void
  /** False when the client is not keeping up: wait for `drain` before reading more upstream. */
  write(chunk: string): boolean
  /**
   * Writes between these two leave together (one system call for what one read from the provider
   * brought). Nested pairs count; the last `uncork` may come after `end`, and must then do nothing.
   */
  cork(): void
  uncork(): void
  drain(): Promise<void>
  end(): void
}

export interface Live {
  sink: StreamSink
  seq: number
  opened: boolean
  /** Events written since the current upstream attempt began (0: another endpoint may still be tried). */
  sinceAttempt: number
  /** The upstream body, shown first when the request asked for it (debug.echo_upstream_body). */
  pendingDebug?: object
  backlog: boolean
  /** The sink is corked until the end of this tick (holdForTick). */
  held: boolean
}
