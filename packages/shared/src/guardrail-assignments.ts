import { type z } from 'zod'
import { AppError } from '@roster/protocol'
import type { Db } from './db.js'
import type { Caller } from './caller.js'
import { keysNamedByHash } from './managed-keys.js'

import {
  assignKeys,
  assignMembers,
  keyAssignmentPage,
  memberAssignmentPage,
  unassignKeys,
  unassignMembers,
  type GuardrailRow,
  type KeyAssignmentRow,
  type MemberAssignmentRow,
} from './repositories/guardrails.js'
import { isMember } from './repositories/workspaces.js'
import { type PageQuery } from './workspaces.js'
import { isUuid } from './interns/access.js'
import { guardrailsAccount, guardrailOf, type GuardrailDeps } from './guardrails.js'

// Guardrails' assignments to keys and members (guardrails.ts: the guardrails themselves).

const keyAssignmentView = (a: KeyAssignmentRow) => ({
  id: a.id,
  guardrail_id: a.guardrail_id,
  key_hash: Buffer.from(a.key_hash).toString('hex'),
  key_name: a.key_name,
  key_label: a.key_label ?? a.key_prefix,
  assigned_by: a.assigned_by,
  created_at: a.created_at.toISOString(),
})

const memberAssignmentView = (a: MemberAssignmentRow) => ({
  id: a.id,
  guardrail_id: a.guardrail_id,
  user_id: a.user_id,
  organization_id: a.organization_id,
  assigned_by: a.assigned_by,
  created_at: a.created_at.toISOString(),
})

function assignable(g: GuardrailRow) {
  if (g.is_default)
    throw new AppError(
      'invalid_body',
      'this is a workspace’s default guardrail: it applies to every key and member of the workspace already',
    )
}

/** The account's live keys named by their hashes, of the guardrail's workspace (400 naming the first that is not). */
async function keysNamed(db: Db, accountId: string, g: GuardrailRow, hashes: string[]) {
  const keys = [...(await keysNamedByHash(db, accountId, hashes, 'key_hashes'))]
  const elsewhere = keys.find(([, k]) => k.workspace_id !== g.workspace_id)
  if (elsewhere)
    throw new AppError(
      'invalid_body',
      `key_hashes: the key ${elsewhere[0]} is in another workspace than this guardrail's`,
    )
  return keys.map(([, k]) => k.id)
}

export async function assignGuardrailKeys(deps: GuardrailDeps, caller: Caller, id: string, hashes: string[]) {
  const accountId = guardrailsAccount(caller, 'create')
  const g = await guardrailOf(deps.db, accountId, id)
  assignable(g)
  const keyIds = await keysNamed(deps.db, accountId, g, hashes)
  const assigned = await assignKeys(deps.db, g.id, keyIds, caller.userId)
  await deps.changed(accountId)
  return { assigned_count: assigned }
}

export async function unassignGuardrailKeys(deps: GuardrailDeps, caller: Caller, id: string, hashes: string[]) {
  const accountId = guardrailsAccount(caller)
  const g = await guardrailOf(deps.db, accountId, id)
  const keyIds = await keysNamed(deps.db, accountId, g, hashes)
  const unassigned = await unassignKeys(deps.db, g.id, keyIds)
  await deps.changed(accountId)
  return { unassigned_count: unassigned }
}

/** Members of the guardrail's workspace named by their ids (400 naming the first that is not one). */
async function membersNamed(db: Db, g: GuardrailRow, userIds: string[]) {
  const ids = [...new Set(userIds)]
  for (const id of ids)
    if (!isUuid(id) || !(await isMember(db, g.workspace_id, id)))
      throw new AppError(
        'invalid_body',
        `member_user_ids: ${JSON.stringify(id.slice(0, 80))} is not a member of this guardrail's workspace`,
      )
  return ids
}

export async function assignGuardrailMembers(deps: GuardrailDeps, caller: Caller, id: string, userIds: string[]) {
  const accountId = guardrailsAccount(caller)
  const g = await guardrailOf(deps.db, accountId, id)
  assignable(g)
  const assigned = await assignMembers(deps.db, g.id, await membersNamed(deps.db, g, userIds), caller.userId)
  await deps.changed(accountId)
  return { assigned_count: assigned }
}

export async function unassignGuardrailMembers(deps: GuardrailDeps, caller: Caller, id: string, userIds: string[]) {
  const accountId = guardrailsAccount(caller)
  const g = await guardrailOf(deps.db, accountId, id)
  const unassigned = await unassignMembers(deps.db, g.id, await membersNamed(deps.db, g, userIds))
  await deps.changed(accountId)
  return { unassigned_count: unassigned }
}

/** Whose assignments a list shows: one guardrail's (404 when it is not the account's), or the account's. */
async function assignmentScope(deps: GuardrailDeps, caller: Caller, id: string | undefined) {
  const accountId = guardrailsAccount(caller)
  return { accountId, guardrailId: id === undefined ? undefined : (await guardrailOf(deps.db, accountId, id)).id }
}

export async function listKeyAssignments(
  deps: GuardrailDeps,
  caller: Caller,
  id: string | undefined,
  q: z.infer<typeof PageQuery>,
) {
  const { rows, total } = await keyAssignmentPage(deps.db, await assignmentScope(deps, caller, id), q.offset, q.limit)
  return { data: rows.map(keyAssignmentView), total_count: total }
}

export async function listMemberAssignments(
  deps: GuardrailDeps,
  caller: Caller,
  id: string | undefined,
  q: z.infer<typeof PageQuery>,
) {
  const scope = await assignmentScope(deps, caller, id)
  const { rows, total } = await memberAssignmentPage(deps.db, scope, q.offset, q.limit)
  return { data: rows.map(memberAssignmentView), total_count: total }
}
