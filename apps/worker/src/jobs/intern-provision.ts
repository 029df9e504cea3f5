import { randomBytes } from 'node:crypto'
import { UnrecoverableError } from 'bullmq'
import { isUniqueViolation, Jobs, RuntimeUnavailableError, transition, type JobPayload } from '@roster/shared'
import type { JobContext, WorkerDeps } from '../context.js'

type Intern = NonNullable<Awaited<ReturnType<WorkerDeps['db']['intern']['findUnique']>>>

interface Step {
  label: string
  /** Each step is idempotent: it checks what is already done and does only the rest. */
  run(deps: WorkerDeps, intern: Intern, ctx: JobContext): Promise<Intern>
}

export const RUNTIME_TOKEN_SECRET = 'runtime_token'

export const provisionSteps: readonly Step[] = [
  {
    label: 'Preparing the vault',
    async run(deps, intern) {
      if (!intern.vaultId) throw new UnrecoverableError('the intern has no private vault')
      await deps.vault.ensureSecret(deps.db, intern.vaultId, RUNTIME_TOKEN_SECRET, () => randomBytes(32).toString('base64url'))
      return intern
    },
  },
  {
    label: 'Reserving a hostname',
    async run(deps, intern) {
      if (intern.hostname) return intern
      // Deterministic candidates: a retry reserves the same name, and the unique index decides clashes.
      const compact = intern.id.replaceAll('-', '')
      for (const suffix of [compact.slice(0, 8), compact.slice(0, 16), compact]) {
        const hostname = `${intern.name}-${suffix}.${deps.config.INTERNS_DOMAIN}`
        try {
          await deps.db.$executeRaw`UPDATE interns SET hostname = ${hostname} WHERE id = ${intern.id}::uuid AND hostname IS NULL`
        } catch (err) {
          if (isUniqueViolation(err)) continue
          throw err
        }
        const fresh = await deps.db.intern.findUnique({ where: { id: intern.id } })
        if (fresh?.hostname) return fresh
      }
      throw new UnrecoverableError('no free hostname could be reserved')
    },
  },
  {
    label: 'Writing the runtime configuration',
    async run(deps, intern) {
      const token = await deps.vault.readSecret(deps.db, intern.vaultId!, RUNTIME_TOKEN_SECRET)
      if (!token) throw new Error('the runtime token is missing from the vault')
      await deps.runtime.configure(intern.id, {
        hostname: intern.hostname!,
        name: intern.name,
        instructions: intern.instructions,
        model: intern.model,
        token,
      })
      return intern
    },
  },
  {
    label: 'Starting the runtime',
    async run(deps, intern) {
      await deps.runtime.start(intern.id)
      return intern
    },
  },
  {
    label: 'Checking the runtime health',
    async run(deps, intern) {
      const deadline = Date.now() + deps.config.HEALTH_TIMEOUT_MS
      for (let wait = 10; ; wait = Math.min(wait * 2, 500)) {
        if (await deps.runtime.healthy(intern.hostname!)) return intern
        if (Date.now() + wait > deadline) {
          throw new RuntimeUnavailableError(`the runtime did not report healthy within ${deps.config.HEALTH_TIMEOUT_MS} ms`)
        }
        await new Promise((r) => setTimeout(r, wait))
      }
    },
  },
]

export type ProvisionOutcome = 'running' | 'obsolete' | 'failed'

/**
 * One provisioning run. Progress is recorded before each step through the state machine, guarded
 * by status and generation: if the intern was suspended, deleted or re-provisioned meanwhile, the
 * guard fails and this run stops without touching it.
 */
export async function handle(
  deps: WorkerDeps,
  payload: JobPayload<'intern.provision'>,
  ctx: JobContext,
): Promise<ProvisionOutcome> {
  const { internId, generation } = Jobs['intern.provision'].schema.parse(payload)
  let intern = await deps.db.intern.findUnique({ where: { id: internId } })
  if (!intern || intern.provisionGeneration !== generation) return 'obsolete'
  if (intern.status !== 'queued' && intern.status !== 'provisioning') return 'obsolete'

  const total = provisionSteps.length
  for (const [index, step] of provisionSteps.entries()) {
    const progress = { step_label: step.label, step_number: index + 1, total_steps: total }
    const current = await transition(deps.db, {
      internId,
      generation,
      from: ['queued', 'provisioning'],
      to: 'provisioning',
      set: { progress },
    })
    if (!current) return 'obsolete'
    try {
      intern = await step.run(deps, intern, ctx)
    } catch (err) {
      const final = ctx.finalAttempt || err instanceof UnrecoverableError
      if (final) {
        const reason = err instanceof Error ? err.message : String(err)
        await transition(deps.db, {
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
  const done = await transition(deps.db, {
    internId,
    generation,
    from: ['provisioning'],
    to: 'running',
    set: { progress: null, lastFailureMessage: null },
  })
  return done ? 'running' : 'obsolete'
}
