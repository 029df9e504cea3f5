import { z } from 'zod'
import { AppError } from '@roster/protocol'
import type { Db } from './db.js'
import { managesAccount, type Caller } from './caller.js'
import { API_KEY_PREFIX } from './api-keys.js'
import { cursorOf, readCursor } from './page-cursor.js'
import { keyNames } from './repositories/generation-rollups.js'

const UUID = /^[0-9a-f-]{36}$/
import {
  auditEventPage,
  insertAuditEvent,
  type AuditEventRow,
  type NewAuditEvent,
} from './repositories/audit-events.js'

// The audit log (docs/audit.md): every governance change, from the API, the console or the admin
// CLI, as who, what, before and after (secrets masked), when and from where. Read by the account's
// managers (a management key, an admin signed in as themselves), filtered, newest first.

/** Fields whose values are secrets wherever they appear in a body or a resource (matched by name). */
const SECRET_FIELD =
  /^(key|api_key|apikey|secret|client_secret|password|token|access_token|authorization|headers|private_key)$/i

/** A secret's value as the log keeps it: its last four characters where it is long enough to keep them safely. */
const masked = (v: unknown) => (typeof v === 'string' && v.length >= 16 ? `••••${v.slice(-4)}` : '••••')

/** A copy of `value` with every secret field's value masked (any depth; headers' values all masked). */
export function maskSecrets(value: unknown, depth = 0): unknown {
  // An API key's plaintext is masked wherever it stands, whatever its field is called.
  if (typeof value === 'string' && value.startsWith(API_KEY_PREFIX)) return masked(value)
  if (depth > 32 || value === null || typeof value !== 'object') return value
  if (Array.isArray(value)) return value.map((v) => maskSecrets(v, depth + 1))
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(value)) {
    if (!SECRET_FIELD.test(k)) out[k] = maskSecrets(v, depth + 1)
    else if (v !== null && typeof v === 'object' && !Array.isArray(v))
      out[k] = Object.fromEntries(Object.keys(v).map((h) => [h, '••••']))
    else out[k] = v === null || v === undefined ? v : masked(v)
  }
  return out
}

export type AuditEvent = Omit<NewAuditEvent, 'before' | 'after' | 'request'> & {
  before?: unknown
  after?: unknown
  request?: unknown
}

/** Writes one event, its before, after and request masked. */
export function recordAudit(db: Db, e: AuditEvent): Promise<void> {
  return insertAuditEvent(db, {
    ...e,
    before: maskSecrets(e.before ?? null),
    after: maskSecrets(e.after ?? null),
    request: maskSecrets(e.request ?? null),
  })
}

/** Who a request's caller is, as the log names them: a person by e-mail, a key by its name. */
export async function auditActor(
  db: Db,
  caller: Caller,
): Promise<Pick<NewAuditEvent, 'actorType' | 'actorId' | 'actorLabel'>> {
  if (caller.person) return { actorType: 'member', actorId: caller.person.userId, actorLabel: caller.person.email }
  const name = (await keyNames(db, [caller.keyId])).get(caller.keyId)?.name
  return { actorType: 'key', actorId: caller.keyId, actorLabel: name || `${caller.kind} key` }
}

const When = z.iso.datetime({ offset: true }).transform((s) => new Date(s))

export const AuditLogQuery = z.strictObject({
  /** An action (`key.update`) or its family (`key`). */
  action: z
    .string()
    .regex(/^[a-z_]+(\.[a-z_]+)*$/, 'an action such as key.update, or a family such as key')
    .max(64)
    .optional(),
  target_type: z
    .string()
    .regex(/^[a-z_]+$/)
    .max(32)
    .optional(),
  target_id: z.string().min(1).max(200).optional(),
  /** Who: a key's id or a member's id. */
  actor_id: z.string().min(1).max(64).optional(),
  from: When.optional(),
  to: When.optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().max(200).optional(),
})
export type AuditLogQuery = z.infer<typeof AuditLogQuery>

const eventView = (r: AuditEventRow) => ({
  id: r.id,
  created_at: r.created_at.toISOString(),
  actor: { type: r.actor_type, id: r.actor_id, label: r.actor_label },
  via: r.via,
  action: r.action,
  target: { type: r.target_type, id: r.target_id },
  before: r.before,
  after: r.after,
  request: r.request,
  ip: r.ip,
})

/** `GET /audit-log`: the account's governance changes, newest first, with a cursor. */
export async function listAuditEvents(db: Db, caller: Caller, q: AuditLogQuery) {
  if (!managesAccount(caller))
    throw new AppError('unauthorized', 'reading the audit log needs a management key or an admin')
  if (q.from && q.to && !(q.from < q.to)) throw new AppError('invalid_body', 'from must be before to')
  const rows = await auditEventPage(db, {
    accountId: caller.accountId,
    action: q.action,
    targetType: q.target_type,
    targetId: q.target_id,
    actorId: q.actor_id,
    from: q.from,
    to: q.to,
    before: q.cursor === undefined ? undefined : readCursor(q.cursor, UUID),
    limit: q.limit + 1,
  })
  const page = rows.slice(0, q.limit)
  const has_more = rows.length > q.limit
  return {
    data: page.map(eventView),
    has_more,
    ...(has_more && page.length ? { next_cursor: cursorOf(page.at(-1)!.created_at, page.at(-1)!.id) } : {}),
  }
}
