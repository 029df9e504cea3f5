import { describeIssues, invalid } from '../errors.js'
import type { ResponsesRequest } from '../request.js'
import { contextCompression } from './context-compression.js'
import type { Plugin, PluginUse } from './plugin.js'
import { responseHealing } from './response-healing.js'
import { ROUTERS } from './routers.js'
import { webFetchPlugin, webPlugin } from './web.js'
import { fileParser } from './file-parser.js'
import { fusionPlugin } from './fusion.js'
import { moderationPlugin } from './moderation.js'

export type { Plugin, PluginEngine, PluginRun, PluginUse } from './plugin.js'
export { routedModel } from './routers.js'
export { parsesFiles, withFilesRead } from './file-parser.js'

/** The plugins this Roster serves, by id: the one table. */
const PLUGINS = new Map<string, Plugin>(
  [
    responseHealing,
    contextCompression,
    webPlugin,
    webFetchPlugin,
    fileParser,
    fusionPlugin,
    moderationPlugin,
    ...ROUTERS.map((r) => r.plugin),
  ].map((p) => [p.id, p as Plugin]),
)

/** A request's enabled plugins, each entry's parameters read by its plugin; a 400 names the first that cannot be served. */
export function pluginUses(req: ResponsesRequest): PluginUse[] {
  const uses: PluginUse[] = []
  for (const [i, entry] of (req.plugins ?? []).entries()) {
    if (entry.enabled === false) continue
    const plugin = PLUGINS.get(entry.id)
    if (!plugin)
      throw invalid(
        `/plugins/${i} ${entry.id} is not served by this Roster (served: ${[...PLUGINS.keys()].join(', ')})`,
      )
    if (uses.some((u) => u.plugin === plugin)) throw invalid(`/plugins/${i} ${entry.id} is given twice`)
    const { id: _id, enabled: _enabled, ...rest } = entry
    const parsed = plugin.parameters.safeParse(rest)
    if (!parsed.success) throw invalid(`/plugins/${i} ${entry.id}: ${describeIssues(parsed.error)}`)
    uses.push({ plugin, parameters: parsed.data })
  }
  return uses
}
