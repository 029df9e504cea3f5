import { createHash } from 'node:crypto'

// Generations: one record per model call (governance-contract.md §3), the ledger spend is
// counted from. Costs are exact: decimal prices per token become integer pico-dollars (USD × 10^12),
// so sums never drift.
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

const PICO_DIGITS = 12

/**
 * A price per token (a decimal string, plain or with an exponent) in pico-dollars. Digits past the
 * twelfth decimal are dropped: no catalogue prices a token in fractions of a pico-dollar.
 */
export function picoOf(price: string): bigint {
  // Every call of a model prices it from the same few strings: parsed once each.
  let pico = parsedPrices.get(price)
  if (pico === undefined) {
    if (parsedPrices.size >= 10_000) parsedPrices.clear()
    parsedPrices.set(price, (pico = parsePico(price)))
  }
  return pico
}
const parsedPrices = new Map<string, bigint>()

function parsePico(price: string): bigint {
  let text = price.trim()
  if (/e/i.test(text)) text = Number(text).toFixed(PICO_DIGITS)
  const [whole = '0', fraction = ''] = text.split('.')
  return (
    BigInt(whole || '0') * 10n ** BigInt(PICO_DIGITS) +
    BigInt((fraction + '0'.repeat(PICO_DIGITS)).slice(0, PICO_DIGITS))
  )
}

/** Prices per token (and per request) as the catalogue gives them. */
export interface Prices {
  input: string
  cached_input?: string
  /** Per input token written to the provider's cache, where it differs from the input price. */
  cache_write?: string
  output: string
  reasoning?: string
  request?: string
  /** Per web search the provider ran. */
  web_search?: string
}
/** A model call's tokens: input includes cached and cache writes; output includes reasoning. */
export interface Tokens {
  input: number
  cached: number
  /** Input tokens written to the provider's cache (each priced at `cache_write`). */
  cacheWrite?: number
  output: number
  reasoning: number
  /** Web searches the provider ran (each priced at `web_search`). */
  searches?: number
}

/**
 * What a model call costs, in pico-dollars, exactly, in its two parts: the input (cached tokens and
 * cache writes at their prices, and the request's own price) and the output (reasoning tokens, within the output, at
 * theirs). The Response's cost and the generation's are both these, so a token is priced once.
 */
export function costPicoParts(prices: Prices, t: Tokens): { input: bigint; output: bigint } {
  const n = (x: number) => BigInt(Math.max(0, Math.trunc(x)))
  const cached = Math.min(t.cached, t.input)
  const written = prices.cache_write ? Math.min(t.cacheWrite ?? 0, t.input - cached) : 0
  const reasoning = prices.reasoning ? Math.min(t.reasoning, t.output) : 0
  return {
    input:
      n(t.input - cached - written) * picoOf(prices.input) +
      n(cached) * picoOf(prices.cached_input ?? prices.input) +
      n(written) * picoOf(prices.cache_write ?? prices.input) +
      (prices.request ? picoOf(prices.request) : 0n) +
      (prices.web_search && t.searches ? n(t.searches) * picoOf(prices.web_search) : 0n),
    output: n(t.output - reasoning) * picoOf(prices.output) + n(reasoning) * picoOf(prices.reasoning ?? prices.output),
  }
}

/** What a model call costs, in pico-dollars, exactly. */
export function costPico(prices: Prices, t: Tokens): bigint {
  const parts = costPicoParts(prices, t)
  return parts.input + parts.output
}

export const PICO_PER_MICRO = 1_000_000n

/** Pico-dollars as USD (a number, for the wire). */
export const usdOfPico = (pico: bigint) => Number(pico) / 1e12

/**
 * The spend periods an instant falls in, as the spend rows name them: all-time, its UTC day,
 * its UTC week (named by its Monday) and its UTC month.
 */
export function spendPeriods(at: Date): { all: string; day: string; week: string; month: string } {
  // The same all day long: worked out once per UTC day (it is asked for per limit, per request).
  const dayNumber = Math.floor(at.getTime() / 86_400_000)
  if (dayNumber === lastPeriods.dayNumber) return lastPeriods.periods
  const periods = periodsOf(at)
  lastPeriods = { dayNumber, periods }
  return periods
}
let lastPeriods = { dayNumber: NaN, periods: { all: 'all', day: '', week: '', month: '' } }

function periodsOf(at: Date): { all: string; day: string; week: string; month: string } {
  const day = at.toISOString().slice(0, 10)
  const monday = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()))
  monday.setUTCDate(monday.getUTCDate() - ((monday.getUTCDay() + 6) % 7))
  return { all: 'all', day: `d${day}`, week: `w${monday.toISOString().slice(0, 10)}`, month: `m${day.slice(0, 7)}` }
}

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
 * The stored id of a generation from the id a client got: the Responses door's own (`resp_…`), or
 * the Chat Completions (`chatcmpl-…`) or Messages (`msg_…`) door's form of it.
 */
export function canonicalGenerationId(id: string): string {
  if (id.startsWith('chatcmpl-')) return `resp_${id.slice('chatcmpl-'.length)}`
  if (id.startsWith('msg_')) return `resp_${id.slice('msg_'.length)}`
  return id
}

/**
 * A bound on what someone spends, as the requests it applies to carry it (from the key's row, cached
 * with the key): a key's limit, or its account's credits. One shape, so one check and one counter
 * serve them all.
 */
export interface SpendLimit {
  /** Whose spend it bounds: a key's, a workspace's, an account's or a member's (memberSpendOwner) id (the spend rows' owner). */
  owner: string
  /** What it is, for the refusal: a key's own limit, a workspace's budget, an account's credits, a guardrail's limit. */
  of: 'key' | 'workspace' | 'account' | 'guardrail'
  /** The guardrail's name, for the refusal. */
  name?: string
  /** A guardrail's limit counted over a member's keys together (its owner is memberSpendOwner's). */
  member?: boolean
  /** USD × 10^12. */
  pico: bigint
  reset: 'daily' | 'weekly' | 'monthly' | null
  includeByok: boolean
}

/** What of a call's cost counts against a limit: all of it, but BYOK spend only when the limit says so. */
export const countedAgainst = (
  limit: Pick<SpendLimit, 'includeByok'>,
  r: Pick<GenerationRecord, 'is_byok' | 'cost_pico'>,
) => (r.is_byok && !limit.includeByok ? 0n : BigInt(r.cost_pico))

/** The period a limit is counted over at `at`: its window's (spendPeriods' name for it), or all-time. */
export function limitPeriod(limit: Pick<SpendLimit, 'reset'>, at: Date): string {
  return spendPeriods(at)[PERIOD_OF_RESET[limit.reset ?? 'none']]
}

/** Which of spendPeriods' periods a limit's reset counts over. */
const PERIOD_OF_RESET = { daily: 'day', weekly: 'week', monthly: 'month', none: 'all' } as const

/**
 * The Redis counter of what an owner spent against a limit in a period, raised by each append
 * beside the stream: one with BYOK spend and one without, so two limits of one owner that count
 * BYOK differently (a key's own limit, its guardrail's) each read their own.
 */
export const spendCounter = (queuePrefix: string, limit: Pick<SpendLimit, 'owner' | 'includeByok'>, period: string) =>
  `${queuePrefix}:spend:${limit.owner}:${period}${limit.includeByok ? ':byok' : ''}`

/** A limit's period at an instant, and the names its spend goes by then (spendCounter; the ledger's owner/period). */
export interface LimitNames {
  day: number
  period: string
  counter: string
  ledger: string
}

/**
 * A limit's names at an instant, worked out once per limit and UTC day: callers' limits are kept
 * with their keys (a changed limit is a new object), so the same objects come with every request,
 * and the same strings (their hashes computed once) serve every lookup.
 */
export function limitNames(queuePrefix: string): (limit: SpendLimit, at: number) => LimitNames {
  const kept = new WeakMap<SpendLimit, LimitNames>()
  return (limit, at) => {
    const day = Math.floor(at / 86_400_000)
    let names = kept.get(limit)
    if (names?.day !== day) {
      const period = limitPeriod(limit, new Date(at))
      names = { day, period, counter: spendCounter(queuePrefix, limit, period), ledger: `${limit.owner}/${period}` }
      kept.set(limit, names)
    }
    return names
  }
}

/**
 * Where an append that takes counters to a limit of its request publishes their new values (a JSON
 * array: counter, value, counter, value…), so every API process knows a spent limit at once.
 */
export const spendEventsChannel = (queuePrefix: string) => `${queuePrefix}:spend-events`

/**
 * Whose spend a member guardrail bounds: the member's in one workspace, all its keys together
 * (the spend statement names the owner the same way: md5 of "workspace/user" as a uuid).
 */
export function memberSpendOwner(workspaceId: string, userId: string): string {
  const h = createHash('md5').update(`${workspaceId}/${userId}`).digest('hex')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
}

/** How long a period's counter is kept in Redis after it was last written (past its period, it is never read). */
export const spendCounterTtl = (period: string) =>
  period.startsWith('d') ? 3 * 86_400 : period.startsWith('w') ? 10 * 86_400 : period.startsWith('m') ? 40 * 86_400 : 0
