import { invalid } from '../errors.js'
import type { CallOptions } from '../run.js'

// What the Messages door does with `anthropic-beta`. A client names the beta features it may use, and
// clients name many: @ai-sdk/anthropic sends `structured-outputs-2025-11-13` with any tool on a model
// id it does not know (every `provider/model` slug), Claude Code a different set per version. A
// gateway must not break a client the provider itself serves, so no name is refused:
// - to an Anthropic endpoint, the header goes upstream as the client sent it, and so do the request's
//   fields that only Anthropic's API reads (ANTHROPIC_FIELDS): Anthropic serves or refuses them;
// - elsewhere a beta names no more than a way the client may talk, and is dropped; what matters is
//   the body. A field whose feature Roster carries to every protocol (`output_config`, the beta
//   `output_format`) is translated (messages-request.ts); one only Anthropic serves routes the request
//   to the model's Anthropic endpoints, and where it has none the request is refused, naming the
//   feature (400), never answered as though the feature had been used.
// docs/agents.md lists the betas clients send and what each comes to here.

/** Top-level fields of a Messages request only Anthropic's API reads, and what each is. */
export const ANTHROPIC_FIELDS: Record<string, { feature: string; elsewhere: 'refused' | 'dropped' }> = {
  mcp_servers: { feature: "Anthropic's MCP connector (mcp_servers)", elsewhere: 'refused' },
  container: { feature: "Anthropic's code execution container (container)", elsewhere: 'refused' },
  // Which earlier tool results and thinking the provider may clear from its context: a model served
  // without it reads the whole conversation the client sent, which is the request's own content.
  context_management: { feature: "Anthropic's context management (context_management)", elsewhere: 'dropped' },
}

/** A beta's name: a token (letters, digits, `.`, `_`, `-`), as every Anthropic beta is named. */
const NAME = /^[A-Za-z0-9._-]{1,128}$/
const MAX_BETAS = 64

/** The names in an `anthropic-beta` header (comma-separated, given once or repeated), each once. */
export function betasOf(header: string | string[] | undefined): string[] {
  if (header === undefined) return []
  const names = (Array.isArray(header) ? header : [header])
    .flatMap((h) => h.split(','))
    .map((n) => n.trim())
    .filter(Boolean)
  const bad = names.find((n) => !NAME.test(n))
  if (bad !== undefined)
    throw invalid(
      `the anthropic-beta header names features as comma-separated tokens (letters, digits, ".", "_", "-"); ${JSON.stringify(bad.slice(0, 64))} is not one`,
    )
  const unique = [...new Set(names)]
  if (unique.length > MAX_BETAS) throw invalid(`the anthropic-beta header names more than ${MAX_BETAS} features`)
  return unique
}

/** What the Messages door hands the engine of Anthropic's own: the betas named, and the body's Anthropic-only fields. */
export function anthropicExtras(
  header: string | string[] | undefined,
  body: Record<string, unknown>,
): Pick<CallOptions, 'anthropic'> {
  const betas = betasOf(header)
  const fields: Record<string, unknown> = {}
  for (const k of Object.keys(ANTHROPIC_FIELDS)) if (body[k] != null) fields[k] = body[k]
  return betas.length || Object.keys(fields).length ? { anthropic: { betas, fields } } : {}
}
