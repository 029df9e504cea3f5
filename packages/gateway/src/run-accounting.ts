import { GatewayError, gatewayError } from './errors.js'
import { generationRecords } from './generation-records.js'
import type { GenerationLedger } from '@roster/protocol'
import type { GatewayObserver } from './observer.js'
import type { Run, Timing } from './run.js'
import type { Candidate } from './routing.js'
import type { Usage } from './deltas.js'

// What a finished run leaves behind: its generations in the ledger (before its reply ends), and
// its request reported to the observer (metrics and traces).

/**
 * Appends the run's generations to the ledger, before its reply ends. A reply that would go out
 * unaccounted fails instead (`mustRecord`); a run that failed anyway keeps its own error.
 */
export async function recordRun(ledger: GenerationLedger | undefined, run: Run, mustRecord: boolean, err?: unknown) {
  if (!ledger || run.calls.length === 0) return
  const records = generationRecords(run, err)
  try {
    await ledger.append(records, run.opts.generation?.limits)
  } catch (err) {
    if (mustRecord)
      // The ledger logged what failed; the client hears only that the reply was not accounted.
      throw gatewayError(
        'server',
        'the reply could not be accounted (neither Redis nor Postgres took its record); send the request again',
      )
  }
}

/** Reports a finished request to the observer (when there is one). */
export function observeRun(observer: GatewayObserver | undefined, run: Run, err?: unknown) {
  if (!observer) return
  const c = run.route.candidates[run.chosen]
  const outcome = run.opts.cancel?.aborted
    ? 'cancelled'
    : err === undefined
      ? 'ok'
      : err instanceof GatewayError
        ? err.errorType
        : 'server'
  observer.request({
    model: c?.model.id ?? '(none)',
    provider: c?.endpoint.provider ?? '(none)',
    door: run.opts.door ?? 'responses',
    outcome,
    fallbacks: Math.max(0, run.attempts - 1),
    usage: run.assembler.usage,
    cost: run.cost.input + run.cost.output,
  })
}

/** Records a model call that reached its provider, with the attempts that failed before it. */
export function modelCall(
  run: Run,
  candidate: Candidate,
  timing: Timing,
  sentAt: number,
  usage: Usage,
  finish: string | null,
  cancelled: boolean,
  countedByRoster = false,
) {
  const now = performance.now()
  const totalMs = now - timing.sent
  run.tried.push({
    provider_name: candidate.endpoint.provider,
    status: cancelled ? null : 200,
    latency: Math.round(totalMs),
  })
  run.calls.push({
    candidate,
    usage: { ...usage },
    finish,
    sentAt,
    firstByteMs: timing.firstByte,
    totalMs,
    endedAfterMs: now - run.started,
    cancelled,
    ...(countedByRoster ? { countedByRoster: true as const } : {}),
    tried: run.tried.splice(0),
  })
}
