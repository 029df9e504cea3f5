import { z } from 'zod'
import { errorOf, toolError, type ServerToolKind } from './tool.js'

// `openrouter:files`: the model lists, reads, writes and edits the text files of the caller's
// workspace (the Files API's files, /api/v1/files), one operation a call, as OpenRouter documents
// the tool: text only (UTF-8; a binary file is refused), reads and writes capped, an edit
// copy-on-write (the result is a new file naming the one it came from; the original stays).
// The store is the API's (FilesPort); the tool sees the calling key's workspace only.

/** What a file id looks like (the store makes them): anything else names no file, and is never looked up. */
export const FILE_ID = /^file_[A-Za-z0-9_-]{1,64}$/

/** Most bytes one read or write handles (OpenRouter's 20 MB). */
const MAX_BYTES = 20 * 1024 * 1024
/** Most characters of a file the model is given in one read (the rest is said to be left out). */
const MAX_READ_CHARS = 200_000
const OPERATIONS = ['list', 'read', 'write', 'edit'] as const

const str = (v: unknown) => (typeof v === 'string' ? v : undefined)
const utf8 = new TextDecoder('utf-8', { fatal: true })

/** A file's text, or undefined when it is not UTF-8 text. */
function textOf(content: Buffer): string | undefined {
  try {
    const text = utf8.decode(content)
    return text.includes('\0') ? undefined : text
  } catch {
    return undefined
  }
}

/** A text file's type by its name (what a browser would call it), plain text otherwise. */
function mimeOf(filename: string): string {
  const ext = filename.toLowerCase().split('.').pop() ?? ''
  const types: Record<string, string> = {
    md: 'text/markdown',
    csv: 'text/csv',
    json: 'application/json',
    html: 'text/html',
    xml: 'application/xml',
    yaml: 'application/yaml',
    yml: 'application/yaml',
    js: 'text/javascript',
    ts: 'text/plain',
  }
  return types[ext] ?? 'text/plain'
}

const fileName = (s: string) => s.trim().length > 0 && s.length <= 255 && !/[\0/\\]/.test(s)

export const files: ServerToolKind<Record<string, never>> = {
  type: 'openrouter:files',
  parameters: z.object({}),
  offer: () => ({
    type: 'openrouter:files',
    definition: {
      name: 'files',
      description:
        "Lists, reads, writes or edits the text files of the user's workspace, one operation a call. list: the files (optionally those whose name holds `filename`). read: a file's text, by file_id or filename. write: a new file from filename and content. edit: replaces old_string (which must occur exactly once) with new_string in a file, writing the result as a new file (the original stays).",
      parameters: {
        type: 'object',
        properties: {
          operation: { type: 'string', enum: [...OPERATIONS] },
          file_id: { type: 'string', description: 'The file (read, edit)' },
          filename: {
            type: 'string',
            description: 'The file by name (read, edit), its name (write), or a filter (list)',
          },
          content: { type: 'string', description: 'The new file’s text (write)' },
          old_string: { type: 'string', description: 'The text to replace (edit)' },
          new_string: { type: 'string', description: 'What replaces it (edit)' },
        },
        required: ['operation'],
        additionalProperties: false,
      },
    },
    async run(args, ctx) {
      const store = ctx.files
      if (!store) return toolError('files are unavailable here: the request has no workspace')
      const { port, workspaceId, keyId } = store
      const operation = str(args.operation)
      const fileId = str(args.file_id)
      const filename = str(args.filename)
      if (fileId !== undefined && !FILE_ID.test(fileId))
        return toolError(`no file ${JSON.stringify(fileId.slice(0, 80))} in this workspace`)
      if (filename !== undefined && filename.includes('\0')) return toolError('filename holds a NUL byte')
      try {
        switch (operation) {
          case 'list': {
            const found = await port.list(workspaceId, { filename: filename || undefined, limit: 100 })
            return { result: { files: found } }
          }
          case 'read': {
            if (!fileId && !filename) return toolError('read needs file_id or filename')
            const file = await port.find(workspaceId, { id: fileId, filename })
            if (!file) return toolError(`no file ${fileId ?? filename} in this workspace`)
            const text = textOf(file.content)
            if (text === undefined)
              return toolError(`${file.filename} is not a text file (UTF-8); only text files are read`)
            const { content: _content, ...meta } = file
            return {
              result: {
                ...meta,
                content: text.slice(0, MAX_READ_CHARS),
                ...(text.length > MAX_READ_CHARS ? { truncated: true, characters: text.length } : {}),
              },
            }
          }
          case 'write': {
            const content = str(args.content)
            if (!filename || !fileName(filename))
              return toolError('write needs a filename (no slashes, at most 255 characters)')
            if (content === undefined) return toolError('write needs content')
            const bytes = Buffer.from(content, 'utf8')
            if (bytes.length > MAX_BYTES) return toolError(`content is larger than ${MAX_BYTES} bytes`)
            const written = await port.write(workspaceId, {
              filename,
              mimeType: mimeOf(filename),
              content: bytes,
              keyId,
            })
            return { result: written }
          }
          case 'edit': {
            const oldString = str(args.old_string)
            const newString = str(args.new_string)
            if (!fileId && !filename) return toolError('edit needs file_id or filename')
            if (!oldString || newString === undefined) return toolError('edit needs old_string and new_string')
            const file = await port.find(workspaceId, { id: fileId, filename })
            if (!file) return toolError(`no file ${fileId ?? filename} in this workspace`)
            const text = textOf(file.content)
            if (text === undefined)
              return toolError(`${file.filename} is not a text file (UTF-8); only text files are edited`)
            const at = text.indexOf(oldString)
            if (at < 0) return toolError(`old_string does not occur in ${file.filename}`)
            if (text.indexOf(oldString, at + 1) >= 0)
              return toolError(`old_string occurs more than once in ${file.filename}: give more of its context`)
            const edited = Buffer.from(text.slice(0, at) + newString + text.slice(at + oldString.length), 'utf8')
            if (edited.length > MAX_BYTES) return toolError(`the edited file is larger than ${MAX_BYTES} bytes`)
            const written = await port.write(workspaceId, {
              filename: file.filename,
              mimeType: file.mime_type,
              content: edited,
              sourceFileId: file.id,
              keyId,
            })
            return { result: { ...written, source_file_id: file.id } }
          }
          default:
            return toolError(`operation must be one of ${OPERATIONS.join(', ')}`)
        }
      } catch (err) {
        return toolError((err as Error).message)
      }
    },
    itemFields(args, output) {
      const error = errorOf(output)
      const result = (output as { result?: { id?: unknown } } | null)?.result
      const id = str(result?.id) ?? str(args.file_id)
      return {
        ...(str(args.operation) ? { operation: str(args.operation) } : {}),
        ...(id ? { file_id: id } : {}),
        ...(str(args.filename) ? { filename: str(args.filename) } : {}),
        ...(result !== undefined ? { result: JSON.stringify(result) } : {}),
        ...(error ? { error } : {}),
      }
    },
  }),
}
