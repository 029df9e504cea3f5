import { z } from 'zod'
import { errorOf, toolError, type ServerToolKind } from './tool.js'

// `openrouter:apply_patch`: the model proposes a file change as a V4A diff (OpenAI's apply_patch
// format: create, update or delete a file); Roster checks the patch's syntax and hands the call to
// the client, which applies it and gives the result back as `apply_patch_call_output` on the next
// turn (OpenRouter's human-in-the-loop engine). A patch that does not read is answered to the model
// with what is wrong, so it can correct itself, and never reaches the client. No endpoint here
// advertises a native apply_patch, so `auto` and `native` come to the same check, as OpenRouter's
// `native` does where the endpoint has none. The diff is handed over whole (one delta), as
// OpenRouter's check does.

const Parameters = z.object({
  engine: z.enum(['auto', 'native', 'openrouter'], 'is auto, native or openrouter').optional(),
})

export const PATCH_OPERATIONS = ['create_file', 'update_file', 'delete_file'] as const
export type PatchOperation = { type: (typeof PATCH_OPERATIONS)[number]; path: string; diff?: string }

/** Longest diff handed over (characters). */
const MAX_DIFF = 1_000_000

/** The lines of a diff, without the empty one after its last newline. */
const linesOf = (diff: string) => {
  const lines = diff.split('\n')
  if (lines.at(-1) === '') lines.pop()
  return lines.map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l))
}

/**
 * What is wrong with a V4A diff for its operation (undefined: nothing). A new file's lines are all
 * added (`+`); an update's are context (` `), removed (`-`) or added (`+`) lines under `@@` hunk
 * markers (which may name the context they follow), changing at least one line; `*** End of File`
 * may close a hunk. An empty line is read as an empty context line (models drop the space).
 */
export function patchProblem(op: PatchOperation): string | undefined {
  if (!op.path.trim()) return 'path is empty'
  if (op.path.includes('\0')) return 'path holds a NUL byte'
  if (op.type === 'delete_file') return undefined
  if (op.diff === undefined) return `diff is required to ${op.type === 'create_file' ? 'create' : 'update'} a file`
  if (op.diff.length > MAX_DIFF) return `diff is longer than ${MAX_DIFF} characters`
  const lines = linesOf(op.diff)
  for (const [i, line] of lines.entries()) {
    if (line.startsWith('@@') || line === '*** End of File') continue
    if (op.type === 'create_file') {
      if (!line.startsWith('+'))
        return `line ${i + 1} of a new file's diff must start with "+": ${JSON.stringify(line.slice(0, 80))}`
    } else if (line !== '' && !/^[ +-]/.test(line))
      return `line ${i + 1} must start with " ", "+", "-" or "@@": ${JSON.stringify(line.slice(0, 80))}`
  }
  if (op.type === 'update_file' && !lines.some((l) => /^[+-]/.test(l))) return 'the diff changes no line'
  return undefined
}

/** The operation a call's arguments name, or why they name none. */
export function operationOf(args: Record<string, unknown>): PatchOperation | string {
  const type = args.type
  if (typeof type !== 'string' || !(PATCH_OPERATIONS as readonly string[]).includes(type))
    return `type must be one of ${PATCH_OPERATIONS.join(', ')}`
  if (typeof args.path !== 'string') return 'path must be a string'
  if (args.diff !== undefined && typeof args.diff !== 'string') return 'diff must be a string'
  const op: PatchOperation = { type: type as PatchOperation['type'], path: args.path }
  if (type !== 'delete_file' && typeof args.diff === 'string') op.diff = args.diff
  return op
}

export const applyPatch: ServerToolKind<z.infer<typeof Parameters>> = {
  type: 'openrouter:apply_patch',
  parameters: Parameters,
  offer: () => ({
    type: 'openrouter:apply_patch',
    handsOver: true,
    definition: {
      name: 'apply_patch',
      description:
        'Creates, updates or deletes one file with a V4A diff, which the user applies. create_file: every line of the diff starts with "+". update_file: hunks that each start with "@@" (optionally followed by a line the hunk comes after), then context lines starting with " ", removed lines with "-", added lines with "+". delete_file: no diff.',
      parameters: {
        type: 'object',
        properties: {
          type: { type: 'string', enum: [...PATCH_OPERATIONS] },
          path: { type: 'string', description: 'The file, relative to the project root' },
          diff: { type: 'string', description: 'The V4A diff (not for delete_file)' },
        },
        required: ['type', 'path'],
        additionalProperties: false,
      },
    },
    async run(args) {
      const op = operationOf(args)
      if (typeof op === 'string') return toolError(op)
      const problem = patchProblem(op)
      return problem ? toolError(`the patch was not applied: ${problem}`) : { operation: op }
    },
    // A patch that did not read: its item shows the operation asked for (where it read) and why.
    itemFields(args, output) {
      const op = operationOf(args)
      const error = errorOf(output)
      return { ...(typeof op === 'string' ? {} : { operation: op }), ...(error ? { error } : {}) }
    },
  }),
}
