import { costPico, type GenerationRecord } from '@roster/shared/generations'
import type { Run } from './run.js'

// What the ledger records of a run: one generation per model call that reached a provider. The
// first takes the response's id (the id the client got, which getGeneration answers for); a run
// with server tools makes more, numbered after it, all with the response's id as their request_id.

export function generationRecords(run: Run): GenerationRecord[] {
  const ctx = run.opts.generation
  if (!ctx) return []
  return run.calls.map((call, i) => {
    const { candidate: c, usage } = call
    const prices = c.endpoint.pricing ?? c.model.pricing
    return {
      id: i === 0 ? run.id : `${run.id}-${i + 1}`,
      request_id: run.id,
      created_at: new Date(call.sentAt).toISOString(),
      key_id: ctx.keyId,
      workspace_id: ctx.workspaceId,
      account_id: ctx.accountId,
      user_id: ctx.userId,
      intern_id: ctx.internId,
      model: c.model.id,
      provider: c.endpoint.provider,
      upstream_model: c.endpoint.upstream_model,
      door: run.opts.door ?? 'responses',
      tokens_prompt: usage.input,
      tokens_completion: usage.output,
      tokens_reasoning: usage.reasoning,
      tokens_cached: usage.cached,
      cost_pico: costPico(prices, usage).toString(),
      is_byok: false,
      latency_ms: Math.round(call.endedAfterMs),
      generation_time_ms: Math.round(call.totalMs - (call.firstByteMs ?? 0)),
      ttft_ms: call.firstByteMs === undefined ? null : Math.round(call.firstByteMs),
      streamed: !!run.live,
      cancelled: call.cancelled,
      finish_reason: call.finish,
      upstream_id: null,
      session_id: ctx.sessionId,
      http_referer: ctx.httpReferer,
      app_title: ctx.appTitle,
      user_agent: ctx.userAgent,
      external_user: null,
      preset_id: ctx.presetId,
      provider_responses: call.tried,
    }
  })
}
