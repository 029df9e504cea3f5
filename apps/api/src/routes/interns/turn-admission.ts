import { AppError } from '@roster/shared'
import type { Admitted } from '@roster/shared/repositories'
import type { AppDeps } from '../../deps.js'

// What the routes that start turns no person typed share: a webhook delivery and a schedule run now.

/** Refuses a turn not admitted: the intern's queue full (kept as refused), or a delivery it has had. */
export function turnAdmissionRefusal(admitted: Admitted): asserts admitted is Extract<Admitted, { kind: 'queued' }> {
  if (admitted.kind === 'refused') throw new AppError('turn_queue_full', `turn ${admitted.id}: ${admitted.reason}`)
  if (admitted.kind === 'duplicate')
    throw new AppError('delivery_replayed', `this delivery was taken before: its turn is ${admitted.id}`)
  if (admitted.kind !== 'queued') throw new AppError('internal_error', `the turn was ${admitted.kind}`)
}

/** The master key seals triggers' secrets: without it, no trigger can be made or checked. */
export function triggerMasterKey(deps: AppDeps): Buffer {
  if (!deps.config.VAULT_MASTER_KEY)
    throw new AppError(
      'configuration_error',
      'webhook triggers need VAULT_MASTER_KEY (their secrets are sealed with a key derived from it); this API has none',
    )
  return deps.config.VAULT_MASTER_KEY
}
