import { UnrecoverableError } from 'bullmq'
import { transition, type JobPayload } from '@roster/shared'
import { slackAppsApi, slackErrorCode, withSlackConfigToken, unsealSlackSecrets } from '@roster/shared/slack'
import {
  archiveIntern,
  deleteInternRecord,
  internStatus,
  lockTeardown,
  markArchiveFailed,
  revokeSlackLink,
  slackLinkOf,
} from '@roster/shared/repositories'
import type { JobContext, WorkerDeps } from '../context.js'
import { hostIsLive } from '../fleet.js'
import { revokeBotToken } from '../slack/poster.js'

/**
 * An installed Slack link's bot token is revoked with the intern, and an app Roster minted for it
 * deleted (best effort: Slack away is retried with the job, then logged, never fatal).
 */
async function revokeSlack(deps: WorkerDeps, ctx: JobContext, internId: string) {
  const link = await slackLinkOf(deps.db, internId)
  const masterKey = deps.config.VAULT_MASTER_KEY
  if (!link || !masterKey) return
  if (link.state === 'installed') {
    const token = unsealSlackSecrets(masterKey, internId, link.sealed).bot_token
    if (token && !(await revokeBotToken(token, deps.config.SLACK_API_URL)))
      ctx.log.warn(
        { internId },
        'Slack could not be reached to revoke the intern’s bot token; it is deleted with the intern',
      )
    await revokeSlackLink(deps.db, internId, 'the intern was deleted')
  }
  if (link.origin !== 'minted' || !link.appId) return
  const api = slackAppsApi(deps.config.SLACK_API_URL)
  try {
    await withSlackConfigToken({ db: deps.db, masterKey, api }, link.intern.workspaceId, (token) =>
      api.deleteApp(token, link.appId!),
    )
  } catch (err) {
    const code = slackErrorCode(err)
    // Already gone (deleted by hand in Slack): nothing is left to delete.
    if (code === 'app_not_found' || code === 'invalid_app_id') return
    if (!ctx.finalAttempt) throw err
    ctx.log.warn(
      { internId, appId: link.appId, error: code ?? (err as Error).message },
      'the intern’s minted Slack app could not be deleted; delete it by hand in Slack',
    )
  }
}

/**
 * Tears an intern down: its host takes a last snapshot of its workspace (unless the caller
 * acknowledged losing it), its runtime is removed, then in one transaction its archive is written
 * (configuration, sessions, workspace) and the intern, its private vault (secrets included) and its
 * keys are deleted, and the member's quota given back. Interns that borrowed the vault lose the attachment
 * (attached_vault_id becomes null). Each step is idempotent; after the last retry the intern ends
 * destroy_failed with the reason.
 */
export async function handle(deps: WorkerDeps, payload: JobPayload<'intern.destroy'>, ctx: JobContext) {
  const { internId, skipArchive } = payload
  const status = await internStatus(deps.db, internId)
  if (!status) return 'gone'
  if (status !== 'destroying') return 'obsolete'

  let step = 'archiving the workspace'
  try {
    // Its host, while that host is there, stops it and takes a last snapshot of its workspace; the
    // archive itself is written off the host, with the deletion, from the record (so a host that died
    // or already dropped the intern takes nothing with it: the latest snapshot is the workspace).
    const at = await deps.runtime.placement(internId)
    const live = at && (await hostIsLive(deps, at.hostId))
    if (live && !skipArchive) await deps.runtime.archive(at, internId)
    else if (at && !skipArchive)
      ctx.log.warn(
        { internId, host: at.hostId },
        'the intern’s runtime host is not live: archiving its workspace as of its latest snapshot',
      )
    step = 'removing the runtime'
    if (live) await deps.runtime.remove(at, internId)
    step = 'revoking its Slack token'
    await revokeSlack(deps, ctx, internId)
    step = 'deleting the intern and its vault'
    await deps.db.$transaction(async (tx) => {
      const intern = await lockTeardown(tx, internId)
      if (!intern) return
      if (!skipArchive) await archiveIntern(tx, internId)
      await deleteInternRecord(tx, intern)
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
        if (failed) await markArchiveFailed(tx, internId, archiveFailed)
      })
      deps.internsChanged([internId])
      if (!(err instanceof UnrecoverableError)) throw new UnrecoverableError(reason)
    }
    throw err
  }
}
