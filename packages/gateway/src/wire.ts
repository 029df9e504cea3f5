// The Response object the engine makes (Open Responses' ResponseResource, as far as Roster fills
// it), typed for the doors that translate it into their own replies.

export interface OutputText {
  type: 'output_text'
  text: string
  annotations: unknown[]
  logprobs: unknown[]
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
export interface ReasoningItem {
  type: 'reasoning'
  id: string
  summary: { type: 'summary_text'; text: string }[]
}
export interface FunctionCallItem {
  type: 'function_call'
  id: string
  call_id: string
  name: string
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
  output: string | null
}
export type OutputItem = MessageItem | ReasoningItem | FunctionCallItem | ServerToolItem

export interface ResponseUsage {
  input_tokens: number
  input_tokens_details: { cached_tokens: number; cache_write_tokens?: number }
  output_tokens: number
  output_tokens_details: { reasoning_tokens: number }
  total_tokens: number
  cost: number
  is_byok: boolean
  cost_details: { upstream_inference_cost: number; upstream_inference_input_cost: number; upstream_inference_output_cost: number }
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

/** Why the model stopped, in the terms every door maps from. */
export type StopReason = 'stop' | 'tool_calls' | 'length' | 'content_filter'

export function stopReasonOf(response: ResponseObject): StopReason {
  if (response.incomplete_details?.reason === 'max_output_tokens') return 'length'
  if (response.incomplete_details?.reason === 'content_filter') return 'content_filter'
  return response.output.some((o) => o.type === 'function_call') ? 'tool_calls' : 'stop'
}
