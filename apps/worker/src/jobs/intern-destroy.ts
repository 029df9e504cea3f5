import { UnrecoverableError } from 'bullmq'
import { Jobs, transition, type JobPayload } from '@roster/shared'
import type { JobContext, WorkerDeps } from '../context.js'
import { hostIsLive } from '../fleet.js'

/**
 * Tears an intern down: archive its workspace (unless the caller acknowledged losing it), remove
 * its runtime, then delete the intern, its private vault (secrets included) and its keys, and give
 * the member's quota back, in one transaction. Interns that borrowed the vault lose the attachment
 * (attached_vault_id becomes null). Each step is idempotent; after the last retry the intern ends
 * destroy_failed with the reason.
 */
export async function handle(deps: WorkerDeps, payload: JobPayload<'intern.destroy'>, ctx: JobContext) {
  const { internId, skipArchive } = Jobs['intern.destroy'].schema.parse(payload)
  const intern = await deps.db.intern.findUnique({ where: { id: internId } })
  if (!intern) return 'gone'
  if (intern.status !== 'destroying') return 'obsolete'

  let step = 'archiving the workspace'
  try {
    // At its host, while that host is there: a host that died took nothing with it the record needs
    // (the intern's latest snapshot and its sessions go with the intern's row).
    const at = await deps.runtime.placement(internId)
    const live = at && (await hostIsLive(deps, at.hostId))
    if (live && !skipArchive) await deps.runtime.archive(at, internId)
    step = 'removing the runtime'
    if (live) await deps.runtime.remove(at, internId)
    step = 'deleting the intern and its vault'
    await deps.db.$transaction(async (tx) => {
      const deleted = await tx.$executeRaw`DELETE FROM interns WHERE id = ${internId}::uuid AND status = 'destroying'`
      if (deleted === 0) return
      if (intern.vaultId) await tx.$executeRaw`DELETE FROM vaults WHERE id = ${intern.vaultId}::uuid`
      if (intern.creatorUserId) {
        await tx.$executeRaw`
          UPDATE member_quota_shards SET used = used - 1
          WHERE (user_id, shard) = (
            SELECT user_id, shard FROM member_quota_shards WHERE user_id = ${intern.creatorUserId}::uuid AND used > 0
            ORDER BY shard LIMIT 1 FOR UPDATE)`
      }
    })
    deps.internsChanged([internId])
    return 'deleted'
  } catch (err) {
    if (ctx.finalAttempt || err instanceof UnrecoverableError) {
      const reason = err instanceof Error ? err.message : String(err)
      const archiveFailed = step === 'archiving the workspace'
      await deps.db.$transaction(async (tx) => {
        const failed = await transition(tx, {
          internId,
          from: ['destroying'],
          to: 'destroy_failed',
          set: { lastFailureMessage: `Deletion failed while ${step} after ${ctx.attempt} attempt(s): ${reason}` },
        })
        if (failed) await tx.$executeRaw`UPDATE interns SET workspace_archive_failed = ${archiveFailed} WHERE id = ${internId}::uuid`
      })
      deps.internsChanged([internId])
      if (!(err instanceof UnrecoverableError)) throw new UnrecoverableError(reason)
    }
    throw err
  }
}
