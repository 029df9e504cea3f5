import { z } from 'zod'
import type { FunctionDef } from '../adapters/adapter.js'
import { toolError, type ServerToolKind } from './tool.js'

// `openrouter:tool_search`: function tools offered with `defer_loading: true` are withheld from the
// model until a search finds them; each search returns the matching definitions, and the tools
// found are offered from the next turn on (the model calls them like any other; the client answers
// them as usual). A search matches a tool whose name, description, or parameters' names and
// descriptions hold one of its words, case-insensitively, the most matched first.

const Parameters = z.object({ max_results: z.int().min(1).max(50).optional() })

/** Every text a search reads of a function: its name, description, and its parameters' names and descriptions. */
function searchable(f: FunctionDef): string {
  const props = (f.parameters as { properties?: Record<string, { description?: unknown }> } | undefined)?.properties
  const params = Object.entries(props ?? {}).map(
    ([name, p]) => `${name} ${typeof p?.description === 'string' ? p.description : ''}`,
  )
  return [f.name.replace(/[_-]/g, ' '), f.name, f.description ?? '', ...params].join(' ').toLowerCase()
}

export const toolSearch: ServerToolKind<z.infer<typeof Parameters>> = {
  type: 'openrouter:tool_search',
  parameters: Parameters,
  offer: (parameters, { deferred }) => ({
    type: 'openrouter:tool_search',
    definition: {
      name: 'tool_search',
      description:
        'Searches the tools that are available but not yet loaded. Give words describing what you need to do; the tools found become callable on your next turn.',
      parameters: {
        type: 'object',
        properties: { query: { type: 'string', description: 'Words describing the capability needed' } },
        required: ['query'],
        additionalProperties: false,
      },
    },
    async run(args) {
      const query = typeof args.query === 'string' ? args.query.trim().toLowerCase().slice(0, 400) : ''
      const words = query.split(/[^\p{L}\p{N}]+/u).filter((w) => w.length > 1)
      if (!words.length) return toolError('query is empty')
      const withheld = deferred?.withheld ?? []
      const found = withheld
        .map((f) => ({ f, score: words.filter((w) => searchable(f).includes(w)).length }))
        .filter((x) => x.score > 0)
        .sort((a, b) => b.score - a.score)
        .slice(0, parameters.max_results ?? 5)
        .map((x) => x.f)
      for (const f of found) if (deferred && !deferred.offered.some((o) => o.name === f.name)) deferred.offered.push(f)
      return {
        query,
        tools: found.map((f) => ({ name: f.name, description: f.description ?? '', parameters: f.parameters })),
        ...(found.length ? {} : { note: 'no tool matches; try other words' }),
      }
    },
    itemFields: (args) => (typeof args.query === 'string' ? { query: args.query } : {}),
  }),
}
