import { randomBytes } from 'node:crypto'
import type { FileRecord, FilesPort } from '@roster/gateway'
import { AppError, type Db } from '@roster/shared'
import {
  deleteWorkspaceFile,
  insertWorkspaceFileWithin,
  workspaceFile,
  workspaceFileContent,
  workspaceFilesAfter,
  type WorkspaceFileRow,
} from '@roster/shared/repositories'

// A workspace's files (the Files API and `openrouter:files`): kept in Postgres whole
// (repositories/workspace-files.ts), each within FILES_MAX_BYTES, a workspace's together within
// FILES_WORKSPACE_MAX_BYTES.

export interface FilesLimits {
  maxBytes: number
  workspaceMaxBytes: number
}

/** `file_`, then the time (so ids sort as the files were made) and randomness. */
export function newFileId(): string {
  return `file_${Date.now().toString(36).padStart(9, '0')}${randomBytes(10).toString('base64url').slice(0, 14)}`
}

/** A file as the API shows it. */
export const fileRecord = (r: WorkspaceFileRow): FileRecord => ({
  id: r.id,
  filename: r.filename,
  mime_type: r.mimeType,
  size_bytes: r.sizeBytes,
  created_at: r.createdAt.toISOString(),
  source_file_id: r.sourceFileId,
})

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
    const row = await insertWorkspaceFileWithin(
      this.db,
      {
        id: newFileId(),
        workspaceId,
        filename: f.filename,
        mimeType: f.mimeType,
        content: f.content,
        sourceFileId: f.sourceFileId ?? null,
        keyId: f.keyId ?? null,
      },
      this.limits.workspaceMaxBytes,
    )
    if (!row)
      throw new AppError(
        'payload_too_large',
        `the workspace's files would hold more than ${this.limits.workspaceMaxBytes} bytes: delete some first`,
      )
    return fileRecord(row)
  }

  /** A page of the workspace's files, oldest first, after `after` (an id). */
  async page(workspaceId: string, q: { limit: number; after?: string; filename?: string }) {
    const rows = await workspaceFilesAfter(this.db, workspaceId, q)
    return { files: rows.slice(0, q.limit).map(fileRecord), more: rows.length > q.limit }
  }

  async list(workspaceId: string, q: { filename?: string; limit: number }): Promise<FileRecord[]> {
    return (await this.page(workspaceId, q)).files
  }

  async get(workspaceId: string, id: string): Promise<FileRecord | undefined> {
    const row = await workspaceFile(this.db, workspaceId, id)
    return row ? fileRecord(row) : undefined
  }

  async find(workspaceId: string, by: { id?: string; filename?: string }) {
    const row = await workspaceFileContent(this.db, workspaceId, by)
    return row ? { ...fileRecord(row), content: Buffer.from(row.content) } : undefined
  }

  async remove(workspaceId: string, id: string): Promise<boolean> {
    return deleteWorkspaceFile(this.db, workspaceId, id)
  }
}
