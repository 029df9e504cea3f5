import type { Db, Prisma } from './db.js'
import type { InternStatus } from '@roster/protocol'
import { GroupCommit } from './group-commit.js'
import { Transitions } from './intern-statuses.js'
import {
  updateStatus,
  updateStatusMany,
  type TransitionedIntern,
  type TransitionRequest,
} from './repositories/interns.js'

export type { TransitionChange, TransitionedIntern, TransitionRequest } from './repositories/interns.js'
export { Transitions, StatusGroups, inGroup, statuses, type StatusGroup } from './intern-statuses.js'

/**
 * The one place where an intern's status changes. Every change is a guarded update
 * (`WHERE status = ANY(expected)`), so two actors racing on one intern cannot both win, and a
 * transition the table (intern-statuses.ts) does not allow is a programming error caught before it
 * reaches the database.
 */
export function canTransition(from: InternStatus, to: InternStatus): boolean {
  return Transitions[from].includes(to)
}

/** Applies a guarded status change; returns null when the intern was not in an expected state. */
export async function transition(
  db: Db | Prisma.TransactionClient,
  req: TransitionRequest,
): Promise<TransitionedIntern | null> {
  for (const from of req.from) {
    if (!canTransition(from, req.to)) throw new Error(`intern transition ${from} → ${req.to} is not allowed`)
  }
  return updateStatus(db, req)
}

/**
 * Group commit for transitions (see GroupCommit): a worker runs many provisioning jobs at once,
 * and each step writes one guarded update. Updates that arrive while others are being written go
 * out together in one statement, with exactly the same guards per intern (status, generation). An
 * intern's transitions are written one after another, never in one batch (a row is updated once
 * per statement) nor in two at once; a batch that fails as a whole (say, a hostname clash) is
 * split, and each transition gets its own answer.
 */
export class TransitionBatcher extends GroupCommit<TransitionRequest, TransitionedIntern | null> {
  /** `changed` hears the ids of interns whose transition committed (to publish change events). */
  constructor(db: Db, changed: (ids: string[]) => void = () => {}) {
    super({
      writeMany: async (reqs) => {
        const rows = await updateStatusMany(db, reqs)
        changed([...rows.keys()])
        return reqs.map((r) => rows.get(r.internId) ?? null)
      },
      writeOne: async (req) => {
        const row = await transition(db, req)
        if (row) changed([row.id])
        return row
      },
      key: (req) => req.internId,
      maxBatch: 200,
    })
  }

  run(req: TransitionRequest): Promise<TransitionedIntern | null> {
    for (const from of req.from) {
      if (!canTransition(from, req.to))
        return Promise.reject(new Error(`intern transition ${from} → ${req.to} is not allowed`))
    }
    return this.submit(req)
  }
}
