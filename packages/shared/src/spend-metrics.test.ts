import { describe, expect, it } from 'vitest'
import { createMetrics } from '@roster/platform'
import { spendMetrics } from './spend-metrics.js'
import type { GenerationRecord } from '@roster/protocol'

const record = (id: string, workspace: string | null, cost: string, is_byok = false) =>
  ({
    id,
    workspace_id: workspace,
    model: 'm/one',
    cost_pico: cost,
    is_byok,
    tokens_prompt: 10,
    tokens_cached: 4,
    tokens_completion: 7,
    tokens_reasoning: 0,
  }) as GenerationRecord

describe('spendMetrics', () => {
  it('names the first workspaces it sees and counts the rest as other, so the series stay bounded', async () => {
    const metrics = createMetrics('worker')
    const count = spendMetrics(metrics, 2)
    count([record('a', 'w1', '1500000000000'), record('b', 'w2', '250000000000'), record('c', 'w3', '1000000000000')])
    count([record('d', 'w1', '500000000000', true), record('e', 'w4', '1000000000000'), record('f', null, '1')])
    const cost = (await metrics.spendCost.get()).values.map((v) => [v.labels.workspace, v.labels.byok, v.value])
    expect(cost).toEqual([
      ['w1', 'false', 1.5],
      ['w2', 'false', 0.25],
      ['other', 'false', 2],
      ['w1', 'true', 0.5],
      ['none', 'false', 1e-12],
    ])
    const tokens = (await metrics.spendTokens.get()).values.filter((v) => v.labels.workspace === 'other')
    expect(tokens.map((v) => [v.labels.kind, v.value])).toEqual([
      ['input', 20],
      ['cached_input', 8],
      ['output', 14],
    ])
  })
})
