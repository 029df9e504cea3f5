import { jsonrepair } from 'jsonrepair'
import { z } from 'zod'
import type { Catalogue, CatalogueModel } from '../catalogue.js'
import { GatewayError } from '../errors.js'
import { answersText } from '../model-directory.js'
import type { Consulted, ServerTool, ServerToolKind, ToolCallContext } from './tool.js'

// `openrouter:fusion`: a panel of models answers the question in parallel (each with web search and
// fetch unless told otherwise), then an analyst model (the caller's, unless named) compares their
// answers as structured JSON: consensus, contradictions, partial coverage, unique insights, blind
// spots. The calling model writes the final answer from that. Every panel and analyst call goes
// through the engine as a consultation: generations of the request, cost in the request's. On a
// streamed Open Responses answer the run shows as the official client's `response.fusion_call.*`
// events. The fusion plugin and the `openrouter/fusion` model run the same pipeline (plugins/fusion.ts).

const MAX_PANEL = 8
/** Steps of each panelist's and the analyst's own tool loop (OpenRouter's default). */
const DEFAULT_STEPS = 4
const DEFAULT_MAX_TOKENS = 16_000

const ToolEntry = z.looseObject({
  type: z
    .string()
    .startsWith('openrouter:', 'is an openrouter: server tool')
    .refine((t) => t !== 'openrouter:fusion', 'must not be openrouter:fusion itself (fusion does not recurse)'),
  parameters: z.record(z.string(), z.unknown()).optional(),
})

/** The panels OpenRouter's presets name, as this Roster's catalogue fills them (see presetPanel). */
export const FUSION_PRESETS = ['general-high', 'general-budget', 'general-fast'] as const

export const FusionParameters = z.object({
  analysis_models: z.array(z.string().min(1).max(200)).min(1).max(MAX_PANEL).optional(),
  model: z.string().min(1).max(200).optional(),
  preset: z.enum(FUSION_PRESETS).optional(),
  max_tool_calls: z.int().min(1).max(16).optional(),
  max_completion_tokens: z.int().min(1).max(1_000_000).optional(),
  temperature: z.number().min(0).max(2).optional(),
  reasoning: z
    .object({ effort: z.string().max(16).optional(), max_tokens: z.int().min(0).max(1_000_000).optional() })
    .optional(),
  tools: z.array(ToolEntry).max(16).optional(),
  cache_control: z.unknown().optional(),
})
export type FusionParameters = z.infer<typeof FusionParameters>

/** The analyst's answer, as the official client's `FusionAnalysisResult` reads it. */
const Analysis = z.object({
  consensus: z.array(z.string()).default([]),
  contradictions: z
    .array(
      z.object({
        topic: z.string(),
        stances: z.array(z.object({ model: z.string(), stance: z.string() })).default([]),
      }),
    )
    .default([]),
  partial_coverage: z.array(z.object({ point: z.string(), models: z.array(z.string()).default([]) })).default([]),
  unique_insights: z.array(z.object({ model: z.string(), insight: z.string() })).default([]),
  blind_spots: z.array(z.string()).default([]),
})
export type FusionAnalysis = z.infer<typeof Analysis>

const ANALYST_INSTRUCTIONS = `You compare the answers a panel of models gave to one question. Reply with one JSON object and nothing else, of this shape:
{"consensus": [string], "contradictions": [{"topic": string, "stances": [{"model": string, "stance": string}]}], "partial_coverage": [{"point": string, "models": [string]}], "unique_insights": [{"model": string, "insight": string}], "blind_spots": [string]}
consensus: points every answer agrees on. contradictions: where answers disagree, each model's stance. partial_coverage: points only some answers make. unique_insights: a point one answer alone makes. blind_spots: what none of them addressed that matters. Name models exactly as given.`

/** What a run of the pipeline came to: the tool's result, as the model and the item read it. */
export interface FusionResult {
  status: 'ok' | 'error'
  analysis?: FusionAnalysis
  responses?: { model: string; content: string }[]
  failed_models?: { model: string; error: string; status_code?: number }[]
  sources?: { url: string; title: string }[]
  error?: string
  failure_reason?: string
}

/** A run's panel: the models named, else the preset's, else the catalogue's best three. */
export function panelOf(p: FusionParameters, catalogue: Catalogue): string[] {
  if (p.analysis_models?.length) return p.analysis_models
  return presetPanel(catalogue, p.preset ?? 'general-high', (p.tools?.length ?? 2) > 0)
}

/**
 * A preset's panel over this Roster's catalogue (OpenRouter's presets name its own frontier models):
 * `general-high` the three best (the catalogue's order, best first), `general-budget` the three
 * cheapest, `general-fast` the three cheapest that do not reason first. Models able to use tools
 * when the panel is given any.
 */
export function presetPanel(catalogue: Catalogue, preset: (typeof FUSION_PRESETS)[number], tools: boolean): string[] {
  const able = catalogue.models.filter((m) => answersText(m) && (!tools || m.capabilities.tools))
  const price = (m: CatalogueModel) => Number(m.pricing.input) + Number(m.pricing.output)
  const chosen =
    preset === 'general-high'
      ? able
      : [...(preset === 'general-fast' ? able.filter((m) => !m.capabilities.reasoning) : able)].sort(
          (a, b) => price(a) - price(b),
        )
  return (chosen.length ? chosen : able).slice(0, 3).map((m) => m.id)
}

const DEFAULT_TOOLS = [{ type: 'openrouter:web_search' }, { type: 'openrouter:web_fetch' }]

/** Why a call failed, as the item's failure codes name it, from an HTTP status. */
function reasonOf(status: number | undefined): string {
  if (status === 402) return 'insufficient_credits'
  if (status === 429) return 'rate_limited'
  if (status === 400 || status === 404) return 'invalid_model'
  return 'all_panels_failed'
}

const statusOf = (err: unknown) => (err instanceof GatewayError ? err.status : undefined)

/** The analyst's reply read as the analysis (repaired where it is almost JSON), or undefined. */
export function readAnalysis(text: string): FusionAnalysis | undefined {
  const start = text.indexOf('{')
  const end = text.lastIndexOf('}')
  if (start < 0 || end <= start) return undefined
  try {
    const parsed = Analysis.safeParse(JSON.parse(jsonrepair(text.slice(start, end + 1))))
    return parsed.success ? parsed.data : undefined
  } catch {
    return undefined
  }
}

/**
 * Runs the pipeline for `prompt`: the panel in parallel, then the analyst over the answers that
 * came. Never throws for a model's failure: the result says what failed (a panel that partly failed
 * still answers; an analyst that failed leaves the panel's answers without an analysis).
 */
export async function runFusion(
  p: FusionParameters,
  prompt: string,
  panel: string[],
  ctx: ToolCallContext,
): Promise<FusionResult> {
  if (!ctx.consult) return { status: 'error', error: 'no model can be consulted here', failure_reason: 'cancelled' }
  const consult = ctx.consult
  const show = ctx.progress ?? (() => {})
  const tools = p.tools ?? DEFAULT_TOOLS
  const common = {
    max_output_tokens: p.max_completion_tokens ?? DEFAULT_MAX_TOKENS,
    ...(p.reasoning ? { reasoning: p.reasoning } : {}),
    ...(tools.length ? { tools, defaultTools: !p.tools, max_tool_calls: p.max_tool_calls ?? DEFAULT_STEPS } : {}),
  }
  show('response.fusion_call.in_progress')
  const settled = await Promise.allSettled(
    panel.map(async (model) => {
      show('response.fusion_call.panel.added', { model })
      try {
        const answer = await consult({
          ...common,
          model,
          prompt,
          ...(p.temperature !== undefined ? { temperature: p.temperature } : {}),
          onText: (delta) => show('response.fusion_call.panel.delta', { model, delta }),
          onReasoning: (delta) => show('response.fusion_call.panel.reasoning.delta', { model, delta }),
        })
        if (!answer.text.trim()) throw new Error('the model answered nothing')
        show('response.fusion_call.panel.completed', { model, content: answer.text })
        return answer
      } catch (err) {
        const status = statusOf(err)
        show('response.fusion_call.panel.failed', {
          model,
          error: (err as Error).message,
          ...(status ? { status_code: status } : {}),
        })
        throw err
      }
    }),
  )
  const answers: (Consulted & { asked: string })[] = []
  const failed: NonNullable<FusionResult['failed_models']> = []
  settled.forEach((s, i) => {
    if (s.status === 'fulfilled') answers.push({ ...s.value, asked: panel[i]! })
    else {
      const status = statusOf(s.reason)
      failed.push({ model: panel[i]!, error: (s.reason as Error).message, ...(status ? { status_code: status } : {}) })
    }
  })
  const sources = new Map<string, string>()
  const cite = (a: Consulted) => a.sources?.forEach((s) => sources.has(s.url) || sources.set(s.url, s.title))
  answers.forEach(cite)
  const sourcesField = () => (sources.size ? { sources: [...sources].map(([url, title]) => ({ url, title })) } : {})
  if (!answers.length) {
    show('response.fusion_call.completed')
    const statuses = new Set(failed.map((f) => f.status_code))
    return {
      status: 'error',
      error: 'every model of the panel failed',
      failure_reason: statuses.size === 1 ? reasonOf([...statuses][0]) : 'all_panels_failed',
      failed_models: failed,
    }
  }
  const responses = answers.map((a) => ({ model: a.asked, content: a.text }))
  const analyst = p.model ?? ctx.model ?? ''
  show('response.fusion_call.analysis.in_progress', { analyst_model: analyst, judge_model: analyst })
  let analysis: FusionAnalysis | undefined
  try {
    const judged = await consult({
      ...common,
      ...(p.model ? { model: p.model } : {}),
      temperature: 0,
      instructions: ANALYST_INSTRUCTIONS,
      prompt: `The question:\n${prompt}\n\n${responses.map((r) => `Answer of ${r.model}:\n${r.content}`).join('\n\n')}`,
    })
    cite(judged)
    analysis = readAnalysis(judged.text)
  } catch {
    // The analyst failed: the panel's answers still serve (OpenRouter's judge degradation).
  }
  if (analysis) show('response.fusion_call.analysis.completed', { analysis })
  show('response.fusion_call.completed')
  return {
    status: 'ok',
    ...(analysis ? { analysis } : {}),
    responses,
    ...(failed.length ? { failed_models: failed } : {}),
    ...sourcesField(),
  }
}

/** The item's documented fields from a run's result. */
export function fusionItemFields(result: FusionResult): Record<string, unknown> {
  return {
    ...(result.analysis ? { analysis: result.analysis } : {}),
    ...(result.responses ? { responses: result.responses } : {}),
    ...(result.failed_models ? { failed_models: result.failed_models } : {}),
    ...(result.sources ? { sources: result.sources } : {}),
    ...(result.error ? { error: result.error } : {}),
    ...(result.failure_reason ? { failure_reason: result.failure_reason } : {}),
  }
}

export const fusion: ServerToolKind<FusionParameters> = {
  type: 'openrouter:fusion',
  parameters: FusionParameters,
  offer(p, ctx): ServerTool {
    const panel = panelOf(p, ctx.catalogue)
    return {
      type: 'openrouter:fusion',
      definition: {
        name: 'fusion',
        description:
          'Asks a panel of models the question in parallel, and returns an analysis of their answers (consensus, contradictions, unique insights, blind spots) with the answers themselves. Call it only when the task benefits from several perspectives: research, critique across fields, compare-and-contrast, or where being wrong is expensive; not for simple requests.',
        parameters: {
          type: 'object',
          properties: {
            prompt: { type: 'string', description: 'The question for the panel, with everything it needs to know' },
          },
          required: ['prompt'],
          additionalProperties: false,
        },
      },
      run: (args, ctx) => {
        const prompt = typeof args.prompt === 'string' ? args.prompt.trim() : ''
        if (!prompt)
          return Promise.resolve({ status: 'error', error: 'prompt is empty', failure_reason: 'invalid_request' })
        return runFusion(p, prompt, panel, ctx)
      },
      itemFields: (_args, output) => fusionItemFields(output as FusionResult),
    }
  },
}
