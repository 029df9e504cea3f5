import { AppError } from '@roster/protocol'

// The cursor of a list read newest first by (time, id): the last row's time and id, opaque to the
// client (base64url JSON), read back only as this API wrote it.

export const cursorOf = (createdAt: Date, id: string) =>
  Buffer.from(JSON.stringify([createdAt.toISOString(), id])).toString('base64url')

/** The row a cursor names; 400 for anything this API did not write (`idShape`: what an id must look like). */
export function readCursor(cursor: string, idShape?: RegExp): { createdAt: Date; id: string } {
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as unknown[]
    const createdAt = new Date(String(at))
    if (typeof id === 'string' && (!idShape || idShape.test(id)) && !Number.isNaN(createdAt.getTime()))
      return { createdAt, id }
  } catch {
    // not ours: refused below
  }
  throw new AppError('invalid_body', 'cursor is not one this API returned')
}
