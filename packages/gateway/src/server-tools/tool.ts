import type { z } from 'zod'
import { describeIssues, invalid } from '../errors.js'
import type { FunctionDef } from '../adapters/adapter.js'
import type { Catalogue } from '../catalogue.js'
import type { SearchCredential } from '../byok.js'

// Server tools: tools Roster itself runs between model turns. A request offers one as
// `{type: "openrouter:<name>", parameters?}`; the model sees it as an ordinary function; the client
// sees an output item of that type per call, with the fields the official client's types document
// for it (beside `call_id`, `arguments` and `output`, which every server tool item carries).

/** The type a request names a server tool by. */
export type ServerToolType = `openrouter:${string}`

/** What another model answered when a tool consulted it. */
export interface Consulted {
  text: string
  model: string
  /** The pages its answer cites (its web searches' `url_citation`s), each once. */
  sources?: { url: string; title: string }[]
}

/** A request a tool makes of another model, through the same engine as the caller's own. */
export interface Consultation {
  /** The model (absent: the calling request's). */
  model?: string
  instructions?: string
  /** The prompt; with `transcript`, the calling request's input comes before it. */
  prompt: string
  transcript?: boolean
  max_output_tokens?: number
  temperature?: number
  reasoning?: Record<string, unknown>
  /** Server tools the consulted model may use (entries as a request gives them). */
  tools?: Record<string, unknown>[]
  /** The tools are defaults of the tool's, not the caller's choice: those the caller's workspace disables are left out, not refused. */
  defaultTools?: boolean
  max_tool_calls?: number
  /** Told each piece of the answer's text as it comes (the consulted model is then streamed where the calling request is). */
  onText?: (delta: string) => void
  /** Told each piece of its reasoning as it comes. */
  onReasoning?: (delta: string) => void
}

// The workspace files `openrouter:files` works on (files.ts), as the API stores them.

/** A file as the Files API shows it. */
export interface FileRecord {
  id: string
  filename: string
  mime_type: string
  size_bytes: number
  created_at: string
  source_file_id?: string | null
}

/** The workspace files a request's tools reach (the API's store, scoped to the caller's workspace). */
export interface FilesPort {
  list(workspaceId: string, q: { filename?: string; limit: number }): Promise<FileRecord[]>
  /** A file by id, else the newest by exact name. */
  find(
    workspaceId: string,
    by: { id?: string; filename?: string },
  ): Promise<(FileRecord & { content: Buffer }) | undefined>
  /** Stores a new file (a quota or size refusal throws, its message for the model). */
  write(
    workspaceId: string,
    f: { filename: string; mimeType: string; content: Buffer; sourceFileId?: string; keyId?: string },
  ): Promise<FileRecord>
}

/** An image a model generated for a tool (a base64 image, or where the provider put it). */
export interface GeneratedImage {
  model: string
  b64?: string
  url?: string
  revisedPrompt?: string
}

/** What a sandboxed command came to (the runtime host's answer). */
export interface SandboxResult {
  exit_code: number | null
  signal: string | null
  stdout: string
  stderr: string
  truncated: boolean
  timed_out: boolean
  duration_ms: number
  limit?: string
}

/** Where sandboxed commands run: runtime hosts the API reaches, never the API's own process. */
export interface SandboxPort {
  /** `network`: the hosts the sandbox may reach (absent: none); fixed when the sandbox is made. */
  run(key: string, command: string, timeoutMs?: number, network?: { allowedDomains: string[] }): Promise<SandboxResult>
  discard(key: string): Promise<void>
  /** Lets go of its connections (the engine closing). */
  close?(): Promise<void>
}

/** What one call of a server tool is given besides the model's arguments. */
export interface ToolCallContext {
  signal: AbortSignal
  /**
   * The request's sandbox (its key: the request's, or its session's within the caller's workspace),
   * where there are hosts to run it; a session's has a container id a later request may name, and
   * `keyOf` gives a named container's key within the caller's workspace.
   */
  sandbox?: { port: SandboxPort; key: string; containerId?: string; keyOf(containerId: string): string }
  /**
   * Asks another model, through the engine with the caller's key, limits and guardrails: its model
   * calls are generations of the calling request, its cost in the request's. Absent outside a run.
   */
  consult?: (c: Consultation) => Promise<Consulted>
  /**
   * Asks a model that generates images for one (the catalogue's `image_generation` models), routed
   * with the caller's key, guardrails and BYOK: a generation of the calling request. Absent outside a run.
   */
  generateImage?: (model: string, prompt: string, fields: Record<string, unknown>) => Promise<GeneratedImage>
  /** The caller's workspace files (`openrouter:files`), where the request has a workspace and the API a store. */
  files?: { port: FilesPort; workspaceId: string; keyId?: string }
  /** The calling request's model (what a consultation with no model of its own asks). */
  model?: string
  /**
   * Shows an event of the call's item on a streamed Open Responses answer (`type` such as
   * `response.fusion_call.panel.delta`; the item's id and index are added); nothing elsewhere.
   */
  progress?: (type: string, fields?: Record<string, unknown>) => void
}

/** One tool the model is offered: an entry of the request's `tools`, made ready with its parameters. */
export interface ServerTool {
  type: ServerToolType
  definition: FunctionDef
  /** Runs with the model's arguments (an object; what is in it is the model's and is checked). */
  run(args: Record<string, unknown>, ctx: ToolCallContext): Promise<unknown>
  /** The documented fields of this type's output item, from the call's arguments and its output. */
  itemFields?(args: Record<string, unknown>, output: unknown): Record<string, unknown>
  /** What the model reads of a call's output (absent: all of it), shown as the item's `output`. */
  modelOutput?(output: unknown): unknown
  /** Calls one request may make (the entry's `max_uses`): later calls get an error result, not a run. */
  maxUses?: number
  /** Offered as a function the client runs (an engine other than Roster's): its calls are handed over, not run. */
  client?: boolean
  /**
   * Checked by Roster, carried out by the client (apply_patch): a call whose run answers
   * `{operation}` is handed over as its item and ends the loop, as a function call does; one whose
   * run answers an error is told to the model, which may try again.
   */
  handsOver?: boolean
}

/** A run's functions withheld until `openrouter:tool_search` finds them, and the list its model is offered (a function found joins it). */
export interface DeferredTools {
  withheld: FunctionDef[]
  offered: FunctionDef[]
}

/** What a kind of server tool may read when a request offers it. */
export interface OfferContext {
  catalogue: Catalogue
  /** The request's functions withheld until a search finds them (`defer_loading`), with the list offered. */
  deferred?: DeferredTools
  /** The workspace's own keys for hosted search APIs (BYOK) this caller may use. */
  searchKeys?: readonly SearchCredential[]
}

/** A kind of server tool: how its entry's `parameters` read, and the tool(s) one entry offers. */
export interface ServerToolKind<P = unknown> {
  type: ServerToolType
  /** The entry's `parameters` (absent: `{}`), checked: a request whose parameters do not read is refused 400. */
  parameters: z.ZodType<P>
  offer(parameters: P, ctx: OfferContext): ServerTool
}

/** An entry's parameters as its kind reads them; a 400 names `where` and the first problem. */
export function readParameters<P>(kind: ServerToolKind<P>, given: unknown, where: string): P {
  const parsed = kind.parameters.safeParse(given)
  if (!parsed.success) throw invalid(`${where}: ${describeIssues(parsed.error)}`)
  return parsed.data
}

/** A result the model reads as a failure of the tool, and the item shows as its `error`. */
export const toolError = (message: string) => ({ error: message })

/** The `error` of an output that is one (toolError), else undefined. */
export function errorOf(output: unknown): string | undefined {
  const error = (output as { error?: unknown } | null)?.error
  return typeof error === 'string' ? error : undefined
}
