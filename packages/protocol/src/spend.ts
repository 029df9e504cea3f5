import { createHash } from 'node:crypto'

// Spend: what a model call costs, exactly (decimal prices per token become integer pico-dollars,
// USD × 10^12, so sums never drift), and the names spend is counted under (each key's, workspace's,
// account's and member's, per period, in the ledger and in Redis' counters). The generations
// (generations.ts) carry the cost; the limits are checked against these counters.

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
  /** A generation's record (generations.ts), as far as its cost goes. */
  r: { is_byok: boolean; cost_pico: string | bigint },
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
