// A provider's own web search, as clients offer it: OpenAI's Responses `web_search` tool (Codex
// sends one) or Anthropic's `web_search_20250305` (Claude Code's WebSearch). Such a tool goes to
// the provider, written in its protocol, where the endpoint says the provider searches (catalogue
// `web_search: true`); elsewhere it is left out, with a warning. (Roster's own search engines serve
// `openrouter:web_search`: server-tools/.)

type Fields = Record<string, unknown>

/** The Responses API's kinds of the tool (the dated ones and the preview included). */
const OPENAI_KINDS = new Set([
  'web_search',
  'web_search_2025_08_26',
  'web_search_preview',
  'web_search_preview_2025_03_11',
])
/** Anthropic's versions of the tool. */
const ANTHROPIC_KINDS = new Set(['web_search_20250305', 'web_search_20260209'])

/** A web search tool as the client offered it, and in whose protocol. */
export interface WebSearch {
  given: Fields
  family: 'openai' | 'anthropic'
}

/** The tool as one provider's endpoint takes it; `maxCalls` caps its searches where the tool itself cannot say so. */
export interface ProviderWebSearch {
  tool: Fields
  maxCalls?: number
}

export const isWebSearchKind = (type: string) => OPENAI_KINDS.has(type) || ANTHROPIC_KINDS.has(type)

/** The web search a tool offers, or undefined when it is another kind. */
export function webSearchOf(tool: Fields): WebSearch | undefined {
  const type = String(tool.type)
  if (OPENAI_KINDS.has(type)) return { given: tool, family: 'openai' }
  if (ANTHROPIC_KINDS.has(type)) return { given: tool, family: 'anthropic' }
  return undefined
}

const obj = (v: unknown): Fields => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Fields) : {})
const strings = (v: unknown): string[] | undefined =>
  Array.isArray(v) && v.length && v.every((s) => typeof s === 'string') ? (v as string[]) : undefined

/** An approximate location in the fields both providers name alike (city, region, country, timezone). */
function location(v: unknown): Fields | undefined {
  const given = obj(v)
  const out: Fields = {}
  for (const k of ['city', 'region', 'country', 'timezone'])
    if (typeof given[k] === 'string' && given[k]) out[k] = given[k]
  return Object.keys(out).length ? { type: 'approximate', ...out } : undefined
}

/**
 * OpenAI's Responses `web_search` for what the client offered, or undefined where it cannot honour
 * what was asked of it: a restriction OpenAI's tool has no field for is never dropped silently (the
 * tool is left out instead, and the answer warns).
 */
export function openaiWebSearch({ given, family }: WebSearch): ProviderWebSearch | undefined {
  if (family === 'openai') return { tool: given }
  // OpenAI's tool has allowed domains but no blocked ones.
  if (strings(given.blocked_domains)) return undefined
  const allowed = strings(given.allowed_domains)
  const where = location(given.user_location)
  const max = typeof given.max_uses === 'number' && given.max_uses > 0 ? given.max_uses : undefined
  return {
    tool: {
      type: 'web_search',
      ...(allowed ? { filters: { allowed_domains: allowed } } : {}),
      ...(where ? { user_location: where } : {}),
    },
    // max_tool_calls counts the provider's own tools' calls only: the search's cap, not the functions'.
    ...(max ? { maxCalls: max } : {}),
  }
}

/** Anthropic's `web_search_20250305` for what the client offered, or undefined where it cannot honour it. */
export function anthropicWebSearch({ given, family }: WebSearch): ProviderWebSearch | undefined {
  if (family === 'anthropic') return { tool: given }
  // Codex's cached-only search (no live web access): Anthropic's search is always live.
  if (given.external_web_access === false) return undefined
  const allowed = strings(obj(given.filters).allowed_domains)
  const where = location(given.user_location)
  return {
    tool: {
      type: 'web_search_20250305',
      name: 'web_search',
      ...(allowed ? { allowed_domains: allowed } : {}),
      ...(where ? { user_location: where } : {}),
    },
  }
}
