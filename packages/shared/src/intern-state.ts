import type { Db } from './db.js'
import type { InternProgress, InternStatus } from './contracts/interns.js'
import { Prisma } from './generated/prisma/client.js'

/**
 * The one place where an intern's status changes. Every change is a guarded update
 * (`WHERE status = ANY(expected)`), so two actors racing on one intern cannot both win, and a
 * transition the table does not allow is a programming error caught before it reaches the database.
 */
export const Transitions: Record<InternStatus, readonly InternStatus[]> = {
  // Created with provision:false, or suspended: waits for a provision call.
  stopped: ['queued', 'destroying'],
  queued: ['provisioning', 'failed', 'stopped', 'destroying'],
  // provisioning → provisioning records the next step's progress.
  provisioning: ['provisioning', 'running', 'failed', 'stopped', 'destroying'],
  running: ['queued', 'stopped', 'failed', 'destroying'],
  failed: ['queued', 'destroying'],
  destroying: ['destroy_failed'],
  destroy_failed: ['destroying'],
  awaiting_slack_install: ['queued', 'destroying'],
}

export function canTransition(from: InternStatus, to: InternStatus): boolean {
  return Transitions[from].includes(to)
}

export interface TransitionChange {
  progress?: InternProgress | null
  hostname?: string | null
  /** Sets the hostname only if the intern has none yet (a retried run keeps its reservation). */
  reserveHostname?: string
  lastFailureMessage?: string | null
}

/** What a transition returns about the intern it changed. */
export interface TransitionedIntern {
  id: string
  name: string
  instructions: string | null
  model: string | null
  hostname: string | null
  vault_id: string | null
}

export interface TransitionRequest {
  internId: string
  from: readonly InternStatus[]
  to: InternStatus
  /** When set, the update applies only to this provisioning run. */
  generation?: number
  set?: TransitionChange
}

/** Applies a guarded status change; returns null when the intern was not in an expected state. */
export async function transition(db: Db | Prisma.TransactionClient, req: TransitionRequest): Promise<TransitionedIntern | null> {
  for (const from of req.from) {
    if (!canTransition(from, req.to)) throw new Error(`intern transition ${from} → ${req.to} is not allowed`)
  }
  const set = req.set ?? {}
  const sets: Prisma.Sql[] = [Prisma.sql`status = ${req.to}::intern_status`, Prisma.sql`updated_at = now()`]
  if ('progress' in set) {
    sets.push(Prisma.sql`progress = ${set.progress === null ? null : JSON.stringify(set.progress)}::jsonb`)
  }
  if ('hostname' in set) sets.push(Prisma.sql`hostname = ${set.hostname}`)
  if (set.reserveHostname !== undefined) sets.push(Prisma.sql`hostname = COALESCE(hostname, ${set.reserveHostname})`)
  if ('lastFailureMessage' in set) sets.push(Prisma.sql`last_failure_message = ${set.lastFailureMessage}`)
  const generation =
    req.generation === undefined ? Prisma.empty : Prisma.sql`AND provision_generation = ${req.generation}`
  const rows = await db.$queryRaw<TransitionedIntern[]>`
    UPDATE interns SET ${Prisma.join(sets, ', ')}
    WHERE id = ${req.internId}::uuid
      AND status = ANY(${req.from as InternStatus[]}::intern_status[])
      ${generation}
    RETURNING id, name, instructions, model, hostname, vault_id`
  return rows[0] ?? null
}
