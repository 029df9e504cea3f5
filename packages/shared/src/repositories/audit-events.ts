import { Prisma, type Db } from '../db.js'
import { likeLiteral } from '../like-pattern.js'

// audit_events: the governance changes of each account (docs/audit.md). Rows are only ever
// inserted (a trigger refuses UPDATE) and leave by age (AUDIT_RETENTION_DAYS).

export interface NewAuditEvent {
  accountId: string
  actorType: 'key' | 'member' | 'operator' | 'cli'
  actorId: string | null
  actorLabel: string
  via: 'api' | 'console' | 'cli'
  action: string
  targetType: string
  targetId: string | null
  before: unknown
  after: unknown
  request: unknown
  ip: string | null
}

const json = (v: unknown) => (v === undefined || v === null ? Prisma.DbNull : (v as Prisma.InputJsonValue))

export async function insertAuditEvent(db: Db, e: NewAuditEvent): Promise<void> {
  await db.auditEvent.create({
    data: { ...e, before: json(e.before), after: json(e.after), request: json(e.request) },
  })
}

export interface AuditEventRow {
  id: string
  actor_type: string
  actor_id: string | null
  actor_label: string
  via: string
  action: string
  target_type: string
  target_id: string | null
  before: unknown
  after: unknown
  request: unknown
  ip: string | null
  created_at: Date
}

export interface AuditFilter {
  accountId: string
  /** An action, or a family of them (`key` matches `key.create`, `key.update`…). */
  action?: string
  targetType?: string
  targetId?: string
  actorId?: string
  from?: Date
  to?: Date
  /** Strictly older than this row (the cursor). */
  before?: { createdAt: Date; id: string }
  limit: number
}

/** An account's events, newest first (the index on account, time and id serves every filter's order). */
export function auditEventPage(db: Db, f: AuditFilter): Promise<AuditEventRow[]> {
  const and = (on: boolean, sql: Prisma.Sql) => (on ? sql : Prisma.empty)
  return db.$queryRaw<AuditEventRow[]>`
    SELECT id, actor_type, actor_id, actor_label, via, action, target_type, target_id, before, after, request, ip, created_at
    FROM audit_events
    WHERE account_id = ${f.accountId}::uuid
      ${and(f.action !== undefined, Prisma.sql`AND (action = ${f.action} OR action LIKE ${likeLiteral(f.action ?? '') + '.%'})`)}
      ${and(f.targetType !== undefined, Prisma.sql`AND target_type = ${f.targetType}`)}
      ${and(f.targetId !== undefined, Prisma.sql`AND target_id = ${f.targetId}`)}
      ${and(f.actorId !== undefined, Prisma.sql`AND actor_id = ${f.actorId}`)}
      ${and(f.from !== undefined, Prisma.sql`AND created_at >= ${f.from}`)}
      ${and(f.to !== undefined, Prisma.sql`AND created_at < ${f.to}`)}
      ${and(f.before !== undefined, Prisma.sql`AND (created_at, id) < (${f.before?.createdAt}, ${f.before?.id}::uuid)`)}
    ORDER BY created_at DESC, id DESC
    LIMIT ${f.limit}`
}

/** Deletes events older than `days` days, a batch at a time; how many went. */
export async function pruneAuditEvents(db: Db, days: number, batch = 10_000): Promise<number> {
  let total = 0
  for (;;) {
    const n = await db.$executeRaw`
      DELETE FROM audit_events WHERE id IN (
        SELECT id FROM audit_events WHERE created_at < now() - make_interval(days => ${days}) LIMIT ${batch})`
    total += n
    if (n < batch) return total
  }
}
