import { z } from 'zod'
import { errorOf, toolError, type SandboxResult, type ServerTool, type ServerToolKind } from './tool.js'
import { SandboxEnvironment, sandboxOf } from './sandbox-environment.js'
import { createdText, updatedText } from './v4a.js'

// `openrouter:apply_patch`: the model proposes a file change as a V4A diff (OpenAI's apply_patch
// format: create, update or delete a file); Roster checks the patch's syntax and hands the call to
// the client, which applies it and gives the result back as `apply_patch_call_output` on the next
// turn (OpenRouter's human-in-the-loop engine). A patch that does not read is answered to the model
// with what is wrong, so it can correct itself, and never reaches the client. No endpoint here
// advertises a native apply_patch, so `auto` and `native` come to the same check, as OpenRouter's
// `native` does where the endpoint has none. The diff is handed over whole (one delta), as
// OpenRouter's check does. Roster's own `sandbox` engine applies it instead in the request's gateway
// sandbox, where its `openrouter:bash` and `openrouter:shell` commands run (files up to 64 KB).

const Parameters = z.object({
  engine: z.enum(['auto', 'native', 'openrouter', 'sandbox'], 'is auto, native, openrouter or sandbox').optional(),
  /** Where the `sandbox` engine applies it (as `openrouter:bash`'s: the same container as the request's commands). */
  environment: SandboxEnvironment.optional(),
})

/** Most characters of a command the runtime hosts take: a file the sandbox engine writes must fit in one, as base64. */
const MAX_COMMAND = 100_000
/** Most bytes of a file the sandbox engine writes (base64 of it, and the command around it, within MAX_COMMAND). */
const MAX_SANDBOX_FILE = 64 * 1024

/** A path as one shell word. */
const quoted = (path: string) => `'${path.replace(/'/g, `'\\''`)}'`

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

const DESCRIPTION =
  'Creates, updates or deletes one file with a V4A diff. create_file: every line of the diff starts with "+". update_file: hunks that each start with "@@" (optionally followed by a line the hunk comes after), then context lines starting with " ", removed lines with "-", added lines with "+". delete_file: no diff.'

/** Writes a file's text in the sandbox (its directories made), or says why it cannot. */
async function writeInSandbox(
  run: (command: string) => Promise<SandboxResult>,
  path: string,
  text: string,
): Promise<string | undefined> {
  const bytes = Buffer.from(text, 'utf8')
  if (bytes.length > MAX_SANDBOX_FILE)
    return `the file would be larger than ${MAX_SANDBOX_FILE} bytes, more than the sandbox engine writes`
  const command = `mkdir -p -- "$(dirname -- ${quoted(path)})" && printf %s '${bytes.toString('base64')}' | base64 -d > ${quoted(path)}`
  if (command.length > MAX_COMMAND) return 'the file is too large for the sandbox engine'
  const r = await run(command)
  return r.exit_code === 0 ? undefined : r.stderr.trim() || `exit ${r.exit_code}`
}

/** Applies an operation in the request's sandbox: what was done, or why it was not. */
async function applyInSandbox(op: PatchOperation, run: (command: string) => Promise<SandboxResult>) {
  if (op.type === 'delete_file') {
    const r = await run(`rm -- ${quoted(op.path)}`)
    return r.exit_code === 0
      ? { applied: `deleted ${op.path}` }
      : toolError(`the patch was not applied: ${r.stderr.trim()}`)
  }
  if (op.type === 'create_file') {
    const failed = await writeInSandbox(run, op.path, createdText(op.diff!))
    return failed ? toolError(`the patch was not applied: ${failed}`) : { applied: `created ${op.path}` }
  }
  const read = await run(`base64 -w0 -- ${quoted(op.path)}`)
  if (read.exit_code !== 0) return toolError(`the patch was not applied: ${read.stderr.trim()}`)
  if (read.truncated) return toolError('the patch was not applied: the file is too large for the sandbox engine')
  let current: string
  try {
    current = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(read.stdout.trim(), 'base64'))
  } catch {
    return toolError(`the patch was not applied: ${op.path} is not a text file`)
  }
  const updated = updatedText(current, op.diff!)
  if ('problem' in updated) return toolError(`the patch was not applied: ${updated.problem}`)
  const failed = await writeInSandbox(run, op.path, updated.text)
  return failed ? toolError(`the patch was not applied: ${failed}`) : { applied: `updated ${op.path}` }
}

export const applyPatch: ServerToolKind<z.infer<typeof Parameters>> = {
  type: 'openrouter:apply_patch',
  parameters: Parameters,
  offer: (p) => (p.engine === 'sandbox' ? sandboxed(p) : handedOver()),
}

/**
 * Roster's `sandbox` engine: the patch is applied in the request's gateway sandbox (the one its
 * `openrouter:bash` and `openrouter:shell` commands run in), and the model reads what came of it.
 */
function sandboxed(p: z.infer<typeof Parameters>): ServerTool {
  return {
    type: 'openrouter:apply_patch',
    definition: {
      ...handedOver().definition,
      description: `${DESCRIPTION} The patch is applied in your sandboxed workspace.`,
    },
    async run(args, ctx) {
      const op = operationOf(args)
      if (typeof op === 'string') return toolError(op)
      const problem = patchProblem(op)
      if (problem) return toolError(`the patch was not applied: ${problem}`)
      if (!ctx.sandbox) return toolError('no runtime host is there to apply the patch')
      const at = sandboxOf(p.environment, ctx.sandbox)
      const port = ctx.sandbox.port
      try {
        return await applyInSandbox(op, (command) => port.run(at.key, command, undefined, at.network))
      } catch (err) {
        return toolError(`the patch could not be applied: ${(err as Error).message}`)
      }
    },
    itemFields(args, output) {
      const op = operationOf(args)
      const error = errorOf(output)
      return { ...(typeof op === 'string' ? {} : { operation: op }), ...(error ? { error } : {}) }
    },
  }
}

/** OpenRouter's human-in-the-loop engine: checked here, handed to the client to apply. */
function handedOver(): ServerTool {
  return {
    type: 'openrouter:apply_patch',
    handsOver: true,
    definition: {
      name: 'apply_patch',
      description: `${DESCRIPTION} The user applies it.`,
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
  }
}
