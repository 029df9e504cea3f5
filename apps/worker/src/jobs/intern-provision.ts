import { UnrecoverableError } from 'bullmq'
import { apiKeyParts, inGroup, generateApiKey, isUniqueViolation, inSpan, type JobPayload } from '@roster/shared'
import { fleetTimes, neverReachedHost, unplaceFromUnreachableHost, RuntimeUnavailableError } from '@roster/shared/fleet'
import {
  insertInternKey,
  internStatus,
  fleetSize,
  placeIntern,
  type PlacedOn,
  type TransitionChange,
  type TransitionedIntern,
} from '@roster/shared/repositories'
import type { JobContext, WorkerDeps } from '../context.js'

/**
 * The intern's own API key (kind `intern`), kept in its private vault as Roster's own secret: the
 * credential its runtime calls Roster with (its model turns, its own vault). Earlier builds kept a
 * random `runtime_token` there instead, which no route accepts; a provisioning now makes the key.
 */
export const RUNTIME_TOKEN_SECRET = 'intern_api_key'

/** What one run carries from step to step. */
interface Run {
  deps: WorkerDeps
  ctx: JobContext
  intern: TransitionedIntern
  generation: number
  /** The runtime's credential, read (or first stored) by the vault step. */
  token?: string
  /** Where the intern is placed (the placement step). */
  placed?: PlacedOn
}

/** How long a run waits before it looks for room again when every runtime host is full. */
const NO_ROOM_RETRY_MS = 2_000
const NO_ROOM_LABEL = 'Waiting for a runtime host with room'

interface Step {
  label: string
  /** Its name in metrics (a short, fixed word). */
  metric: string
  /** Extra changes written with this step's progress, in the same guarded update. */
  alongProgress?(run: Run, attempt: number): TransitionChange
  /** Each step is idempotent: it checks what is already done and does only the rest. */
  run(run: Run): Promise<void>
}

/** Deterministic hostname candidates: a retry asks for the same name; a clash moves to a longer one. */
function hostnameCandidate(run: Run, clash: number): string {
  const compact = run.intern.id.replaceAll('-', '')
  const suffix = compact.slice(0, [8, 16, 32][Math.min(clash, 2)])
  return `${run.intern.name}-${suffix}.${run.deps.config.INTERNS_DOMAIN}`
}

export const provisionSteps: readonly Step[] = [
  {
    label: 'Preparing the vault',
    metric: 'vault',
    async run(run) {
      if (!run.intern.vault_id) throw new UnrecoverableError('the intern has no private vault')
      run.token = await run.deps.vault.ensureSecret(
        run.deps.db,
        run.intern.vault_id,
        RUNTIME_TOKEN_SECRET,
        () => generateApiKey().plaintext,
      )
      await insertInternKey(run.deps.db, run.intern.id, apiKeyParts(run.token))
    },
  },
  {
    label: 'Reserving a hostname',
    metric: 'hostname',
    // The reservation is written with the step's progress; the unique index decides clashes.
    alongProgress: (run, clash) => ({ reserveHostname: hostnameCandidate(run, clash) }),
    async run(run) {
      if (!run.intern.hostname) throw new Error('no hostname was reserved')
    },
  },
  {
    // One step (one progress write per intern): the placement, then the configuration on that host.
    label: 'Placing the intern on a runtime host and writing its configuration',
    metric: 'configure',
    async run(run) {
      const { deps, intern, token, generation } = run
      const placed = (run.placed = await placeIntern(deps.db, intern.id, generation, fleetTimes(deps.config)))
      if (!placed) return waitForRoom(run)
      await elsewhereIfUnreachable(run, () =>
        deps.runtime.configure(placed, intern.id, {
          hostname: intern.hostname!,
          name: intern.name,
          instructions: intern.instructions,
          model: intern.model,
          token: token!,
          generation,
          // The host restores this snapshot first (none: a new intern, nothing to ask for).
          snapshot: placed.snapshot ?? null,
        }),
      )
    },
  },
  {
    label: 'Starting the runtime',
    metric: 'start',
    async run(run) {
      await elsewhereIfUnreachable(run, () => run.deps.runtime.start(run.placed!, run.intern.id))
    },
  },
  {
    label: 'Checking the runtime health',
    metric: 'health',
    async run({ deps, intern, placed }) {
      const deadline = Date.now() + deps.config.HEALTH_TIMEOUT_MS
      for (let wait = 5; ; wait = Math.min(wait * 2, 500)) {
        if (await deps.runtime.healthy(placed!, intern.hostname!)) return
        if (Date.now() + wait > deadline) {
          throw new RuntimeUnavailableError(
            `the runtime did not report healthy within ${deps.config.HEALTH_TIMEOUT_MS} ms`,
          )
        }
        await new Promise((r) => setTimeout(r, wait))
      }
    },
  },
]

/**
 * Every live host is full (or none has joined): the intern waits, saying so, and goes on by itself
 * when room appears. Not a failure: no attempt is counted.
 */
async function waitForRoom(run: Run): Promise<never> {
  const { deps, intern, generation } = run
  const { live, total } = await fleetSize(deps.db, deps.config.FLEET_DEAD_AFTER_MS)
  const why = live
    ? `every live runtime host is full (${live} host(s))`
    : total
      ? `no live runtime host (${total} known, none beating)`
      : 'no runtime host has joined the fleet'
  const step = provisionSteps.findIndex((s) => s.metric === 'configure') + 1
  await deps.transitions.run({
    internId: intern.id,
    generation,
    from: ['provisioning'],
    to: 'provisioning',
    set: {
      progress: { step_label: `${NO_ROOM_LABEL}: ${why}`, step_number: step, total_steps: provisionSteps.length },
    },
  })
  return run.ctx.retryLater(NO_ROOM_RETRY_MS)
}

/**
 * A host that cannot even be connected to is no place for the intern: the placement is taken back,
 * so the next attempt places it anew. One that has also stopped beating has most likely died
 * without yet being declared dead: the run tries again shortly without counting an attempt (the
 * next placement skips it). One that still beats (a wrong RUNTIME_ADVERTISE_URL, a partition between
 * the workers and it) counts the attempt, so a run that can never reach it ends `failed`, saying so.
 */
async function elsewhereIfUnreachable(run: Run, call: () => Promise<unknown>) {
  try {
    await call()
  } catch (err) {
    if (!neverReachedHost(err)) throw err
    const { deps, intern, placed } = run
    if (!(await unplaceFromUnreachableHost(deps.db, intern.id, placed!, 2 * deps.config.FLEET_HEARTBEAT_MS))) throw err
    run.ctx.log.warn(
      { internId: intern.id, host: placed!.hostId },
      'the runtime host the intern was placed on cannot be reached and has stopped beating: placing it again',
    )
    return run.ctx.retryLater(UNREACHABLE_RETRY_MS)
  }
}
/** How long a run waits before placing again an intern whose host could not be reached. */
const UNREACHABLE_RETRY_MS = 1_000

export type ProvisionOutcome = 'running' | 'obsolete' | 'failed'

/**
 * One provisioning run. Progress is recorded before each step through the state machine, guarded
 * by status and generation: if the intern was suspended, deleted or re-provisioned meanwhile, the
 * guard fails and this run stops without touching it. Each progress update also returns the
 * intern, so the run needs no separate reads.
 */
export async function handle(
  deps: WorkerDeps,
  payload: JobPayload<'intern.provision'>,
  ctx: JobContext,
): Promise<ProvisionOutcome> {
  const { internId, generation } = payload
  const total = provisionSteps.length
  let run: Run | undefined

  for (const [index, step] of provisionSteps.entries()) {
    const progress = { step_label: step.label, step_number: index + 1, total_steps: total }
    const current = await recordProgress(deps, { internId, generation }, progress, (clash) =>
      run ? (step.alongProgress?.(run, clash) ?? {}) : {},
    )
    if (!current) return stale(deps, internId, index, ctx)
    run = { ...run, deps, ctx, generation, intern: current }
    const started = performance.now()
    const timed = (outcome: 'ok' | 'error') =>
      deps.metrics?.provisioningSteps.observe({ step: step.metric, outcome }, (performance.now() - started) / 1000)
    try {
      const current = run
      await inSpan(
        `provision step ${step.metric}`,
        { attributes: { 'roster.intern.step': step.label, 'roster.intern.step_number': index + 1 } },
        () => step.run(current),
      )
      timed('ok')
    } catch (err) {
      timed('error')
      const final = ctx.finalAttempt || err instanceof UnrecoverableError
      if (final) {
        const reason = err instanceof Error ? err.message : String(err)
        await deps.transitions.run({
          internId,
          generation,
          from: ['provisioning'],
          to: 'failed',
          set: {
            progress: null,
            lastFailureMessage: `Provisioning failed at step ${index + 1} of ${total} (${step.label}) after ${ctx.attempt} attempt(s): ${reason}`,
          },
        })
        ctx.log.warn({ internId, step: step.label, err }, 'provisioning failed for good')
        if (!(err instanceof UnrecoverableError)) throw new UnrecoverableError(reason)
      }
      throw err
    }
  }
  const done = await deps.transitions.run({
    internId,
    generation,
    from: ['provisioning'],
    to: 'running',
    set: { progress: null, lastFailureMessage: null },
  })
  return done ? 'running' : stale(deps, internId, provisionSteps.length, ctx)
}

/** The steps done once the runtime has been started (found by name: the steps' count has changed before). */
const STARTED_AFTER = provisionSteps.findIndex((s) => s.metric === 'start') + 1

/**
 * This run lost its intern to a newer request (suspend, delete, another provision). If it may have
 * started the runtime (this attempt got past the start step, or an earlier attempt of the run,
 * which failed after it, may have) and the intern is now meant to be stopped, stop it again: the
 * suspend's own job may have run before the start. A stop of a runtime never started is a no-op.
 */
async function stale(
  deps: WorkerDeps,
  internId: string,
  stepsDone: number,
  ctx: JobContext,
): Promise<ProvisionOutcome> {
  if (stepsDone >= STARTED_AFTER || ctx.attempt > 1) {
    const now = await internStatus(deps.db, internId)
    const at = await deps.runtime.placement(internId)
    if (now && inGroup('atRest', now) && at)
      await deps.runtime.stop(at, internId).catch((err: Error) =>
        // The reconciler's sweep stops it later (a runtime running for an intern meant stopped).
        ctx.log.warn({ internId, err: err.message }, 'a run that lost its intern could not stop its runtime'),
      )
  }
  return 'obsolete'
}

/** The guarded progress update, retried with the next hostname candidate if the reservation clashes. */
async function recordProgress(
  deps: WorkerDeps,
  { internId, generation }: { internId: string; generation: number },
  progress: { step_label: string; step_number: number; total_steps: number },
  extra: (clash: number) => TransitionChange,
): Promise<TransitionedIntern | null> {
  for (let clash = 0; ; clash++) {
    try {
      return await deps.transitions.run({
        internId,
        generation,
        from: ['queued', 'provisioning'],
        to: 'provisioning',
        set: { progress, ...extra(clash) },
      })
    } catch (err) {
      if (!isUniqueViolation(err) || clash >= 2) throw err
    }
  }
}
