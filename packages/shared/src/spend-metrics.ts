import type { Metrics } from '@roster/platform'
import type { GenerationRecord } from '@roster/protocol'

/**
 * Counts written generations into the spend metrics: cost and tokens by workspace and model. Called
 * where a record is written to Postgres (the worker's drain, the API's fallback), with the records
 * that statement wrote, so each generation is counted once across all processes. The first
 * `maxWorkspaces` workspaces this process sees are named; the rest share `other`, so the number of
 * series stays bounded whatever the number of workspaces.
 */
export function spendMetrics(metrics: Metrics, maxWorkspaces: number) {
  const named = new Set<string>()
  const label = (workspace: string | null) => {
    if (!workspace) return 'none'
    if (named.has(workspace)) return workspace
    if (named.size >= maxWorkspaces) return 'other'
    named.add(workspace)
    return workspace
  }
  return (written: readonly GenerationRecord[]) => {
    for (const r of written) {
      const workspace = label(r.workspace_id)
      const model = r.model
      // Pico-dollars to dollars: exact enough for a metric (the ledger keeps the exact sum).
      const cost = Number(r.cost_pico) / 1e12
      if (cost > 0) metrics.spendCost.inc({ workspace, model, byok: String(r.is_byok) }, cost)
      // As roster_gateway_tokens_total counts them: input and output include their cached and reasoning parts.
      const tokens = metrics.spendTokens
      if (r.tokens_prompt > 0) tokens.inc({ workspace, model, kind: 'input' }, r.tokens_prompt)
      if (r.tokens_cached > 0) tokens.inc({ workspace, model, kind: 'cached_input' }, r.tokens_cached)
      if (r.tokens_completion > 0) tokens.inc({ workspace, model, kind: 'output' }, r.tokens_completion)
      if (r.tokens_reasoning > 0) tokens.inc({ workspace, model, kind: 'reasoning' }, r.tokens_reasoning)
    }
  }
}

/** What is told of the records a statement wrote (none: nothing to count). */
export type OnWritten = (written: readonly GenerationRecord[]) => void
