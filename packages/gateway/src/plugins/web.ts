import { z } from 'zod'
import { invalid } from '../errors.js'
import { inputItems, isMessage, type InputItem, type ResponsesRequest } from '../request.js'
import { readParameters } from '../server-tools/index.js'
import { sourcesOf } from '../server-tools/web-search.js'
import type { Plugin, PluginEngine } from './plugin.js'

// `web` and `web-fetch`: the server tools of those names run once, before the model's first turn,
// whatever the model would have chosen: a search for the user's latest message, or a fetch of the
// pages it links to. The model reads what they found as an instruction beside the conversation;
// the client sees each run as the tool's own item, and the answer cites the sources it names.

/** The user's latest message as text (its text parts joined), or '' when it has none. */
export function latestUserText(req: ResponsesRequest): string {
  const last = inputItems(req.input).findLast((i) => isMessage(i) && i.role === 'user')
  if (!last || !isMessage(last)) return ''
  if (typeof last.content === 'string') return last.content
  return (last.content as { type?: string; text?: unknown }[])
    .map((p) => (typeof p.text === 'string' && (p.type === 'input_text' || p.type === 'text') ? p.text : ''))
    .join('\n')
}

/** An instruction the model reads beside the conversation. */
const instruction = (text: string): InputItem => ({ role: 'developer', content: text })

/** A tool of `type` as the engine offers it, with `parameters` (a 400 when they do not read, or it cannot be served). */
type PluginTool = 'openrouter:web_search' | 'openrouter:web_fetch'

/** The plugin's parameters as the tool's kind reads them (a 400 naming the plugin when they do not). */
const toolParameters = (engine: PluginEngine, type: PluginTool, parameters: object) =>
  readParameters(
    engine.serverTools.get(type)!,
    parameters,
    `/plugins ${type === 'openrouter:web_search' ? 'web' : 'web-fetch'}`,
  )

/** A tool of `type` as the engine offers it, with the plugin's parameters. */
const offered = (engine: PluginEngine, type: PluginTool, parameters: object) =>
  engine.serverTools.get(type)!.offer(toolParameters(engine, type, parameters), engine)

const WebParameters = z.object({
  engine: z.string().max(32).optional(),
  include_domains: z.array(z.string().min(1).max(253)).max(100).optional(),
  exclude_domains: z.array(z.string().min(1).max(253)).max(100).optional(),
  max_results: z.int().min(1).max(25).optional(),
  max_uses: z.int().min(1).max(100).optional(),
  search_prompt: z.string().max(4_000).optional(),
  mode: z.string().max(32).optional(),
  user_location: z.unknown().optional(),
  x_search: z.unknown().optional(),
})

export const webPlugin: Plugin<z.infer<typeof WebParameters>> = {
  id: 'web',
  parameters: WebParameters,
  prepare(req, p, engine) {
    // Parameters that conflict are refused before anything runs.
    toolParameters(engine, 'openrouter:web_search', searchParameters(p))
    return req
  },
  async before(run, p, engine) {
    // Where the endpoint searches itself (OpenAI's and Anthropic's do), the model is given its search,
    // as OpenRouter's plugin does; a named engine of Roster's, or excluded domains, keep to Roster's.
    const engineName = p.engine ?? 'auto'
    if ((engineName === 'auto' || engineName === 'native') && !p.exclude_domains) {
      const fields = {
        type: 'web_search',
        ...(p.include_domains ? { filters: { allowed_domains: p.include_domains } } : {}),
      }
      if (run.useProviderSearch(fields)) return []
      if (engineName === 'native')
        throw invalid('/plugins web: engine native, but the endpoint chosen has no web search of its own')
    }
    const query = latestUserText(run.req).trim().slice(0, 400)
    if (!query) return []
    const tool = offered(engine, 'openrouter:web_search', searchParameters(p))
    const { output } = (await run.runTool(tool, { query })) as {
      output: {
        results?: { url: string; title: string; content: string }[]
      }
    }
    const found = sourcesOf(tool)
    if (found) run.found.push(found)
    if (!output.results?.length) return []
    const intro =
      p.search_prompt ??
      `A web search for the user's latest message was run on ${new Date().toISOString().slice(0, 10)}. Use these results where they help, and cite each one you use by its URL.`
    const results = output.results.map((r, i) => `[${i + 1}] ${r.title}\n${r.url}\n${r.content}`).join('\n\n')
    return [instruction(`${intro}\n\n${results}`)]
  },
}

const searchParameters = (p: z.infer<typeof WebParameters>) => ({
  ...(p.engine && p.engine !== 'native' && p.engine !== 'auto' ? { engine: p.engine } : {}),
  ...(p.include_domains ? { allowed_domains: p.include_domains } : {}),
  ...(p.exclude_domains ? { excluded_domains: p.exclude_domains } : {}),
  ...(p.max_results ? { max_results: p.max_results } : {}),
})

const WebFetchParameters = z.object({
  allowed_domains: z.array(z.string().min(1).max(253)).max(100).optional(),
  blocked_domains: z.array(z.string().min(1).max(253)).max(100).optional(),
  max_content_tokens: z.int().min(1).max(1_000_000).optional(),
  max_uses: z.int().min(1).max(20).optional(),
})

/** The http(s) URLs a text names, in order, once each. */
export const linksIn = (text: string) => [
  ...new Set([...text.matchAll(/https?:\/\/[^\s<>"'`)\]]+/g)].map((m) => m[0].replace(/[.,;:!?]+$/, ''))),
]

export const webFetchPlugin: Plugin<z.infer<typeof WebFetchParameters>> = {
  id: 'web-fetch',
  parameters: WebFetchParameters,
  prepare(req, p, engine) {
    toolParameters(engine, 'openrouter:web_fetch', p)
    return req
  },
  async before(run, p, engine) {
    const links = linksIn(latestUserText(run.req)).slice(0, p.max_uses ?? 3)
    if (!links.length) return []
    const tool = offered(engine, 'openrouter:web_fetch', p)
    const pages: string[] = []
    for (const url of links) {
      const out = (await run.runTool(tool, { url })).output as { content?: string; error?: string; url?: string }
      pages.push(out.error ? `${url}: could not be fetched (${out.error})` : `${out.url ?? url}\n${out.content ?? ''}`)
    }
    return [instruction(`The pages the user's latest message links to, as fetched now:\n\n${pages.join('\n\n')}`)]
  },
}
