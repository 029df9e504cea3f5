import { createHash } from 'node:crypto'
import { PrismaPg } from '@prisma/adapter-pg'
import { PrismaClient } from './generated/prisma/client.js'

export type Db = PrismaClient
export { Prisma } from './generated/prisma/client.js'

export interface DbOptions {
  url: string
  poolSize?: number
  /** Postgres cancels any statement running longer (e.g. past a route's deadline). */
  statementTimeoutMs?: number
  preparedStatements?: boolean
}

/**
 * A Prisma client over node-postgres (no native engine, no download). Statements are prepared
 * by name: each connection parses a statement once and Postgres can reuse its plan, which halves
 * the database's work for the create statement (planning it cost as much as running it).
 * Behind a transaction-mode pooler that cannot keep prepared statements, set preparedStatements off.
 */
export function createDb({ url, poolSize = 10, statementTimeoutMs, preparedStatements = true }: DbOptions): Db {
  const adapter = new PrismaPg(
    { connectionString: url, max: poolSize, statement_timeout: statementTimeoutMs },
    preparedStatements ? { statementNameGenerator: statementNames() } : {},
  )
  // A transaction waits for a connection as long as a plain query does, near enough: Prisma's own
  // 2 s made a burst (100 Slack events at once on a busy machine) fail where its queries would wait.
  return new PrismaClient({ adapter, transactionOptions: TRANSACTION_OPTIONS })
}

/** How long a transaction may wait for a connection of the pool, and run. */
const TRANSACTION_OPTIONS = { maxWait: 10_000, timeout: 15_000 } as const

/**
 * A transaction that could not start within its wait, or ran past its time (Prisma's P2028): the
 * database was too busy, and the transaction changed nothing (it was rolled back).
 */
export function isDatabaseBusy(err: unknown): boolean {
  return (err as { code?: unknown })?.code === 'P2028'
}

/**
 * Names statements by a digest of their SQL; past a bound, new shapes run unnamed (an empty name),
 * so a stream of distinct statements cannot grow every connection's statement cache without end.
 */
function statementNames(limit = 1_000) {
  const names = new Map<string, string>()
  return ({ sql }: { sql: string }): string => {
    const known = names.get(sql)
    if (known) return known
    if (names.size >= limit) return ''
    const name = 'r' + createHash('sha1').update(sql).digest('base64url').slice(0, 20)
    names.set(sql, name)
    return name
  }
}

/** Postgres error code of a failed query, wherever Prisma or the adapter put it. */
export function pgErrorCode(err: unknown): string | undefined {
  const e = err as {
    code?: string
    meta?: { code?: string; driverAdapterError?: { cause?: { originalCode?: string } } }
    cause?: { originalCode?: string; code?: string }
  }
  return (
    e?.meta?.driverAdapterError?.cause?.originalCode ??
    e?.cause?.originalCode ??
    e?.meta?.code ??
    (typeof e?.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code) && !e.code.startsWith('P') ? e.code : undefined)
  )
}

/** Unique-constraint violation, from a Prisma model call (P2002) or a raw query (23505). */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string }
  return e?.code === 'P2002' || pgErrorCode(err) === '23505'
}

/** One round trip to Postgres (the readiness checks'): resolves when it answers. */
export async function pingDatabase(db: Db): Promise<void> {
  await db.$queryRaw`SELECT 1`
}
