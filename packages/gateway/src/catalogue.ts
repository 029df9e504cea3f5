import { readFile } from 'node:fs/promises'
import { z } from 'zod'

// The model catalogue: which model slugs Roster serves and through which provider endpoints. A
// JSON file (path from a setting), validated at start-up. Credentials are never in the file: an
// endpoint names the environment variable that holds its key.

/** USD per token, as a decimal string (the official client's pricing fields are strings). */
const Price = z.string().regex(/^\d+(\.\d+)?(e-?\d+)?$/i, 'a price per token, as a decimal string such as "0.0000025"')

export const Protocol = z.enum(['openai-chat', 'openai-responses', 'anthropic-messages'])
export type Protocol = z.infer<typeof Protocol>

const Pricing = z.strictObject({ input: Price, cached_input: Price.optional(), output: Price })

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
    })
    .default({ tools: true, reasoning: false, images: false, caching: false }),
  endpoints: z.array(Endpoint).min(1),
  created: z.int().min(0).default(0),
})
export type CatalogueModel = z.infer<typeof CatalogueModel>

export const Catalogue = z.strictObject({ models: z.array(CatalogueModel) }).superRefine((c, ctx) => {
  const seen = new Set<string>()
  c.models.forEach((m, i) => {
    if (seen.has(m.id))
      ctx.addIssue({ code: 'custom', path: ['models', i, 'id'], message: `model ${m.id} is listed twice` })
    seen.add(m.id)
  })
})
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

/** The catalogue as the official client's models list expects it (`GET /models`). */
const supportedParameters = (m: CatalogueModel) => [
  'max_tokens',
  'temperature',
  'top_p',
  'stop',
  'response_format',
  'structured_outputs',
  ...(m.capabilities.tools ? ['tools', 'tool_choice'] : []),
  ...(m.capabilities.reasoning ? ['reasoning', 'include_reasoning'] : []),
]

const architecture = (m: CatalogueModel) => ({
  modality: m.capabilities.images ? 'text+image->text' : 'text->text',
  input_modalities: m.capabilities.images ? ['text', 'image'] : ['text'],
  output_modalities: ['text'],
})

const pricingOf = (p: CatalogueModel['pricing']) => ({
  prompt: p.input,
  completion: p.output,
  ...(p.cached_input ? { input_cache_read: p.cached_input } : {}),
})

export function modelsList(catalogue: Catalogue) {
  const data = catalogue.models.map((m) => ({
    id: m.id,
    canonical_slug: m.id,
    name: m.name,
    created: m.created,
    description: m.description ?? '',
    context_length: m.context_length,
    architecture: architecture(m),
    pricing: pricingOf(m.pricing),
    top_provider: {
      context_length: m.context_length,
      max_completion_tokens: m.max_output_tokens ?? null,
      is_moderated: false,
    },
    per_request_limits: null,
    supported_parameters: supportedParameters(m),
    supported_voices: null,
    default_parameters: null,
    links: { details: `/api/v1/models/${m.id}/endpoints` },
    endpoints: m.endpoints.map((e) => ({ provider: e.provider, protocol: e.protocol, tiers: e.tiers })),
  }))
  return { data, links: { next: null }, total_count: data.length }
}

/** One model's endpoints (`GET /models/{author}/{slug}/endpoints`), as the official client's endpoints list expects. */
export function modelEndpoints(catalogue: Catalogue, id: string) {
  const m = catalogue.models.find((x) => x.id === id)
  if (!m) return undefined
  const tools = m.capabilities.tools
  return {
    id: m.id,
    name: m.name,
    created: m.created,
    description: m.description ?? '',
    architecture: { ...architecture(m), instruct_type: null, tokenizer: null },
    endpoints: m.endpoints.map((e) => ({
      name: `${e.provider} | ${m.id}`,
      model_id: m.id,
      model_name: m.name,
      provider_name: e.provider,
      tag: e.provider,
      protocol: e.protocol,
      tiers: e.tiers,
      context_length: m.context_length,
      max_completion_tokens: m.max_output_tokens ?? null,
      max_prompt_tokens: null,
      pricing: pricingOf(e.pricing ?? m.pricing),
      quantization: null,
      supported_parameters: supportedParameters(m),
      supports_implicit_caching: m.capabilities.caching,
      supports_tool_choice: { auto: tools, function: tools, none: tools, required: tools },
      supports_voice_cloning: false,
      // Roster keeps no uptime or latency history across restarts; unknown is null, as the client allows.
      status: 0,
      uptime_last_30m: null,
      uptime_last_5m: null,
      uptime_last_1d: null,
      latency_last_30m: null,
      throughput_last_30m: null,
    })),
  }
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
      model('messages', 'Anthropic Messages protocol', 'anthropic-messages', '/v1'),
    ],
  }
}
