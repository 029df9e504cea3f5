import { PrismaPg } from '@prisma/adapter-pg'
import { PrismaClient } from './generated/prisma/client.js'

export type Db = PrismaClient
export { Prisma } from './generated/prisma/client.js'

export interface DbOptions {
  url: string
  poolSize?: number
}

/** A Prisma client over node-postgres (no native engine, no download). */
export function createDb({ url, poolSize = 10 }: DbOptions): Db {
  const adapter = new PrismaPg({ connectionString: url, max: poolSize })
  return new PrismaClient({ adapter })
}

/** Postgres error code of a failed query, wherever Prisma or the adapter put it. */
export function pgErrorCode(err: unknown): string | undefined {
  const e = err as { code?: string; meta?: { code?: string; driverAdapterError?: { cause?: { originalCode?: string } } }; cause?: { originalCode?: string; code?: string } }
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
