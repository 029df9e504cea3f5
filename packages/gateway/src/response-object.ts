import { echoSettings, servedTier } from './echo.js'
import type { Run } from './run.js'
import { isByok } from './byok.js'
import { isProviderItem, type OutputItem, type ResponseObject } from './wire.js'

// The Response object of a run, as it stands (in progress) or as it ended: every key
// ResponseResource requires, null only where it allows null.

/**
 * On a finished Response, where the door answers its provider's own reply (pass-through): the text it
 * answers. A symbol, so no serialization of the Response carries it.
 */
export const PROVIDER_REPLY: unique symbol = Symbol('roster.providerReply')
export type WithProviderReply = ResponseObject & { [PROVIDER_REPLY]?: string }

/** The Response object: every key ResponseResource requires, null only where it allows null. */
export function responseObject(
  run: Run,
  status: 'in_progress' | 'completed' | 'incomplete' | 'failed',
): ResponseObject {
  const { req, assembler } = run
  const done = status !== 'in_progress'
  const c = run.route.candidates[run.chosen]!
  let text = ''
  if (done)
    for (const o of assembler.output)
      if (!isProviderItem(o) && o.type === 'message')
        for (const p of o.content) if (p.type === 'output_text') text += p.text
  const body: ResponseObject = {
    id: run.id,
    object: 'response',
    created_at: run.createdAt,
    completed_at: done ? Math.floor(Date.now() / 1000) : null,
    model: c.model.id,
    status,
    output: done ? (assembler.output as OutputItem[]) : [],
    output_text: text,
    error: null,
    incomplete_details:
      status === 'incomplete'
        ? { reason: assembler.finish === 'length' ? 'max_output_tokens' : 'content_filter' }
        : null,
    usage: done ? usageReport(run, isByok(c.endpoint)) : null,
  }
  echoSettings(req, servedTier(req.service_tier, c.endpoint.tiers), body)
  const m = run.opts.metadata
  if (m?.service || m?.openrouter) {
    const meta = routingMetadata(run)
    body.service_metadata = meta
    if (m.openrouter) body.openrouter_metadata = meta
  }
  return body
}

/** A finished run's usage, with its cost (worked out only once the run is done: it is not free). */
function usageReport(run: Run, byok: boolean): NonNullable<ResponseObject['usage']> {
  const u = run.assembler.usage
  const cost = dollars(run.cost.input + run.cost.output)
  return {
    input_tokens: u.input,
    input_tokens_details: {
      cached_tokens: u.cached,
      ...(u.cacheWrite ? { cache_write_tokens: u.cacheWrite } : {}),
    },
    output_tokens: u.output,
    output_tokens_details: { reasoning_tokens: u.reasoning },
    total_tokens: u.input + u.output,
    cost,
    is_byok: byok,
    cost_details: {
      upstream_inference_cost: cost,
      upstream_inference_input_cost: dollars(run.cost.input),
      upstream_inference_output_cost: dollars(run.cost.output),
    },
    // Tokens a silent provider did not count were counted by Roster (its generation says so too).
    ...(run.calls.some((c) => c.countedByRoster) ? { tokens_counted_by: 'roster' as const } : {}),
  }
}

function routingMetadata(run: Run): Record<string, unknown> {
  const c = run.route.candidates[run.chosen]!
  return {
    attempt: run.attempts,
    endpoints: {
      available: run.route.candidates.map((k, i) => ({
        model: k.model.id,
        provider: k.endpoint.provider,
        selected: i === run.chosen,
      })),
      total: run.route.candidates.length,
    },
    generation_time: Math.round(performance.now() - run.started),
    is_byok: isByok(c.endpoint),
    region: null,
    requested: run.route.requested,
    strategy: run.route.strategy,
    summary: `${c.endpoint.provider} served ${c.model.id} on attempt ${run.attempts} of ${run.route.candidates.length} endpoint(s) (${run.route.strategy})`,
  }
}

/**
 * A cost in USD as it is reported: tokens times decimal prices leave binary noise
 * (2 × 0.000001 + 5 × 0.000002 is 0.000011999999999999999); twelve significant digits drop
 * it and keep far more precision than any bill needs.
 */
export const dollars = (usd: number) => Number(usd.toPrecision(12))

/** How a run that did not fail ended: cut short by the token limit or a content filter, or complete. */
export const outcome = (run: Run) =>
  run.assembler.finish === 'length' || run.assembler.finish === 'content_filter' ? 'incomplete' : 'completed'
