import { createHash } from 'node:crypto'
import { AppError } from '@roster/protocol'
import type { Db } from '../db.js'
import type { Caller } from '../caller.js'
import { assertInternId, refuseWhileDeleting, visibleOrNotFound } from './access.js'
import type { AfterCommit } from './lifecycle.js'
import { deleteIcon, iconOf, internScope, putIcon } from '../repositories/interns.js'

export const ICON_MAX_BYTES = 262_144

/** Raster images only, recognised by their first bytes (SVG is refused: it can carry script). */
const SIGNATURES: Record<string, (b: Buffer) => boolean> = {
  'image/png': (b) => b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
  'image/jpeg': (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff,
  'image/gif': (b) => /^GIF8[79]a/.test(b.subarray(0, 6).toString('latin1')),
  'image/webp': (b) =>
    b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP',
}
export const ICON_TYPES = Object.keys(SIGNATURES)

async function visible(db: Db, caller: Caller, internId: string) {
  assertInternId(internId)
  return visibleOrNotFound(caller, await internScope(db, internId), internId, (i) => i.workspace_id)
}

export async function setInternIcon(
  db: Db,
  after: AfterCommit,
  caller: Caller,
  internId: string,
  contentType: string,
  bytes: Buffer,
): Promise<string> {
  const intern = await visible(db, caller, internId)
  refuseWhileDeleting(intern.status, internId)
  const type = contentType.split(';')[0]!.trim().toLowerCase()
  if (!SIGNATURES[type]?.(bytes))
    throw new AppError('invalid_body', `the body is not a ${type} image (accepted: ${ICON_TYPES.join(', ')})`)
  const sha256 = createHash('sha256').update(bytes).digest('hex')
  await putIcon(db, internId, { contentType: type, bytes, sha256 })
  after.internsChanged([internId])
  return sha256
}

export async function clearInternIcon(db: Db, after: AfterCommit, caller: Caller, internId: string): Promise<void> {
  await visible(db, caller, internId)
  await deleteIcon(db, internId)
  after.internsChanged([internId])
}

export async function getInternIcon(db: Db, caller: Caller, internId: string) {
  await visible(db, caller, internId)
  const icon = await iconOf(db, internId)
  if (!icon) throw new AppError('not_found', `intern ${internId} has no icon`)
  return icon
}
