import type { z } from 'zod'
import { FusionParameters, panelOf, type FusionResult } from '../server-tools/index.js'
import type { ResponsesRequest } from '../request.js'
import type { Plugin, PluginEngine } from './plugin.js'
import { catalogueIdOf } from '../catalogue.js'
import { latestUserText } from './web.js'
import { readParameters } from '../server-tools/index.js'

// The `fusion` plugin, and the `openrouter/fusion` model: the `openrouter:fusion` pipeline
// (server-tools/fusion.ts) offered to the model as its tool, configured by the plugin's fields, or,
// for a request to `openrouter/fusion`, run on the user's latest message before the first turn, its
// item shown, and the answer written from it by the plugin's `model` (else the panel's first).

/** The model name that runs fusion on every request. */
export const FUSION_MODEL = 'openrouter/fusion'

const Parameters = FusionParameters.pick({
  analysis_models: true,
  model: true,
  preset: true,
  max_tool_calls: true,
  tools: true,
})
/** The entry's fields, and whether the request named `openrouter/fusion` (set as it is prepared). */
type Parameters = z.infer<typeof Parameters> & { always?: boolean }

/** A request to `openrouter/fusion` always has the plugin (its defaults, where the entry is absent or disabled). */
export function withFusionPlugin(req: ResponsesRequest): ResponsesRequest {
  if (req.model !== FUSION_MODEL) return req
  const entries = req.plugins ?? []
  if (entries.some((p) => p.id === 'fusion' && p.enabled !== false)) return req
  return { ...req, plugins: [...entries.filter((p) => p.id !== 'fusion'), { id: 'fusion' }] }
}

const toolEntry = (p: Parameters): NonNullable<ResponsesRequest['tools']>[number] => {
  const { always: _always, ...parameters } = p
  return { type: 'openrouter:fusion', parameters }
}

/** The entry's fields as the tool reads them (a 400 naming the plugin where they do not). */
const fusionParameters = (engine: PluginEngine, p: Parameters): FusionParameters =>
  readParameters(
    engine.serverTools.get('openrouter:fusion')!,
    toolEntry(p).parameters,
    '/plugins fusion',
  ) as FusionParameters

export const fusionPlugin: Plugin<Parameters> = {
  id: 'fusion',
  parameters: Parameters,
  prepare(req, p, engine) {
    const parameters = fusionParameters(engine, p)
    if (req.model === FUSION_MODEL) {
      p.always = true
      const model = p.model ?? panelOf(parameters, engine.catalogue)[0]
      return { ...req, model: model ? (catalogueIdOf(engine.catalogue, 'openai', model) ?? model) : req.model }
    }
    // The model decides when to call it, as with the tool offered by the request itself.
    if (req.tools?.some((t) => t.type === 'openrouter:fusion')) return req
    return { ...req, tools: [...(req.tools ?? []), toolEntry(p)] }
  },
  async before(run, p, engine) {
    if (!p.always) return []
    const prompt = latestUserText(run.req).trim()
    if (!prompt) return []
    const tool = engine.serverTools.get('openrouter:fusion')!.offer(fusionParameters(engine, p), engine)
    const result = (await run.runTool(tool, { prompt })).output as FusionResult
    // A pipeline that came to nothing leaves the model to answer alone, as the tool's caller would.
    if (result.status !== 'ok') return []
    const { analysis, responses, sources } = result
    return [
      {
        role: 'developer',
        content: `A panel of models answered the user's latest message, and an analyst compared their answers. Write the final answer from them: build on the consensus, settle or explain the contradictions, keep the unique insights that hold, and mind the blind spots.\n\n${JSON.stringify({ analysis, responses, sources })}`,
      },
    ]
  },
}
