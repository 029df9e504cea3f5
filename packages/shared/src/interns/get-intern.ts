import { AppError } from '../errors.js'
import type { Caller } from '../caller.js'
import type { InternView } from '../contracts/interns.js'
import { canSeeIntern } from './access.js'
import { toInternView } from './view.js'
import type { InternReader } from './intern-reader.js'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** One intern as the caller may see it; anything hidden or malformed is simply not found. */
export async function getIntern(reader: InternReader, caller: Caller, internId: string): Promise<InternView> {
  if (!UUID.test(internId)) throw new AppError('not_found', `intern ${internId} not found`)
  const row = await reader.get(internId)
  if (!row || !canSeeIntern(caller, { id: row.id, workspaceId: row.workspace_id })) {
    throw new AppError('not_found', `intern ${internId} not found`)
  }
  return toInternView(row, caller)
}
