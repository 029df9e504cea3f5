import { invalid } from '../errors.js'

// The `anthropic-beta` features the Messages door serves, and Anthropic's refusal of the rest.
// A client names the features it will use; Anthropic refuses a name it does not serve with 400
// "Unexpected value(s) `a`, `b` for the `anthropic-beta` header", and its clients read that answer
// (Claude Code drops the names it quotes and sends again, without the features). So a feature
// Roster does not serve is refused in those words, never accepted and then ignored; and every
// name here is one whose requests Roster answers as Anthropic would.

/** Each served beta, and why accepting it is honest. */
export const SERVED_ANTHROPIC_BETAS: Record<string, string> = {
  'mid-conversation-system-2026-04-07': 'system messages inside `messages`, carried to every protocol',
  'claude-code-20250219': "names Claude Code as the client; changes nothing in a request's answer",
  'interleaved-thinking-2025-05-14': 'thinking between tool calls: thinking blocks are passed on wherever they come',
  'fine-grained-tool-streaming-2025-05-14': "a tool call's input streams as it comes, as every door streams it",
  'token-efficient-tools-2025-02-19': "how the provider encodes tools: nothing the client's request or answer shows",
  'prompt-caching-2024-07-31': '`cache_control` blocks, passed to providers that cache',
  'extended-cache-ttl-2025-04-11': "`cache_control.ttl` of `1h`, in the door's schema",
  'token-counting-2024-11-01': 'POST /messages/count_tokens',
  'output-128k-2025-02-19': '`max_tokens` is passed on, and the provider holds it to the model',
  'context-1m-2025-08-07': "the model's context is the catalogue's, and the provider holds it",
}

/** The names in an `anthropic-beta` header (comma-separated, given once or repeated) Roster does not serve. */
export function unservedBetas(header: string | string[] | undefined): string[] {
  if (header === undefined) return []
  const names = (Array.isArray(header) ? header : [header])
    .flatMap((h) => h.split(','))
    .map((n) => n.trim())
    .filter(Boolean)
  return [...new Set(names.filter((n) => !Object.hasOwn(SERVED_ANTHROPIC_BETAS, n)))]
}

/** Refuses a request naming a beta feature Roster does not serve, in Anthropic's words (which its clients read). */
export function checkAnthropicBetas(header: string | string[] | undefined): void {
  const unserved = unservedBetas(header)
  if (!unserved.length) return
  throw invalid(
    `Unexpected value(s) ${unserved.map((n) => `\`${n}\``).join(', ')} for the \`anthropic-beta\` header. Please consult our documentation at docs.claude.com or try again without the header. (This Roster serves: ${Object.keys(SERVED_ANTHROPIC_BETAS).join(', ')}.)`,
  )
}
