import { AppError } from '@roster/protocol'
import type { Caller } from '../caller.js'

export interface VaultAccess {
  /** The route changes secrets (store, delete, copy). */
  write: boolean
  /** The route names one intern's vault rather than the workspace's. */
  internScope: boolean
  /** The request arrived on a regional hostname. */
  regional: boolean
}

/**
 * Who may reach a vault route, in the order a refusal is decided (the vault contract, §2.2): a key
 * at all (management keys never), the programme, the global hostname, a usable workspace scope;
 * an intern's own key only its own intern's scope (the workspace pool is not its to see); writes
 * only while the account's vault writes are on.
 */
export function checkVaultAccess(caller: Caller | undefined, access: VaultAccess): asserts caller is Caller {
  if (!caller || caller.kind === 'management') throw new AppError('unauthorized', 'Invalid or missing API key')
  if (!caller.inProgramme) throw new AppError('not_found', 'Not found')
  if (access.regional)
    throw new AppError(
      'workspace_capability_unavailable',
      'Vault routes are served on the global hostname only: regional data residency is not supported yet',
    )
  if (!caller.internsEnabled) throw new AppError('workspace_capability_unavailable', 'Vault scope is unavailable')
  if (caller.kind === 'intern' && !access.internScope) throw new AppError('not_found', 'Not found')
  if (access.write && !caller.vaultWrites) throw new AppError('vault_writes_disabled', 'Vault writes are not enabled')
}
