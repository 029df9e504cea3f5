import { createHash } from 'node:crypto'
import type { Queue } from 'bullmq'

import type { GenerationRecord } from '@roster/protocol'

import { type DestinationRow } from './repositories/observability-destinations.js'

import { type FILTER_OPERATORS, type FilterField, type FilterRules } from './observability.js'

// What an observability destination takes of the generations (its keys, sampling and filter rules),
// and its failed deliveries sent again.

/** Whether a destination takes a generation: its workspace, its keys, its sample, its filter rules. */
export function destinationTakes(d: DestinationRow, r: GenerationRecord): boolean {
  if (r.workspace_id !== d.workspace_id) return false
  if (d.api_key_ids && (!r.key_id || !d.api_key_ids.includes(r.key_id))) return false
  // Decided by the generation's id, so a retried delivery samples the same.
  if (d.sampling_rate < 1 && sampleOf(d.id, r.id) >= d.sampling_rate) return false
  return passesRules(d.filter_rules as FilterRules | undefined, r)
}

const sampleOf = (destinationId: string, generationId: string) =>
  createHash('sha256').update(`${destinationId}/${generationId}`).digest().readUInt32BE(0) / 2 ** 32

function fieldOf(r: GenerationRecord, field: FilterField): string | number | boolean | null {
  if (field === 'total_cost') return Number(r.cost_pico) / 1e12
  return (r as unknown as Record<string, string | number | boolean | null>)[field] ?? null
}

function passesRules(rules: FilterRules | undefined, r: GenerationRecord): boolean {
  if (!rules || rules.enabled === false || !rules.groups.length) return true
  return rules.groups.some((g) => {
    const results = g.rules.map((rule) => holds(fieldOf(r, rule.field as FilterField), rule.operator, rule.value))
    return (g.logic ?? 'and') === 'and' ? results.every(Boolean) : results.some(Boolean)
  })
}

function holds(
  v: string | number | boolean | null,
  op: (typeof FILTER_OPERATORS)[number],
  want: string | number | undefined,
) {
  if (op === 'exists') return v !== null && v !== ''
  if (op === 'not_exists') return v === null || v === ''
  if (v === null) return op === 'neq' || op === 'not_contains'
  const s = String(v)
  switch (op) {
    case 'eq':
      return s === String(want)
    case 'neq':
      return s !== String(want)
    case 'contains':
      return s.includes(String(want))
    case 'not_contains':
      return !s.includes(String(want))
    case 'starts_with':
      return s.startsWith(String(want))
    case 'gt':
      return Number(v) > Number(want)
    case 'gte':
      return Number(v) >= Number(want)
    case 'lt':
      return Number(v) < Number(want)
    case 'lte':
      return Number(v) <= Number(want)
  }
}

/**
 * Failed deliveries of a destination go again (it came back, or was updated). The API (an update)
 * and the worker (a delivery that got through) may both do it at once: a job another already sent
 * again is no longer failed, and BullMQ refuses its retry; that one is done, not an error.
 */
export async function retryFailedDeliveries(queue: Queue, destinationId: string) {
  const failed = await queue.getFailed(0, 100_000)
  await Promise.all(
    failed
      .filter((j) => (j.data as { destinationId?: string }).destinationId === destinationId)
      .map((j) =>
        j.retry().catch(async (err: unknown) => {
          if (await j.isFailed()) throw err
        }),
      ),
  )
}
