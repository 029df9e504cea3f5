// The Response object the engine makes (Open Responses' ResponseResource, as far as Roster fills
// it), typed for the doors that translate it into their own replies.

/** A token's log probability (Open Responses' LogProb; Chat Completions' token logprob is the same). */
export interface TopLogProb {
  token: string
  logprob: number
  bytes: number[]
}
export interface LogProb extends TopLogProb {
  top_logprobs: TopLogProb[]
}

/**
 * An annotation on output text, as the Responses wire has it (`url_citation`, and the provider's own
 * kinds such as `file_citation` passed through). A citation that came from Anthropic keeps what
 * Anthropic sent under ANTHROPIC_CITATION, so the Messages door gives it back unchanged.
 */
export interface Annotation {
  type: string
  [field: string]: unknown
  [ANTHROPIC_CITATION]?: Record<string, unknown>
}
/** Where an annotation keeps the citation Anthropic sent (never serialized: a symbol key). */
export const ANTHROPIC_CITATION = Symbol('anthropic citation')

export interface OutputText {
  type: 'output_text'
  text: string
  annotations: Annotation[]
  logprobs: LogProb[]
}
export interface Refusal {
  type: 'refusal'
  refusal: string
}
export interface MessageItem {
  type: 'message'
  id: string
  role: 'assistant'
  status: string
  content: (OutputText | Refusal)[]
}
export interface SummaryText {
  type: 'summary_text'
  text: string
}
export interface ReasoningItem {
  type: 'reasoning'
  id: string
  summary: SummaryText[]
  /** The provider's opaque reasoning state: OpenAI's encrypted content, Anthropic's thinking signature. */
  encrypted_content?: string
  /** Anthropic's redacted thinking (its `data` is the encrypted_content): the Messages door gives it back as such. */
  [REDACTED_THINKING]?: true
}
export const REDACTED_THINKING = Symbol('redacted thinking')
/**
 * Whether a reasoning item's opaque state is OpenAI's encrypted content (a Fernet token, `gAAAAA…`)
 * rather than a signature of Anthropic's: the one can never be given to the other's API.
 */
export const isOpenAIEncrypted = (state: string) => state.startsWith('gAAAAA')
export interface FunctionCallItem {
  type: 'function_call'
  id: string
  call_id: string
  name: string
  /** The namespace tool the function belongs to, as the client offered it (namespaces.ts). */
  namespace?: string
  arguments: string
  status: string
}
/** A server tool's call and result (`openrouter:<name>`), run by Roster itself. */
export interface ServerToolItem {
  type: `openrouter:${string}`
  id: string
  call_id: string
  status: string
  arguments: string
  /** The result as the model read it (JSON text), unless the type's item documents another shape (a shell's outputs). */
  output: unknown
  /** The fields the official client's types document for this type's item (server-tools/). */
  [field: string]: unknown
}
/**
 * What Roster knows of an item its provider made that is none of Roster's own kinds (a provider-run
 * tool such as web search or MCP, or a call for the client of a kind Roster does not translate).
 */
export interface ProviderItemInfo {
  /**
   * The provider ran it and its result is in the reply (web search, MCP, code interpreter, file
   * search): a door that cannot show it leaves it out. Otherwise the client is meant to act on it,
   * and a door that cannot show it fails, naming its kind.
   */
  ranByProvider: boolean
  /** The item as the Messages door shows it: Anthropic's own blocks (the call and its result). Absent: it has none. */
  anthropicBlocks?: Record<string, unknown>[]
  /**
   * The item as the Chat Completions door shows it: a tool call of a kind other than `function`
   * (a `custom` call, or a kind Roster does not know) as Chat Completions writes it. Absent: it has none.
   */
  chatToolCall?: Record<string, unknown>
}
/** Where a provider's item keeps what Roster knows of it (a symbol key: never serialized). */
export const PROVIDER_ITEM = Symbol('provider item')
/**
 * An item a provider made, as the Responses door shows it: the provider's own Responses item as it
 * came (`web_search_call`, `local_shell_call`…), or one translated from another protocol
 * (`web_search_call`, `mcp_call`, or `anthropic:<tool>` for Anthropic tools with no Responses kind).
 */
export interface ProviderItem {
  type: string
  id?: string
  status?: string
  [field: string]: unknown
  [PROVIDER_ITEM]: ProviderItemInfo
}
export const isProviderItem = (item: OutputItem): item is ProviderItem => PROVIDER_ITEM in item

/**
 * A server tool's call Roster checked and hands over for the client to carry out (`openrouter:apply_patch`):
 * OpenAI's `apply_patch_call` for the clients typed for OpenAI's names, `openrouter:apply_patch` for any other.
 */
export interface HandedOverItem {
  type: 'apply_patch_call' | 'openrouter:apply_patch'
  id: string
  call_id: string
  status: 'in_progress' | 'completed'
  operation: { type: string; path: string; diff?: string }
}

export type OutputItem = MessageItem | ReasoningItem | FunctionCallItem | ServerToolItem | ProviderItem | HandedOverItem

export interface ResponseUsage {
  input_tokens: number
  input_tokens_details: { cached_tokens: number; cache_write_tokens?: number }
  output_tokens: number
  output_tokens_details: { reasoning_tokens: number }
  total_tokens: number
  cost: number
  is_byok: boolean
  cost_details: {
    upstream_inference_cost: number
    upstream_inference_input_cost: number
    upstream_inference_output_cost: number
  }
  /** Present where Roster counted tokens the provider did not report (docs/gateway.md, "Tokens"). */
  tokens_counted_by?: 'roster'
}

export interface ResponseObject {
  id: string
  object: 'response'
  created_at: number
  completed_at: number | null
  model: string
  status: 'in_progress' | 'completed' | 'incomplete' | 'failed'
  output: OutputItem[]
  output_text: string
  error: { code: string; message: string; metadata?: Record<string, unknown> } | null
  incomplete_details: { reason: 'max_output_tokens' | 'content_filter' } | null
  usage: ResponseUsage | null
  service_tier?: string
  service_metadata?: Record<string, unknown>
  openrouter_metadata?: Record<string, unknown>
  [echoed: string]: unknown
}

/** Where an event about a message's content part points. */
interface PartAt {
  item_id: string
  output_index: number
  content_index: number
}
/** Where an event about a reasoning item's summary points. */
interface SummaryAt {
  item_id: string
  output_index: number
  summary_index: number
}

/**
 * The events of the output's items as the engine makes them (Open Responses streaming events,
 * without `sequence_number`, which the stream adds). Each door translates these into its own.
 */
export type ItemEvent =
  | { type: 'response.output_item.added' | 'response.output_item.done'; output_index: number; item: OutputItem }
  | ({ type: 'response.content_part.added' | 'response.content_part.done'; part: OutputText | Refusal } & PartAt)
  | ({ type: 'response.output_text.delta'; delta: string; logprobs: LogProb[] } & PartAt)
  | ({ type: 'response.output_text.done'; text: string; logprobs: LogProb[] } & PartAt)
  | ({ type: 'response.refusal.delta'; delta: string } & PartAt)
  | ({ type: 'response.refusal.done'; refusal: string } & PartAt)
  | ({ type: 'response.output_text.annotation.added'; annotation_index: number; annotation: Annotation } & PartAt)
  | ({
      type: 'response.reasoning_summary_part.added' | 'response.reasoning_summary_part.done'
      part: SummaryText
    } & SummaryAt)
  | ({ type: 'response.reasoning_summary_text.delta'; delta: string } & SummaryAt)
  | ({ type: 'response.reasoning_summary_text.done'; text: string } & SummaryAt)
  | { type: 'response.function_call_arguments.delta'; item_id: string; output_index: number; delta: string }
  | {
      type: 'response.function_call_arguments.done'
      item_id: string
      output_index: number
      name: string
      arguments: string
    }

/** The events that begin and end a stream, around the items'. */
export type StreamEvent =
  | ItemEvent
  | { type: 'response.completed' | 'response.incomplete' | 'response.failed'; response: ResponseObject }
  | {
      type: 'error'
      code: string
      message: string
      param: null
      error: { type: string; code: string; message: string; param: null }
    }

/** Why the model stopped, in the terms every door maps from. */
export type StopReason = 'stop' | 'tool_calls' | 'length' | 'content_filter'

export function stopReasonOf(response: ResponseObject): StopReason {
  if (response.incomplete_details?.reason === 'max_output_tokens') return 'length'
  if (response.incomplete_details?.reason === 'content_filter') return 'content_filter'
  // A call for the client to act on, of any kind (a provider's `custom_tool_call`, `computer_call`…), is a tool call.
  const forClient = (o: OutputItem) =>
    isProviderItem(o) ? !o[PROVIDER_ITEM].ranByProvider : o.type === 'function_call'
  return response.output.some(forClient) ? 'tool_calls' : 'stop'
}
