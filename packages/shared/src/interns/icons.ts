import { createHash } from 'node:crypto'
import { AppError } from '../errors.js'
import type { Db } from '../db.js'
import type { Caller } from '../caller.js'
import { assertInternId, refuseWhileDeleting, visibleOrNotFound } from './access.js'
import type { AfterCommit } from './lifecycle.js'

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
  const intern = await db.intern.findUnique({
    where: { id: internId },
    select: { id: true, workspaceId: true, status: true },
  })
  return visibleOrNotFound(caller, intern, internId, (i) => i.workspaceId)
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
  await db.$transaction([
    db.internIcon.upsert({
      where: { internId },
      create: { internId, contentType: type, bytes: new Uint8Array(bytes), sha256 },
      update: { contentType: type, bytes: new Uint8Array(bytes), sha256, updatedAt: new Date() },
    }),
    db.intern.update({ where: { id: internId }, data: { iconSha256: sha256 } }),
  ])
  after.internsChanged([internId])
  return sha256
}

export async function clearInternIcon(db: Db, after: AfterCommit, caller: Caller, internId: string): Promise<void> {
  await visible(db, caller, internId)
  await db.$transaction([
    db.internIcon.deleteMany({ where: { internId } }),
    db.intern.update({ where: { id: internId }, data: { iconSha256: null } }),
  ])
  after.internsChanged([internId])
}

export async function getInternIcon(db: Db, caller: Caller, internId: string) {
  await visible(db, caller, internId)
  const icon = await db.internIcon.findUnique({ where: { internId } })
  if (!icon) throw new AppError('not_found', `intern ${internId} has no icon`)
  return { contentType: icon.contentType, bytes: Buffer.from(icon.bytes), sha256: icon.sha256 }
}
