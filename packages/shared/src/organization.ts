import { z } from 'zod'
import { AppError } from '@roster/protocol'
import type { Db } from './db.js'
import type { Caller } from './caller.js'
import { assertManagementKey } from './managed-keys.js'
import {
  enabledAdmins,
  insertUser,
  memberOfAccount,
  membersByEmail,
  organizationMembers,
  updateMember,
  type OrganizationMemberRow,
} from './repositories/accounts.js'
import { revokeMemberSessions } from './repositories/console-sessions.js'
import { defaultWorkspaceOf } from './repositories/workspaces.js'
import type { PageQuery } from './workspaces.js'

// The organization (`client.organization`, governance-contract.md §12): an account's members.
// The client lists them; Roster's extensions add one (by e-mail, the address single sign-on
// matches), change their role, and disable or enable them (a disabled member signs in to nothing).

const memberView = (m: OrganizationMemberRow) => ({
  id: m.id,
  // The client requires a string: a member the operator gave no e-mail lists "".
  email: m.email ?? '',
  first_name: m.first_name,
  last_name: m.last_name,
  role: m.role,
  // Roster's: whether the member is disabled (signs in to nothing).
  disabled: m.disabled_at !== null,
})

const accountOf = (caller: Caller, op: 'create' | 'other' = 'other') =>
  assertManagementKey(caller, op, 'managing the organization’s members')

/** `GET /organization/members`: every member of the account, oldest first. */
export async function listOrganizationMembers(db: Db, caller: Caller, q: z.infer<typeof PageQuery>) {
  const accountId = assertManagementKey(caller, 'other', 'listing the organization’s members')
  const { rows, total } = await organizationMembers(db, accountId, q.offset, q.limit)
  return { data: rows.map(memberView), total_count: total }
}

const notFound = (id: string) =>
  new AppError('not_found', `no member ${JSON.stringify(id.slice(0, 80))} in this account`)
const isUuid = (s: string) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s)

/** `GET /organization/members/{id}`. */
export async function organizationMember(db: Db, caller: Caller, id: string) {
  const accountId = accountOf(caller)
  const row = isUuid(id) ? await memberOfAccount(db, accountId, id) : undefined
  if (!row) throw notFound(id)
  return { data: memberView(row) }
}

const Role = z.enum(['org:admin', 'org:member'], 'is org:admin or org:member')
const Name = z.string().trim().min(1).max(100)

export const AddMemberBody = z.strictObject({
  // Any address an identity provider may vouch for, internationalized ones too.
  email: z.email({ pattern: z.regexes.unicodeEmail }).max(254),
  first_name: Name.nullish(),
  last_name: Name.nullish(),
  role: Role.default('org:member'),
})

/** `POST /organization/members`: a member of the account's default workspace, known by e-mail. */
export async function addOrganizationMember(db: Db, caller: Caller, body: z.infer<typeof AddMemberBody>) {
  const accountId = accountOf(caller, 'create')
  if ((await membersByEmail(db, body.email)).some((m) => m.account_id === accountId))
    throw new AppError('name_taken', `a member of this account already has the e-mail ${JSON.stringify(body.email)}`)
  const workspace = await defaultWorkspaceOf(db, accountId)
  if (!workspace) throw new AppError('invalid_body', 'this account has no default workspace')
  const id = await insertUser(db, workspace.id, {
    email: body.email,
    firstName: body.first_name ?? undefined,
    lastName: body.last_name ?? undefined,
    role: body.role,
  })
  return { data: memberView((await memberOfAccount(db, accountId, id))!) }
}

export const UpdateMemberBody = z
  .strictObject({
    role: Role.optional(),
    disabled: z.boolean().optional(),
    first_name: Name.nullish(),
    last_name: Name.nullish(),
  })
  .refine((b) => Object.keys(b).length > 0, 'give at least one of role, disabled, first_name, last_name')

/**
 * `PATCH /organization/members/{id}`: role, disabled, names. A disabled member's console sessions
 * end (on every process within AUTH_CACHE_MS); the account's last enabled admin stays one.
 */
export async function updateOrganizationMember(
  db: Db,
  caller: Caller,
  id: string,
  body: z.infer<typeof UpdateMemberBody>,
) {
  return changeMember(db, accountOf(caller, 'create'), id, body)
}

/** A member's change (the API's and the admin CLI's): the member as they are now. */
export async function changeMember(db: Db, accountId: string, id: string, body: z.infer<typeof UpdateMemberBody>) {
  const row = isUuid(id) ? await memberOfAccount(db, accountId, id) : undefined
  if (!row) throw notFound(id)
  const losesAdmin = row.role === 'org:admin' && !row.disabled_at && (body.role === 'org:member' || body.disabled)
  if (losesAdmin && (await enabledAdmins(db, accountId)) <= 1)
    throw new AppError('last_admin', 'this is the account’s last enabled admin: make another admin first')
  const updated = await updateMember(db, accountId, id, {
    role: body.role,
    disabled: body.disabled,
    firstName: body.first_name,
    lastName: body.last_name,
  })
  if (!updated) throw notFound(id)
  if (body.disabled) await revokeMemberSessions(db, id)
  return { data: memberView(updated) }
}
