import type { Caller } from '../caller.js'
import type { InternView } from '@roster/protocol'
import { assertInternId, canSeeIntern, isUuid, visibleOrNotFound } from './access.js'
import { toInternView } from './view.js'
import type { InternReader } from './intern-reader.js'

/** One intern as the caller may see it; anything hidden or malformed is simply not found. */
export async function getIntern(reader: InternReader, caller: Caller, internId: string): Promise<InternView> {
  assertInternId(internId)
  const row = visibleOrNotFound(caller, await reader.get(internId), internId, (r) => r.workspace_id)
  return toInternView(row, caller)
}

/** Several interns as the caller may see them, in the order asked: undefined for one it cannot (or a malformed id). */
export async function getInterns(
  reader: InternReader,
  caller: Caller,
  internIds: readonly string[],
): Promise<(InternView | undefined)[]> {
  const wellFormed = internIds.filter(isUuid)
  const byId = new Map((await reader.getMany(wellFormed)).map((row, i) => [wellFormed[i]!, row]))
  return internIds
    .map((id) => byId.get(id))
    .map((row) =>
      row && canSeeIntern(caller, { id: row.id, workspaceId: row.workspace_id })
        ? toInternView(row, caller)
        : undefined,
    )
}
