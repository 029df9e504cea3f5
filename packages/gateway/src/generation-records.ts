import { redactDeep } from './secret-redaction.js'
import { costPico, type GenerationContentRecord, type GenerationRecord } from '@roster/protocol'
import { GatewayError } from './errors.js'
import type { Run } from './run.js'
import { isByok } from './byok.js'
import { isProviderItem } from './wire.js'

// What the ledger records of a run: one generation per model call that reached a provider (one
// that broke after its provider began answering too). The call that served the reply takes the
// response's id (the id the client got, which getGeneration answers for): the first that did not
// break, else the first; the others are numbered after it, all with the response's id as their
// request_id (a run with server tools makes more than one, as does a fallback after a broken call).

export function generationRecords(run: Run, err?: unknown): GenerationRecord[] {
  const ctx = run.opts.generation
  if (!ctx) return []
  const served = Math.max(
    0,
    run.calls.findIndex((c) => c.finish !== 'error'),
  )
  let next = 2
  const records = run.calls.map((call, i): GenerationRecord => {
    const { candidate: c, usage } = call
    const prices = c.endpoint.pricing ?? c.model.pricing
    return {
      id: i === served ? run.id : `${run.id}-${next++}`,
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
      is_byok: isByok(c.endpoint),
      latency_ms: Math.round(call.endedAfterMs),
      generation_time_ms: Math.round(call.totalMs - (call.firstByteMs ?? 0)),
      ttft_ms: call.firstByteMs === undefined ? null : Math.round(call.firstByteMs),
      streamed: !!run.live,
      cancelled: call.cancelled,
      tokens_counted_by: call.countedByRoster ? 'roster' : 'provider',
      pass_through: i === served && !!run.passedThrough,
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
  // Private logging: the request's content (secrets of known shapes redacted) rides on the record with the response's id (the others share its request_id).
  if (ctx.keepContent && records[served]) records[served].content = redactDeep(contentOf(run, err))
  return records
}

/** What private logging keeps of a request: its input as sent, the output's text, and its error. */
function contentOf(run: Run, err: unknown): GenerationContentRecord {
  const { input, instructions } = run.req
  const texts = (kind: 'message' | 'reasoning') => {
    const parts: string[] = []
    for (const item of run.assembler.output) {
      if (isProviderItem(item)) continue
      if (item.type === 'message' && kind === 'message')
        for (const part of item.content) if (part.type === 'output_text') parts.push(part.text)
      if (item.type === 'reasoning' && kind === 'reasoning') for (const part of item.summary) parts.push(part.text)
    }
    return parts.length ? parts.join('') : null
  }
  const failed = run.calls.flatMap((c) => c.tried).filter((t) => t.status !== 200)
  return {
    input:
      typeof input === 'string' && !instructions
        ? { prompt: input }
        : {
            messages: [
              ...(instructions ? [{ role: 'system', content: instructions }] : []),
              ...(typeof input === 'string' ? [{ role: 'user', content: input }] : (input ?? [])),
            ],
          },
    output: { completion: texts('message'), reasoning: texts('reasoning') },
    error:
      err === undefined
        ? null
        : {
            status: err instanceof GatewayError ? err.status : 500,
            message: err instanceof Error ? err.message : String(err),
            provider_name: run.calls.at(-1)?.candidate.endpoint.provider ?? null,
            raw: null,
            previous_errors: failed.map((t) => ({
              code: t.status ?? 0,
              message:
                t.status === null
                  ? `${t.provider_name} could not be reached`
                  : `${t.provider_name} answered ${t.status}`,
              provider_name: t.provider_name,
              raw: null,
            })),
          },
  }
}
