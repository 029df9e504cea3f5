import { usdOfPico, type SpendLimit } from './spend.js'

// Generations: one record per model call (governance-contract.md §3), the ledger spend is
// counted from (what a call costs, and the names spend is counted under: spend.ts).
//
// The way a record travels: the API appends it to a Redis stream (GENERATIONS_STREAM) before the
// reply's last byte leaves (so a reply a client got is never unaccounted, whatever happens to the API
// process next); the worker drains the stream into Postgres in batches, idempotent by id, keeping each
// key's, workspace's and account's spend per period as it writes. While Redis is away the API writes the record to Postgres itself.

/** One model call, as it is appended and written (snake_case: the table's names). */
export interface GenerationRecord {
  id: string
  request_id: string
  created_at: string
  key_id: string | null
  workspace_id: string | null
  account_id: string | null
  user_id: string | null
  intern_id: string | null
  model: string
  provider: string | null
  upstream_model: string | null
  door: string
  tokens_prompt: number
  tokens_completion: number
  tokens_reasoning: number
  tokens_cached: number
  /** USD × 10^12, as a decimal string (JSON has no big integers). */
  cost_pico: string
  is_byok: boolean
  latency_ms: number | null
  generation_time_ms: number | null
  ttft_ms: number | null
  streamed: boolean
  cancelled: boolean
  /**
   * Who counted the tokens: the provider (absent: a record from before this field), or Roster, for
   * a call that ended before its provider reported them (what it passed on, and the input, counted
   * as docs/gateway.md says).
   */
  tokens_counted_by?: 'provider' | 'roster'
  /** The reply went to the client as its provider sent it (pass-through; absent: translated, or a record from before). */
  pass_through?: boolean
  finish_reason: string | null
  upstream_id: string | null
  session_id: string | null
  http_referer: string | null
  app_title: string | null
  user_agent: string | null
  external_user: string | null
  preset_id: string | null
  provider_responses: { provider_name: string; status: number | null; latency: number }[]
  /** The request's prompt and completion, on its first record only, where its workspace keeps them. */
  content?: GenerationContentRecord
}

/** A request's content as kept by private logging (GenerationContent, §3.2, without its wrapper). */
export interface GenerationContentRecord {
  input: { prompt: string } | { messages: unknown[] }
  output: { completion: string | null; reasoning: string | null }
  error: {
    status: number | null
    message: string | null
    provider_name: string | null
    raw: string | null
    previous_errors: { code: number; message: string; provider_name: string | null; raw: string | null }[]
  } | null
}

/** Who a model call is for and where it came from: what the API knows of the request, passed through the engine. */
export interface GenerationContext {
  keyId: string | null
  workspaceId: string | null
  accountId: string | null
  userId: string | null
  internId: string | null
  sessionId: string | null
  httpReferer: string | null
  appTitle: string | null
  userAgent: string | null
  presetId: string | null
  /** The limits the request's spend counts against (its key's, its account's credits), checked before any upstream call. */
  limits: readonly SpendLimit[]
  /** Whether this request's prompt and completion are kept (its workspace's private logging, sampled). */
  keepContent: boolean
}

/** Where generations are appended, durably, before a reply ends. */
export interface GenerationLedger {
  /** `limits`: those the records count against, whose counters the append raises too. */
  append(records: GenerationRecord[], limits?: readonly SpendLimit[]): Promise<void>
}

/** The Redis stream the API appends generations to and the worker drains. */
export const generationsStream = (queuePrefix: string) => `${queuePrefix}:generations`

/** A generation's row as the repository reads it. */
export type GenerationRow = Omit<GenerationRecord, 'cost_pico' | 'created_at'> & { cost_pico: bigint; created_at: Date }

/** The Generation object (§3.1): 45 keys; what Roster does not track is null. */
export function generationView(g: GenerationRow) {
  const cost = usdOfPico(g.cost_pico)
  const roster = g.tokens_counted_by === 'roster'
  return {
    id: g.id,
    model: g.model,
    created_at: g.created_at.toISOString(),
    origin: g.http_referer ?? '',
    data_region: 'global',
    is_byok: g.is_byok,
    total_cost: cost,
    usage: g.is_byok ? 0 : cost,
    upstream_inference_cost: cost,
    cache_discount: null,
    latency: g.latency_ms,
    generation_time: g.generation_time_ms,
    moderation_latency: null,
    tokens_prompt: g.tokens_prompt,
    tokens_completion: g.tokens_completion,
    // As the provider reported them: none where Roster counted (tokens_* hold its count).
    native_tokens_prompt: roster ? null : g.tokens_prompt,
    native_tokens_completion: roster ? null : g.tokens_completion,
    native_tokens_cached: g.tokens_cached,
    native_tokens_reasoning: g.tokens_reasoning,
    native_tokens_completion_images: null,
    num_media_prompt: null,
    num_media_completion: null,
    num_input_audio_prompt: null,
    num_search_results: null,
    num_fetches: null,
    provider_name: g.provider,
    provider_responses: g.provider_responses.map((p) => ({
      status: p.status,
      provider_name: p.provider_name,
      latency: p.latency,
    })),
    finish_reason: g.finish_reason,
    native_finish_reason: g.finish_reason,
    api_type: 'completions',
    streamed: g.streamed,
    cancelled: g.cancelled,
    // Roster's: whether the client got the provider's own reply (docs/gateway.md, "Pass-through").
    pass_through: g.pass_through ?? false,
    router: null,
    service_tier: null,
    upstream_id: g.upstream_id,
    app_id: null,
    preset_id: g.preset_id,
    external_user: g.external_user,
    http_referer: g.http_referer,
    user_agent: g.user_agent,
    web_search_engine: null,
    workspace_id: g.workspace_id,
    request_id: g.request_id,
    session_id: g.session_id,
    response_cache_source_id: null,
  }
}

/**
 * When a generation's request began, read from its stored id (`resp_` and the second in 8 hex
 * digits: the gateway's runId); undefined for an id that does not say (one made before it did).
 */
export function generationTimeOf(id: string): Date | undefined {
  const m = /^resp_([0-9a-f]{8})[0-9a-f]{24}(?:-\d+)?$/.exec(id)
  return m ? new Date(parseInt(m[1]!, 16) * 1000) : undefined
}

/** The id the client got for a generation's request: its door's form of the stored id. */
export function clientGenerationId(id: string, door: string): string {
  if (!id.startsWith('resp_')) return id
  if (door === 'chat_completions') return `chatcmpl-${id.slice('resp_'.length)}`
  if (door === 'messages') return `msg_${id.slice('resp_'.length)}`
  return id
}

/**
 * The stored id of a generation from the id a client got: the Responses door's own (`resp_…`), or
 * the Chat Completions (`chatcmpl-…`) or Messages (`msg_…`) door's form of it.
 */
export function canonicalGenerationId(id: string): string {
  if (id.startsWith('chatcmpl-')) return `resp_${id.slice('chatcmpl-'.length)}`
  if (id.startsWith('msg_')) return `resp_${id.slice('msg_'.length)}`
  return id
}
