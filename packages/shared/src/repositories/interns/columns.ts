import { statuses, type StatusGroup } from '../../intern-statuses.js'
import { Prisma, type Db } from '../../db.js'

// What every statement on the interns table shares.

/** The columns every intern read selects (an InternRecord), in one place. */
export const INTERN_COLUMNS = Prisma.raw(`id, name, description, instructions, model, status::text AS status,
  last_failure_message, progress, hostname, workspace_id, vault_id, attached_vault_id, created_at, updated_at,
  creator_user_id, icon_sha256`)

/** The database, or a transaction a caller writes beside (a create with rows of its own). */
export type Tx = Db | Prisma.TransactionClient

/**
 * `<column> = ANY(<the group's statuses>)`: a statement's test of an intern's status by one of the
 * groups named in intern-statuses.ts (never a list written in SQL).
 */
export const statusIn = (group: StatusGroup, column = 'status') =>
  Prisma.sql`${Prisma.raw(column)} = ANY(${statuses(group)}::intern_status[])`

/**
 * The statuses in which an intern is held by the host it is placed on: provisioning and running, and
 * destroying (its host takes the last snapshot of its workspace for the archive, then removes it).
 * A stopped intern's workspace is its latest snapshot: its host drops it.
 */
export const HELD_BY_HOST = statusIn('heldByHost')
