import { AppError } from '@roster/protocol'
import { isUuid } from './access.js'

/**
 * The list cursor: opaque to clients (base64url JSON), exact to us. created_at is kept as Postgres's
 * own text (microseconds), because a JavaScript Date would round it to milliseconds and could skip
 * or repeat interns created within the same millisecond.
 */
export interface Cursor {
  createdAt: string
  id: string
}

const TIMESTAMP = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,6})?[+-]\d{2}(:\d{2})?$/

export function encodeCursor(cursor: Cursor): string {
  return Buffer.from(JSON.stringify([cursor.createdAt, cursor.id])).toString('base64url')
}

export function decodeCursor(text: string): Cursor {
  try {
    const [createdAt, id] = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as unknown[]
    if (typeof createdAt === 'string' && TIMESTAMP.test(createdAt) && typeof id === 'string' && isUuid(id)) {
      return { createdAt, id }
    }
  } catch {}
  throw new AppError('invalid_body', 'starting_after is not a cursor this API returned')
}
