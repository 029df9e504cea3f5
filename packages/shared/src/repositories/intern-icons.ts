import { type Db } from '../db.js'

// The intern_icons table's statements: an intern's icon is its intern_icons row; the intern's row
// carries the icon's digest (for views).

/** Sets an intern's icon and its digest on the intern, in one transaction. */
export async function putIcon(db: Db, internId: string, icon: { contentType: string; bytes: Buffer; sha256: string }) {
  const bytes = new Uint8Array(icon.bytes)
  await db.$transaction([
    db.internIcon.upsert({
      where: { internId },
      create: { internId, contentType: icon.contentType, bytes, sha256: icon.sha256 },
      update: { contentType: icon.contentType, bytes, sha256: icon.sha256, updatedAt: new Date() },
    }),
    db.intern.update({ where: { id: internId }, data: { iconSha256: icon.sha256 } }),
  ])
}

/** Removes an intern's icon (none is fine). */
export async function deleteIcon(db: Db, internId: string) {
  await db.$transaction([
    db.internIcon.deleteMany({ where: { internId } }),
    db.intern.update({ where: { id: internId }, data: { iconSha256: null } }),
  ])
}

export async function iconOf(db: Db, internId: string) {
  const icon = await db.internIcon.findUnique({ where: { internId } })
  return icon && { contentType: icon.contentType, bytes: Buffer.from(icon.bytes), sha256: icon.sha256 }
}
