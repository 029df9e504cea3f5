import { randomBytes } from 'node:crypto'
import type { FileRecord, FilesPort } from '@roster/gateway'
import { AppError, type Db } from '@roster/shared'

// A workspace's files (the Files API and `openrouter:files`): kept in Postgres whole, each within
// FILES_MAX_BYTES, a workspace's together within FILES_WORKSPACE_MAX_BYTES (checked under a lock of
// the workspace's, so two uploads at once cannot both pass a quota only one fits).

export interface FilesLimits {
  maxBytes: number
  workspaceMaxBytes: number
}

/** `file_`, then the time (so ids sort as the files were made) and randomness. */
export function newFileId(): string {
  return `file_${Date.now().toString(36).padStart(9, '0')}${randomBytes(10).toString('base64url').slice(0, 14)}`
}

type Row = {
  id: string
  filename: string
  mimeType: string
  sizeBytes: number
  sourceFileId: string | null
  createdAt: Date
}

/** A file as the API shows it. */
export const fileRecord = (r: Row): FileRecord => ({
  id: r.id,
  filename: r.filename,
  mime_type: r.mimeType,
  size_bytes: r.sizeBytes,
  created_at: r.createdAt.toISOString(),
  source_file_id: r.sourceFileId,
})

const META = { id: true, filename: true, mimeType: true, sizeBytes: true, sourceFileId: true, createdAt: true } as const

export class WorkspaceFiles implements FilesPort {
  constructor(
    private readonly db: Db,
    readonly limits: FilesLimits,
  ) {}

  async write(
    workspaceId: string,
    f: { filename: string; mimeType: string; content: Buffer; sourceFileId?: string; keyId?: string },
  ): Promise<FileRecord> {
    if (f.content.length > this.limits.maxBytes)
      throw new AppError('payload_too_large', `a file may hold at most ${this.limits.maxBytes} bytes`)
    const row = await this.db.$transaction(async (tx) => {
      await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`files:${workspaceId}`}))`
      const used = await tx.workspaceFile.aggregate({ where: { workspaceId }, _sum: { sizeBytes: true } })
      if ((used._sum.sizeBytes ?? 0) + f.content.length > this.limits.workspaceMaxBytes)
        throw new AppError(
          'payload_too_large',
          `the workspace's files would hold more than ${this.limits.workspaceMaxBytes} bytes: delete some first`,
        )
      return tx.workspaceFile.create({
        data: {
          id: newFileId(),
          workspaceId,
          filename: f.filename,
          mimeType: f.mimeType,
          sizeBytes: f.content.length,
          content: new Uint8Array(f.content),
          sourceFileId: f.sourceFileId ?? null,
          keyId: f.keyId ?? null,
        },
        select: META,
      })
    })
    return fileRecord(row)
  }

  /** A page of the workspace's files, oldest first, after `after` (an id). */
  async page(workspaceId: string, q: { limit: number; after?: string; filename?: string }) {
    const rows = await this.db.workspaceFile.findMany({
      where: {
        workspaceId,
        ...(q.after ? { id: { gt: q.after } } : {}),
        ...(q.filename ? { filename: { contains: q.filename, mode: 'insensitive' as const } } : {}),
      },
      orderBy: { id: 'asc' },
      take: q.limit + 1,
      select: META,
    })
    return { files: rows.slice(0, q.limit).map(fileRecord), more: rows.length > q.limit }
  }

  async list(workspaceId: string, q: { filename?: string; limit: number }): Promise<FileRecord[]> {
    return (await this.page(workspaceId, q)).files
  }

  async get(workspaceId: string, id: string): Promise<FileRecord | undefined> {
    const row = await this.db.workspaceFile.findFirst({ where: { id, workspaceId }, select: META })
    return row ? fileRecord(row) : undefined
  }

  async find(workspaceId: string, by: { id?: string; filename?: string }) {
    const row = await this.db.workspaceFile.findFirst({
      where: { workspaceId, ...(by.id ? { id: by.id } : { filename: by.filename ?? '' }) },
      orderBy: { id: 'desc' },
      select: { ...META, content: true },
    })
    return row ? { ...fileRecord(row), content: Buffer.from(row.content) } : undefined
  }

  async remove(workspaceId: string, id: string): Promise<boolean> {
    return (await this.db.workspaceFile.deleteMany({ where: { id, workspaceId } })).count > 0
  }
}
