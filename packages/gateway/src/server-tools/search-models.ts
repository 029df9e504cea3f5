import { z } from 'zod'
import type { CatalogueModel } from '../catalogue.js'
import type { ServerToolKind } from './tool.js'

// `openrouter:experimental__search_models`: the model searches this Roster's catalogue (the models
// a request here can name) by words, capabilities, context and price; every argument is optional,
// and an empty call browses the catalogue, best first as GET /models lists it.

const Parameters = z.object({ max_results: z.int().min(1).max(20).optional() })

/** The model's arguments, read leniently: a field of the wrong type is ignored, not fatal. */
interface Query {
  query?: string
  provider?: string
  capabilities: ('tools' | 'reasoning' | 'images')[]
  min_context_length?: number
  max_prompt_price?: number
  max_completion_price?: number
}

const CAPABILITIES = ['tools', 'reasoning', 'images'] as const
const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined)

function queryOf(args: Record<string, unknown>): Query {
  const str = (v: unknown) => (typeof v === 'string' && v.trim() ? v.trim().slice(0, 200) : undefined)
  const caps = Array.isArray(args.capabilities) ? args.capabilities : []
  return {
    query: str(args.query),
    provider: str(args.provider)?.toLowerCase(),
    capabilities: CAPABILITIES.filter((c) => caps.includes(c)),
    min_context_length: num(args.min_context_length),
    max_prompt_price: num(args.max_prompt_price),
    max_completion_price: num(args.max_completion_price),
  }
}

/** USD per million tokens, as people compare prices. */
const perMillion = (perToken: string) => Math.round(Number(perToken) * 1e6 * 1e6) / 1e6

function matches(m: CatalogueModel, q: Query): boolean {
  if (q.query) {
    const text = `${m.id} ${m.name} ${m.description ?? ''}`.toLowerCase()
    if (
      !q.query
        .toLowerCase()
        .split(/\s+/)
        .every((word) => text.includes(word))
    )
      return false
  }
  if (
    q.provider &&
    !m.endpoints.some((e) => e.provider.toLowerCase() === q.provider) &&
    !m.id.startsWith(`${q.provider}/`)
  )
    return false
  if (q.capabilities.some((c) => !m.capabilities[c])) return false
  if (q.min_context_length !== undefined && m.context_length < q.min_context_length) return false
  if (q.max_prompt_price !== undefined && perMillion(m.pricing.input) > q.max_prompt_price) return false
  if (q.max_completion_price !== undefined && perMillion(m.pricing.output) > q.max_completion_price) return false
  return true
}

export const searchModels: ServerToolKind<z.infer<typeof Parameters>> = {
  type: 'openrouter:experimental__search_models',
  parameters: Parameters,
  offer: (parameters, { catalogue }) => ({
    type: 'openrouter:experimental__search_models',
    definition: {
      name: 'search_models',
      description:
        'Searches the models this gateway serves by name, provider, capabilities, context length and price. Every argument is optional; with none it lists the catalogue.',
      parameters: {
        type: 'object',
        properties: {
          query: { type: 'string', description: "Words in the model's id, name or description" },
          provider: { type: 'string', description: 'A provider, e.g. anthropic' },
          capabilities: { type: 'array', items: { type: 'string', enum: [...CAPABILITIES] } },
          min_context_length: { type: 'integer', description: 'Fewest tokens of context' },
          max_prompt_price: { type: 'number', description: 'Highest input price, USD per million tokens' },
          max_completion_price: { type: 'number', description: 'Highest output price, USD per million tokens' },
        },
        additionalProperties: false,
      },
    },
    async run(args) {
      const found = catalogue.models.filter((m) => matches(m, queryOf(args)))
      const shown = found.slice(0, parameters.max_results ?? 5)
      return {
        total_results: found.length,
        showing: shown.length,
        models: shown.map((m) => ({
          id: m.id,
          name: m.name,
          ...(m.description ? { description: m.description } : {}),
          context_length: m.context_length,
          ...(m.max_output_tokens ? { max_output_tokens: m.max_output_tokens } : {}),
          pricing: {
            prompt_per_million: perMillion(m.pricing.input),
            completion_per_million: perMillion(m.pricing.output),
          },
          capabilities: CAPABILITIES.filter((c) => m.capabilities[c]),
          providers: [...new Set(m.endpoints.map((e) => e.provider))],
        })),
      }
    },
    itemFields: (args) => {
      const query = queryOf(args).query
      return { arguments: JSON.stringify(args), ...(query ? { query } : {}) }
    },
  }),
}
