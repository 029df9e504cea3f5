import type { z } from 'zod'
import type { Db } from './db.js'
import type { Caller } from './caller.js'
import { assertManagementKey } from './managed-keys.js'
import { organizationMembers } from './repositories/accounts.js'
import type { PageQuery } from './workspaces.js'

// The organization (`client.organization`, governance-contract.md §12): an account's members, as
// the operator described them (`admin user create --email … --first-name … --last-name … [--admin]`).

/** `GET /organization/members`: every member of the account, oldest first. */
export async function listOrganizationMembers(db: Db, caller: Caller, q: z.infer<typeof PageQuery>) {
  const accountId = assertManagementKey(caller, 'other', 'listing the organization’s members')
  const { rows, total } = await organizationMembers(db, accountId, q.offset, q.limit)
  return {
    data: rows.map((m) => ({
      id: m.id,
      // The client requires a string: a member the operator gave no e-mail lists "".
      email: m.email ?? '',
      first_name: m.first_name,
      last_name: m.last_name,
      role: m.role,
    })),
    total_count: total,
  }
}
