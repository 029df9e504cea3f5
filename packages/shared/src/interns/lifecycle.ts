import { randomUUID } from 'node:crypto'
import { AppError } from '@roster/protocol'
import { isUniqueViolation, type Prisma, type Db } from '../db.js'
import type { Caller } from '../caller.js'
import type {
  DeleteInternRequest,
  InternList,
  InternView,
  ListInternsQuery,
  UpdateInternRequest,
} from '@roster/protocol'
import { transition } from '../intern-state.js'
import { enqueueInTx } from '../repositories/outbox.js'
import { internPage, lockIntern, updateInternFields } from '../repositories/interns.js'
import { assertInternId, assertOwnWorkspace, nameTaken, refuseWhileDeleting, visibleOrNotFound } from './access.js'
import { toInternView } from './view.js'
import { decodeCursor, encodeCursor } from './cursor.js'

/**
 * What follows a committed change to interns, told by the domain function that made it (every
 * lifecycle write and create alike), never by its callers: the relay woken when work was queued,
 * and the interns' readers, watchers and other processes told that they changed.
 */
export interface AfterCommit {
  /** An outbox row was committed: wake the relay now rather than at its next poll. */
  outboxWritten(): void
  /** These interns changed: evict cached rows, wake their watchers, publish the change event. */
  internsChanged(ids: string[]): void
}

/** Newest first, keyset-paged on (created_at, id): stable while interns are being created. */
export async function listInterns(db: Db, caller: Caller, query: ListInternsQuery): Promise<InternList> {
  assertOwnWorkspace(caller, query.workspace_id)
  const after = query.starting_after === undefined ? undefined : decodeCursor(query.starting_after)
  const rows = await internPage(db, caller.workspaceId, {
    status: query.status,
    nameHolds: query.q,
    after,
    limit: query.limit,
  })
  const page = rows.slice(0, query.limit)
  const last = page.at(-1)
  const list: InternList = { data: page.map((r) => toInternView(r, caller)), has_more: rows.length > query.limit }
  if (list.has_more && last) list.next_cursor = encodeCursor({ createdAt: last.created_at_exact, id: last.id })
  return list
}

/** Locks the intern for a lifecycle change; anything the caller may not see is not found. */
async function lockVisible(tx: Prisma.TransactionClient, caller: Caller, internId: string) {
  assertInternId(internId)
  return visibleOrNotFound(caller, await lockIntern(tx, internId), internId, (r) => r.workspace_id)
}

/** Omitted fields stay; null clears (model null: the workspace default). The model applies at the next provision. */
export async function updateIntern(
  db: Db,
  after: AfterCommit,
  caller: Caller,
  internId: string,
  body: UpdateInternRequest,
): Promise<InternView> {
  try {
    const view = await db.$transaction(async (tx) => {
      const row = await lockVisible(tx, caller, internId)
      refuseWhileDeleting(row.status, internId)
      return toInternView(await updateInternFields(tx, internId, body), caller)
    })
    after.internsChanged([view.id])
    return view
  } catch (err) {
    if (isUniqueViolation(err)) throw nameTaken(body.name)
    throw err
  }
}

/** First boot, or resume after a suspend or a failure: a new provisioning run. */
export async function provisionIntern(db: Db, after: AfterCommit, caller: Caller, internId: string): Promise<void> {
  await db.$transaction(async (tx) => {
    const row = await lockVisible(tx, caller, internId)
    refuseWhileDeleting(row.status, internId)
    if (row.status === 'running') throw new AppError('already_running', `intern ${internId} is already running`)
    if (row.status === 'awaiting_slack_install')
      throw new AppError(
        'slack_install_pending',
        `intern ${internId} is provisioned once its Slack app is installed (GET /interns/${internId}/slack names the install URL)`,
      )
    if (row.status === 'queued' || row.status === 'provisioning') {
      throw new AppError(
        'already_provisioning',
        `intern ${internId} is already being provisioned (status ${row.status})`,
      )
    }
    const next = await transition(tx, {
      internId,
      from: [row.status],
      to: 'queued',
      set: { progress: null, lastFailureMessage: null, bumpGeneration: true },
    })
    await enqueueInTx(tx, 'intern.provision', { internId, generation: next!.provision_generation })
  })
  after.outboxWritten()
  after.internsChanged([internId])
}

/** Stops the runtime, keeping disk and configuration; the intern is stopped at once. */
export async function suspendIntern(db: Db, after: AfterCommit, caller: Caller, internId: string): Promise<void> {
  await db.$transaction(async (tx) => {
    const row = await lockVisible(tx, caller, internId)
    refuseWhileDeleting(row.status, internId)
    if (row.status === 'stopped') throw new AppError('already_stopped', `intern ${internId} is already stopped`)
    await transition(tx, { internId, from: [row.status], to: 'stopped', set: { progress: null } })
    await enqueueInTx(tx, 'intern.suspend', { internId, request: randomUUID() })
  })
  after.outboxWritten()
  after.internsChanged([internId])
}

/**
 * Starts a teardown (202): the worker archives the workspace, removes the runtime, the private vault
 * and the intern. Deleting again while it runs is accepted as the same request. After a failed
 * archive, a new delete needs acknowledge_workspace_loss, and then skips the archive.
 */
export async function deleteIntern(
  db: Db,
  after: AfterCommit,
  caller: Caller,
  internId: string,
  body: DeleteInternRequest,
): Promise<void> {
  const changed = await db.$transaction(async (tx) => {
    const row = await lockVisible(tx, caller, internId)
    // Deleting again while the teardown runs is the same request: nothing changes.
    if (row.status === 'destroying') return false
    if (row.status === 'destroy_failed' && row.workspace_archive_failed && !body.acknowledge_workspace_loss) {
      throw new AppError(
        'workspace_loss_unacknowledged',
        `archiving the workspace of intern ${internId} failed; delete again with acknowledge_workspace_loss: true to delete it without an archive`,
      )
    }
    await transition(tx, {
      internId,
      from: [row.status],
      to: 'destroying',
      set: { progress: null, lastFailureMessage: null },
    })
    const skipArchive =
      row.status === 'destroy_failed' && row.workspace_archive_failed && body.acknowledge_workspace_loss
    await enqueueInTx(tx, 'intern.destroy', { internId, request: randomUUID(), skipArchive })
    return true
  })
  if (!changed) return
  after.outboxWritten()
  after.internsChanged([internId])
}
