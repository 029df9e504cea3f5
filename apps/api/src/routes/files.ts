import type { FastifyPluginAsync, FastifyRequest } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import multipart from '@fastify/multipart'
import { z } from 'zod'
import { AppError, managesAccount } from '@roster/shared'
import { workspaceByRef } from '@roster/shared/repositories'
import { requireKey } from '../plugins/auth.js'
import { refuseUnstorableText } from '../plugins/input-guards.js'
import { callerOf } from '../plugins/caller.js'
import type { AppDeps } from '../deps.js'
import type { WorkspaceFiles } from '../workspace-files.js'
import { FILE_ID, type FileRecord } from '@roster/gateway'

// The Files API (`client.files`): a workspace's files, uploaded (multipart `file`), listed, read,
// downloaded and deleted, in the official client's OpenRouter shape (`_shape: "openrouter"`). A key
// reaches its own workspace's files; a management key may name another workspace of its account
// (`workspace_id`). Files kept with a provider (`provider`: openai, anthropic, with the workspace's
// own key) are not served: a 400 says so. `openrouter:files` works on the same files.

const Scope = z.object({
  workspace_id: z.string().max(100).optional(),
  provider: z.string().max(32).optional(),
})
const ListQuery = Scope.extend({
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  cursor: z.string().max(200).optional(),
  after: z.string().max(200).optional(),
  after_id: z.string().max(200).optional(),
  before_id: z.string().max(200).optional(),
  order: z.string().max(8).optional(),
})
const ById = z.object({ file_id: z.string().min(1).max(200) })

/** A file as the official client reads it. */
const shown = (f: FileRecord) => ({
  _shape: 'openrouter' as const,
  id: f.id,
  type: 'file' as const,
  filename: f.filename,
  mime_type: f.mime_type,
  size_bytes: f.size_bytes,
  created_at: f.created_at,
  downloadable: true,
})

const notFound = (id: string) =>
  new AppError('not_found', `no file ${JSON.stringify(id.slice(0, 80))} in this workspace`)

/** A file id as the store makes them; anything else is no file (404), never sent to the database. */
const checkedId = (id: string) => {
  if (!FILE_ID.test(id)) throw notFound(id)
  return id
}

export const fileRoutes =
  (deps: AppDeps): FastifyPluginAsync =>
  async (app) => {
    const store: WorkspaceFiles = deps.files
    app.addHook('preValidation', refuseUnstorableText)
    await app.register(multipart, {
      limits: { fileSize: store.limits.maxBytes, files: 1, fields: 10, parts: 12, fieldSize: 1024 },
    })
    const api = app.withTypeProvider<ZodTypeProvider>()
    const anyKey = requireKey(deps.authenticate)
    const config = { errorWire: 'gateway' as const }

    /** The workspace the request reaches: the key's own, or (a management key) another of its account. */
    const workspaceOf = async (req: FastifyRequest, q: z.infer<typeof Scope>): Promise<string> => {
      if (q.provider)
        throw new AppError(
          'invalid_body',
          `provider ${JSON.stringify(q.provider.slice(0, 32))}: files kept with a provider are not served by this Roster; omit provider to use its own storage`,
        )
      const caller = callerOf(req)
      if (!q.workspace_id || q.workspace_id === caller.workspaceId) return caller.workspaceId
      if (!managesAccount(caller))
        throw new AppError('management_key_required', "only a management key may reach another workspace's files")
      const found = await workspaceByRef(deps.db, caller.accountId, q.workspace_id)
      if (!found)
        throw new AppError('not_found', `no workspace ${JSON.stringify(q.workspace_id.slice(0, 80))} in this account`)
      return found.id
    }

    api.post(
      '/files',
      {
        onRequest: anyKey,
        config,
        schema: { operationId: 'uploadFile', summary: 'Upload a file', querystring: Scope },
      },
      async (req) => {
        const workspaceId = await workspaceOf(req, req.query)
        if (!req.isMultipart())
          throw new AppError('unsupported_media_type', 'send the file as multipart/form-data, its part named "file"')
        const part = await req.file().catch((err: Error & { statusCode?: number }) => {
          throw new AppError(err.statusCode === 413 ? 'payload_too_large' : 'invalid_body', err.message)
        })
        if (!part || part.fieldname !== 'file') throw new AppError('invalid_body', 'the form has no part named "file"')
        const content = await part.toBuffer().catch((err: Error & { statusCode?: number }) => {
          throw new AppError(
            err.statusCode === 413 ? 'payload_too_large' : 'invalid_body',
            err.statusCode === 413 ? `a file may hold at most ${store.limits.maxBytes} bytes` : err.message,
          )
        })
        const filename = (part.filename || 'file').replace(/[\0/\\]/g, '_').slice(0, 255)
        const mimeType = /^[\w.+-]+\/[\w.+-]+$/.test(part.mimetype) ? part.mimetype : 'application/octet-stream'
        const keyId = callerOf(req).keyId
        return shown(await store.write(workspaceId, { filename, mimeType, content, keyId }))
      },
    )

    api.get(
      '/files',
      {
        onRequest: anyKey,
        config,
        schema: { operationId: 'listFiles', summary: 'List files', querystring: ListQuery },
      },
      async (req) => {
        const q = req.query
        if (q.before_id) throw new AppError('invalid_body', 'before_id is not served by this storage (list forward)')
        if (q.order && q.order !== 'asc')
          throw new AppError('invalid_body', 'order: only asc is served by this storage')
        const workspaceId = await workspaceOf(req, q)
        const after = q.cursor ?? q.after ?? q.after_id
        if (after !== undefined && !FILE_ID.test(after))
          throw new AppError(
            'invalid_body',
            `cursor: ${JSON.stringify(after.slice(0, 80))} is not a file id of this list`,
          )
        const { files, more } = await store.page(workspaceId, { limit: q.limit, after })
        const last = files.at(-1)?.id ?? null
        return {
          _shape: 'openrouter',
          data: files.map(shown),
          first_id: files[0]?.id ?? null,
          last_id: last,
          has_more: more,
          cursor: more ? last : null,
        }
      },
    )

    api.get(
      '/files/:file_id',
      {
        onRequest: anyKey,
        config,
        schema: { operationId: 'getFileMetadata', summary: "A file's metadata", params: ById, querystring: Scope },
      },
      async (req) => {
        const file = await store.get(await workspaceOf(req, req.query), checkedId(req.params.file_id))
        if (!file) throw notFound(req.params.file_id)
        return shown(file)
      },
    )

    api.get(
      '/files/:file_id/content',
      {
        onRequest: anyKey,
        config,
        schema: { operationId: 'downloadFileContent', summary: "A file's content", params: ById, querystring: Scope },
      },
      async (req, reply) => {
        const file = await store.find(await workspaceOf(req, req.query), { id: checkedId(req.params.file_id) })
        if (!file) throw notFound(req.params.file_id)
        return reply
          .type('application/octet-stream')
          .header('content-disposition', `attachment; filename*=UTF-8''${encodeURIComponent(file.filename)}`)
          .header('x-content-type-options', 'nosniff')
          .send(file.content)
      },
    )

    api.delete(
      '/files/:file_id',
      {
        onRequest: anyKey,
        config,
        schema: { operationId: 'deleteFile', summary: 'Delete a file', params: ById, querystring: Scope },
      },
      async (req) => {
        if (!(await store.remove(await workspaceOf(req, req.query), checkedId(req.params.file_id))))
          throw notFound(req.params.file_id)
        return { _shape: 'openrouter', id: req.params.file_id, type: 'file_deleted' }
      },
    )
  }
