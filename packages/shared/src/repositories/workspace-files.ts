import type { Db } from '../db.js'

// workspace_files: a workspace's files (the Files API and `openrouter:files`), each kept whole.

export interface WorkspaceFileRow {
  id: string
  filename: string
  mimeType: string
  sizeBytes: number
  sourceFileId: string | null
  createdAt: Date
}

const META = { id: true, filename: true, mimeType: true, sizeBytes: true, sourceFileId: true, createdAt: true } as const

/**
 * Stores a file unless the workspace's files would then hold more than `workspaceMaxBytes`
 * (undefined then), checked under a lock of the workspace's so that two stores at once cannot both
 * pass a quota only one fits.
 */
export function insertWorkspaceFileWithin(
  db: Db,
  file: {
    id: string
    workspaceId: string
    filename: string
    mimeType: string
    content: Buffer
    sourceFileId: string | null
    keyId: string | null
  },
  workspaceMaxBytes: number,
): Promise<WorkspaceFileRow | undefined> {
  return db.$transaction(async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`files:${file.workspaceId}`}))`
    const used = await tx.workspaceFile.aggregate({
      where: { workspaceId: file.workspaceId },
      _sum: { sizeBytes: true },
    })
    if ((used._sum.sizeBytes ?? 0) + file.content.length > workspaceMaxBytes) return undefined
    return tx.workspaceFile.create({
      data: { ...file, sizeBytes: file.content.length, content: new Uint8Array(file.content) },
      select: META,
    })
  })
}

/** The workspace's files after `after` (an id; ids sort as files were made), `limit + 1` of them to tell if more follow. */
export function workspaceFilesAfter(
  db: Db,
  workspaceId: string,
  q: { limit: number; after?: string; filename?: string },
): Promise<WorkspaceFileRow[]> {
  return db.workspaceFile.findMany({
    where: {
      workspaceId,
      ...(q.after ? { id: { gt: q.after } } : {}),
      ...(q.filename ? { filename: { contains: q.filename, mode: 'insensitive' as const } } : {}),
    },
    orderBy: { id: 'asc' },
    take: q.limit + 1,
    select: META,
  })
}

export async function workspaceFile(db: Db, workspaceId: string, id: string): Promise<WorkspaceFileRow | undefined> {
  return (await db.workspaceFile.findFirst({ where: { id, workspaceId }, select: META })) ?? undefined
}

/** A file with its bytes, by id, else the newest of that exact name. */
export async function workspaceFileContent(
  db: Db,
  workspaceId: string,
  by: { id?: string; filename?: string },
): Promise<(WorkspaceFileRow & { content: Uint8Array }) | undefined> {
  return (
    (await db.workspaceFile.findFirst({
      where: { workspaceId, ...(by.id ? { id: by.id } : { filename: by.filename ?? '' }) },
      orderBy: { id: 'desc' },
      select: { ...META, content: true },
    })) ?? undefined
  )
}

/** Whether the workspace had that file (it has not now). */
export async function deleteWorkspaceFile(db: Db, workspaceId: string, id: string): Promise<boolean> {
  return (await db.workspaceFile.deleteMany({ where: { id, workspaceId } })).count > 0
}
