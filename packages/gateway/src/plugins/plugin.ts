import type { z } from 'zod'
import type { ResponseAssembler } from '../assembler.js'
import type { Catalogue } from '../catalogue.js'
import type { Moderator } from '../moderation.js'
import type { InputItem, ResponsesRequest } from '../request.js'
import type { Route } from '../routing.js'
import type { ServerTool, ServerToolKind, ServerToolType } from '../server-tools/index.js'
import type { FoundSources } from '../server-tools/web-search.js'

// Plugins: what a request's `plugins` entry (`{id, enabled?, …its parameters}`) asks Roster to do
// once per request, around the model's turns, as OpenRouter's plugins do: change the request
// before it is set up, add to the model's input before its first turn, or repair the whole answer.

/** What of the engine a plugin reads. */
export interface PluginEngine {
  catalogue: Catalogue
  serverTools: Map<ServerToolType, ServerToolKind>
  /** The moderation service, where one is configured. */
  moderation?: Moderator
}

/** What of a run a plugin reads and adds to. */
export interface PluginRun {
  req: ResponsesRequest
  route: Route
  assembler: ResponseAssembler
  /** Streaming: items are shown as they are made, and the answer is not repaired after. */
  live?: unknown
  /** Sources found beyond the run's own tools (a plugin's search), cited in the answer. */
  found: FoundSources[]
  signal: AbortSignal
  /**
   * Runs a server tool as if the model had called it: its item shown as it runs, with what a call of
   * the model's is given (consultations, the sandbox); the call and its output for the model to read.
   */
  runTool(tool: ServerTool, args: Record<string, unknown>): Promise<{ items: InputItem[]; output: unknown }>
  /**
   * Gives the model its endpoint's own web search, where the endpoint the request goes to has one
   * that takes these fields (`web_search` in the catalogue); false where it has none.
   */
  useProviderSearch(fields: Record<string, unknown>): boolean
}

export interface Plugin<P = unknown> {
  id: string
  /** The entry's fields beside `id` and `enabled` (snake_case, as the official client sends them). */
  parameters: z.ZodType<P>
  /** Before the request is set up: a new request (its input shortened), or the same one. */
  prepare?(req: ResponsesRequest, parameters: P, engine: PluginEngine): ResponsesRequest
  /** Once set up, before anything is shown or any model is called: a request it refuses is refused whole (it throws). */
  check?(run: PluginRun, parameters: P, engine: PluginEngine): Promise<void>
  /** Once set up, before the first turn: what the model reads besides the request (its items shown as they run). */
  before?(run: PluginRun, parameters: P, engine: PluginEngine): Promise<InputItem[]>
  /** After the last turn of a whole (not streamed) reply: the answer repaired in place. */
  finish?(run: PluginRun, parameters: P): void
}

/** One entry of a request's `plugins`, its parameters read by its plugin. */
export interface PluginUse {
  plugin: Plugin
  parameters: unknown
}
