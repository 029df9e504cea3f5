import { Prisma, type Db } from '../../db.js'
import type { InternProgress, InternStatus } from '@roster/protocol'

// The interns table's statements: guarded status changes (repositories/interns.ts holds the reads and the index).

// ── status ───────────────────────────────────────────────────────────────────────────────────────

export interface TransitionChange {
  progress?: InternProgress | null
  hostname?: string | null
  /** Sets the hostname only if the intern has none yet (a retried run keeps its reservation). */
  reserveHostname?: string
  lastFailureMessage?: string | null
  /** Starts a new provisioning run: jobs of older runs find their guard failing and stop. */
  bumpGeneration?: true
}

/** What a transition returns about the intern it changed. */
export interface TransitionedIntern {
  id: string
  name: string
  instructions: string | null
  model: string | null
  hostname: string | null
  vault_id: string | null
  provision_generation: number
}

export interface TransitionRequest {
  internId: string
  from: readonly InternStatus[]
  to: InternStatus
  /** When set, the update applies only to this provisioning run. */
  generation?: number
  set?: TransitionChange
}

/** One guarded status change (`WHERE status = ANY(from)`, and the run's generation when given); null when it did not apply. */
export async function updateStatus(
  db: Db | Prisma.TransactionClient,
  req: TransitionRequest,
): Promise<TransitionedIntern | null> {
  const set = req.set ?? {}
  const sets: Prisma.Sql[] = [Prisma.sql`status = ${req.to}::intern_status`, Prisma.sql`updated_at = now()`]
  if ('progress' in set) {
    sets.push(Prisma.sql`progress = ${set.progress === null ? null : JSON.stringify(set.progress)}::jsonb`)
  }
  if ('hostname' in set) sets.push(Prisma.sql`hostname = ${set.hostname}`)
  if (set.reserveHostname !== undefined) sets.push(Prisma.sql`hostname = COALESCE(hostname, ${set.reserveHostname})`)
  if ('lastFailureMessage' in set) sets.push(Prisma.sql`last_failure_message = ${set.lastFailureMessage}`)
  if (set.bumpGeneration) sets.push(Prisma.sql`provision_generation = provision_generation + 1`)
  const generation =
    req.generation === undefined ? Prisma.empty : Prisma.sql`AND provision_generation = ${req.generation}`
  const rows = await db.$queryRaw<TransitionedIntern[]>`
    UPDATE interns SET ${Prisma.join(sets, ', ')}
    WHERE id = ${req.internId}::uuid
      AND status = ANY(${req.from as InternStatus[]}::intern_status[])
      ${generation}
    RETURNING id, name, instructions, model, hostname, vault_id, provision_generation`
  return rows[0] ?? null
}

/** Many guarded transitions (distinct interns) in one UPDATE over arrays. */
export async function updateStatusMany(db: Db, reqs: TransitionRequest[]): Promise<Map<string, TransitionedIntern>> {
  const col = <T>(f: (r: TransitionRequest) => T) => reqs.map(f)
  const has = (r: TransitionRequest, k: keyof TransitionChange) => r.set !== undefined && k in r.set
  const rows = await db.$queryRaw<TransitionedIntern[]>`
    WITH v AS (
      SELECT * FROM unnest(
        ${col((r) => r.internId)}::uuid[], ${col((r) => r.from.join(','))}::text[], ${col((r) => r.to)}::intern_status[],
        ${col((r) => r.generation ?? null)}::int[],
        ${col((r) => has(r, 'progress'))}::bool[], ${col((r) => (r.set?.progress ? JSON.stringify(r.set.progress) : null))}::jsonb[],
        ${col((r) => has(r, 'hostname'))}::bool[], ${col((r) => r.set?.hostname ?? null)}::text[],
        ${col((r) => r.set?.reserveHostname ?? null)}::text[],
        ${col((r) => has(r, 'lastFailureMessage'))}::bool[], ${col((r) => r.set?.lastFailureMessage ?? null)}::text[],
        ${col((r) => r.set?.bumpGeneration === true)}::bool[]
      ) AS t(id, from_list, to_status, generation, set_progress, progress, set_hostname, hostname, reserve,
             set_failure, failure, bump)
    )
    UPDATE interns i SET
      status = v.to_status,
      updated_at = now(),
      progress = CASE WHEN v.set_progress THEN v.progress ELSE i.progress END,
      hostname = CASE WHEN v.set_hostname THEN v.hostname
                      WHEN v.reserve IS NOT NULL THEN COALESCE(i.hostname, v.reserve)
                      ELSE i.hostname END,
      last_failure_message = CASE WHEN v.set_failure THEN v.failure ELSE i.last_failure_message END,
      provision_generation = i.provision_generation + CASE WHEN v.bump THEN 1 ELSE 0 END
    FROM v
    WHERE i.id = v.id
      AND i.status::text = ANY(string_to_array(v.from_list, ','))
      AND (v.generation IS NULL OR i.provision_generation = v.generation)
    RETURNING i.id, i.name, i.instructions, i.model, i.hostname, i.vault_id, i.provision_generation`
  return new Map(rows.map((r) => [r.id, r]))
}
