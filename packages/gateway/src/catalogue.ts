import { readFile } from 'node:fs/promises'
import { z } from 'zod'
import { ADAPTERS, PROTOCOLS, type Protocol as ProtocolName } from './adapters/registry.js'

// The model catalogue: which model slugs Roster serves and through which provider endpoints. A
// JSON file (path from a setting), validated at start-up. Credentials are never in the file: an
// endpoint names the environment variable that holds its key.

/** USD per token, as a decimal string (the official client's pricing fields are strings). */
const Price = z.string().regex(/^\d+(\.\d+)?(e-?\d+)?$/i, 'a price per token, as a decimal string such as "0.0000025"')

export const Protocol = z.enum(PROTOCOLS)
export type Protocol = ProtocolName

const Pricing = z.strictObject({
  input: Price,
  cached_input: Price.optional(),
  /** Per input token written to the provider's cache (Anthropic's cache writes, OpenAI's `cache_write_tokens`), where it differs from the input price. */
  cache_write: Price.optional(),
  output: Price,
  /** Per reasoning token, where it differs from the output price. */
  reasoning: Price.optional(),
  /** Per request, on top of the tokens. */
  request: Price.optional(),
  /** Per input image. */
  image: Price.optional(),
  /** Per web search the provider runs (endpoints with `web_search`). */
  web_search: Price.optional(),
})

export const Endpoint = z.strictObject({
  /** Shown to clients as the provider, e.g. "openai", "anthropic", "local-vllm". */
  provider: z.string().min(1).max(64),
  protocol: Protocol,
  base_url: z.url(),
  upstream_model: z.string().min(1),
  /** The environment variable holding the credential; omitted for endpoints that need none. */
  api_key_env: z
    .string()
    .regex(/^[A-Z_][A-Z0-9_]*$/, 'an environment variable name')
    .optional(),
  tiers: z
    .array(z.enum(['default', 'flex', 'priority', 'scale', 'ultrafast']))
    .min(1)
    .default(['default']),
  /** Overrides the model's prices on this endpoint. */
  pricing: Pricing.optional(),
  timeout_ms: z.int().min(100).max(600_000).default(120_000),
  /** The provider keeps no prompt or completion (zero data retention), as its terms say. */
  zdr: z.boolean().optional(),
  /**
   * The provider runs its own web search on this endpoint (OpenAI's Responses `web_search` tool,
   * Anthropic's `web_search_20250305`): a client's web search tool is sent to it. Not every
   * endpoint of those protocols has one (a self-hosted server rarely does), hence a setting.
   */
  web_search: z.boolean().optional(),
})
export type Endpoint = z.infer<typeof Endpoint>

export const CatalogueModel = z.strictObject({
  id: z.string().regex(/^[a-z0-9][a-z0-9._-]*\/[a-z0-9][a-z0-9._:-]*$/i, 'author/slug'),
  name: z.string().min(1),
  description: z.string().optional(),
  context_length: z.int().min(1),
  max_output_tokens: z.int().min(1).optional(),
  pricing: Pricing,
  capabilities: z
    .strictObject({
      tools: z.boolean().default(true),
      reasoning: z.boolean().default(false),
      images: z.boolean().default(false),
      caching: z.boolean().default(false),
      /** It generates images through OpenAI's Images API at its endpoints (`openrouter:image_generation`); it answers no text. */
      image_generation: z.boolean().optional(),
    })
    .default({ tools: true, reasoning: false, images: false, caching: false }),
  endpoints: z.array(Endpoint).min(1),
  created: z.int().min(0).default(0),
  /**
   * Other names the model answers to: a provider's own (`claude-haiku-4-5-20251001`), as agents
   * built for that provider send them. Anthropic's names are matched on /messages, OpenAI's on
   * /responses and /chat/completions: the doors that speak each provider's protocol.
   */
  aliases: z
    .strictObject({
      anthropic: z.array(z.string().min(1).max(200)).optional(),
      openai: z.array(z.string().min(1).max(200)).optional(),
    })
    .optional(),
})
export type CatalogueModel = z.infer<typeof CatalogueModel>

export const Catalogue = z.strictObject({ models: z.array(CatalogueModel) }).superRefine((c, ctx) => {
  const seen = new Set<string>()
  c.models.forEach((m, i) => {
    if (seen.has(m.id))
      ctx.addIssue({ code: 'custom', path: ['models', i, 'id'], message: `model ${m.id} is listed twice` })
    seen.add(m.id)
    m.endpoints.forEach((e, j) => {
      if (e.web_search && !ADAPTERS[e.protocol].webSearch)
        ctx.addIssue({
          code: 'custom',
          path: ['models', i, 'endpoints', j, 'web_search'],
          message: `${ADAPTERS[e.protocol].title} has no web search tool: web_search is for ${PROTOCOLS.filter((p) => ADAPTERS[p].webSearch).join(' and ')} endpoints`,
        })
    })
  })
  // An alias names one model of its family, and never another model's id.
  for (const family of ALIAS_FAMILIES) {
    const owner = new Map<string, string>()
    c.models.forEach((m, i) =>
      m.aliases?.[family]?.forEach((alias, j) => {
        const path = ['models', i, 'aliases', family, j]
        if (seen.has(alias))
          ctx.addIssue({ code: 'custom', path, message: `${alias} is a model's id; an alias cannot shadow it` })
        else if (owner.has(alias))
          ctx.addIssue({ code: 'custom', path, message: `${alias} is already an alias of ${owner.get(alias)}` })
        owner.set(alias, m.id)
      }),
    )
  }
})

/** The provider families whose own model names a catalogue may map (catalogue `aliases`). */
export const ALIAS_FAMILIES = ['anthropic', 'openai'] as const
export type AliasFamily = (typeof ALIAS_FAMILIES)[number]

/** Per catalogue: each family's names (every model's id, and that family's aliases) to model ids. */
const nameIndexes = new WeakMap<object, Record<AliasFamily, Map<string, string>>>()

/**
 * The catalogue id a model name sent on a door of `family`'s protocol stands for: a model's own id,
 * or an alias of that family (`aliases`); undefined when it names no model. One map lookup: it runs
 * on every gateway request.
 */
export function catalogueIdOf(
  catalogue: { models: CatalogueModel[] },
  family: AliasFamily,
  name: string,
): string | undefined {
  let index = nameIndexes.get(catalogue)
  if (!index) {
    const names = (f: AliasFamily) =>
      new Map(
        catalogue.models.flatMap((m) => [
          [m.id, m.id] as const,
          ...(m.aliases?.[f] ?? []).map((a) => [a, m.id] as const),
        ]),
      )
    index = { anthropic: names('anthropic'), openai: names('openai') }
    nameIndexes.set(catalogue, index)
  }
  return index[family].get(name)
}
export type Catalogue = z.infer<typeof Catalogue>

export class CatalogueError extends Error {
  override name = 'CatalogueError'
}

/** Reads and validates a catalogue file; every problem is reported with its path in the file. */
export async function loadCatalogue(path: string, env: NodeJS.ProcessEnv = process.env): Promise<Catalogue> {
  let raw: unknown
  try {
    raw = JSON.parse(await readFile(path, 'utf8'))
  } catch (err) {
    throw new CatalogueError(`model catalogue ${path} cannot be read as JSON: ${(err as Error).message}`)
  }
  const parsed = Catalogue.safeParse(raw)
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.') || '(root)'}: ${i.message}`)
    throw new CatalogueError(`model catalogue ${path} is invalid:\n${lines.join('\n')}`)
  }
  const missing = parsed.data.models.flatMap((m) =>
    m.endpoints
      .filter((e) => e.api_key_env && !env[e.api_key_env])
      .map((e) => `${m.id} (${e.provider}) needs ${e.api_key_env}`),
  )
  if (missing.length)
    throw new CatalogueError(`model catalogue ${path} names credentials that are not set: ${missing.join('; ')}`)
  return parsed.data
}

/**
 * The demo catalogue `npm start` serves when none is configured: one model per protocol, all on
 * the upstream simulator, and named as such so no one mistakes them for real models.
 */
export function simulatorCatalogue(simulatorUrl: string): Catalogue {
  const model = (slug: string, name: string, protocol: Protocol, path: string): CatalogueModel => ({
    id: `roster-sim/${slug}`,
    name: `Roster upstream simulator (${name}; not a real model)`,
    description: 'Deterministic generated text from packages/upstream-sim, for trying Roster out.',
    context_length: 128_000,
    max_output_tokens: 4_096,
    pricing: { input: '0.000001', cached_input: '0.0000001', output: '0.000002' },
    capabilities: { tools: true, reasoning: true, images: true, caching: true },
    endpoints: [
      {
        provider: 'upstream-sim',
        protocol,
        base_url: `${simulatorUrl}${path}`,
        upstream_model: slug,
        tiers: ['default', 'priority'],
        timeout_ms: 30_000,
      },
    ],
    created: 0,
  })
  return {
    models: [
      model('chat', 'OpenAI Chat Completions protocol', 'openai-chat', '/v1'),
      model('responses', 'OpenAI Responses protocol', 'openai-responses', '/v1'),
      {
        ...model('messages', 'Anthropic Messages protocol', 'anthropic-messages', '/v1'),
        // The names Claude Code calls side models and subagents by, so it works here unconfigured.
        aliases: { anthropic: [...CLAUDE_CODE_MODEL_NAMES] },
      },
    ],
  }
}

/** Anthropic model names Claude Code sends by itself (2.1: `haiku`, `sonnet`, `opus` for subagents; haiku for side calls). */
export const CLAUDE_CODE_MODEL_NAMES = [
  'claude-haiku-4-5-20251001',
  'claude-haiku-4-5',
  'claude-haiku-5-5',
  'claude-sonnet-5-5',
  'claude-opus-5-5',
] as const
