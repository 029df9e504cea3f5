import { posix } from 'node:path'
import { runSandboxed, type CommandResult } from './sandbox.js'

// An intern's file tools (read_file, write_file, list_files), confined to its workspace. They run
// as commands in the intern's own sandbox rather than as file calls of the host: the host's view
// of the workspace holds symbolic links the intern made, which the host would follow out of it,
// and a check before an open can be raced by the intern's own commands. Inside the sandbox there is
// nothing of the host's to reach, whatever a link says. Paths are the intern's view: relative to
// /workspace, or absolute under it.

export class WorkspacePathError extends Error {
  override name = 'WorkspacePathError'
}

export interface FileToolLimits {
  /** Longest a file operation may take. */
  timeoutMs: number
  /** Most bytes read_file returns and write_file accepts; list_files' listing is cut at this size too. */
  maxBytes: number
}

export const DEFAULT_FILE_LIMITS: FileToolLimits = { timeoutMs: 10_000, maxBytes: 1024 * 1024 }

/** The path as the sandbox sees it, refused unless it lies in the workspace. */
export function workspacePath(path: string): string {
  if (typeof path !== 'string' || path.length === 0) throw new WorkspacePathError('give a path in the workspace')
  if (path.includes('\0')) throw new WorkspacePathError('a path cannot hold a NUL character')
  const resolved = posix.resolve('/workspace', path)
  if (resolved !== '/workspace' && !resolved.startsWith('/workspace/'))
    throw new WorkspacePathError(`${path} is outside the workspace`)
  return resolved
}

const fail = (what: string, res: CommandResult) =>
  new WorkspacePathError(
    res.timedOut
      ? `${what}: timed out`
      : `${what}: ${res.stderr.trim().replace(/^(head|tee|find|mkdir|bash): /, '') || `exit ${res.exitCode}`}`,
  )

/** A file's content (as UTF-8), at most maxBytes of it. */
export async function readWorkspaceFile(
  workspace: string,
  path: string,
  limits = DEFAULT_FILE_LIMITS,
): Promise<{ path: string; content: string; truncated: boolean }> {
  const target = workspacePath(path)
  const res = await runSandboxed('test -f "$1" || { echo "$1: not a file" >&2; exit 1; }; head -c "$2" -- "$1"', {
    workspace,
    timeoutMs: limits.timeoutMs,
    maxOutputBytes: limits.maxBytes + 1,
    args: [target, String(limits.maxBytes + 1)],
  })
  if (res.exitCode !== 0 && !res.truncated) throw fail(`cannot read ${path}`, res)
  const truncated = Buffer.byteLength(res.stdout) > limits.maxBytes || res.truncated
  return {
    path: target,
    content: truncated ? Buffer.from(res.stdout).subarray(0, limits.maxBytes).toString('utf8') : res.stdout,
    truncated,
  }
}

/** Writes (creates or replaces) a file, making its directories. */
export async function writeWorkspaceFile(
  workspace: string,
  path: string,
  content: string | Uint8Array,
  limits = DEFAULT_FILE_LIMITS,
): Promise<{ path: string; bytes: number }> {
  const target = workspacePath(path)
  if (target === '/workspace') throw new WorkspacePathError('give a file path, not the workspace itself')
  const bytes = typeof content === 'string' ? Buffer.from(content, 'utf8') : Buffer.from(content)
  if (bytes.length > limits.maxBytes)
    throw new WorkspacePathError(`${path}: ${bytes.length} bytes is more than the ${limits.maxBytes} a write may hold`)
  const res = await runSandboxed('mkdir -p -- "$(dirname -- "$1")" && cat > "$1"', {
    workspace,
    timeoutMs: limits.timeoutMs,
    maxOutputBytes: 4096,
    args: [target],
    input: bytes,
  })
  if (res.exitCode !== 0) throw fail(`cannot write ${path}`, res)
  return { path: target, bytes: bytes.length }
}

export interface ListedFile {
  path: string
  type: 'file' | 'directory' | 'link' | 'other'
  bytes: number
}

/** The entries under a directory of the workspace, to `depth` levels (1: its own entries). */
export async function listWorkspaceFiles(
  workspace: string,
  path = '.',
  depth = 1,
  limits = DEFAULT_FILE_LIMITS,
): Promise<{ path: string; entries: ListedFile[]; truncated: boolean }> {
  const target = workspacePath(path)
  const levels = Math.max(1, Math.min(10, Math.floor(depth)))
  const res = await runSandboxed(
    'test -d "$1" || { echo "$1: not a directory" >&2; exit 1; }; find "$1" -mindepth 1 -maxdepth "$2" -printf "%y %s %p\\0"',
    {
      workspace,
      timeoutMs: limits.timeoutMs,
      maxOutputBytes: limits.maxBytes,
      args: [target, String(levels)],
    },
  )
  if (res.exitCode !== 0 && !res.truncated) throw fail(`cannot list ${path}`, res)
  const records = res.stdout.split('\0')
  // A listing cut short ends in a partial record.
  if (res.truncated) records.pop()
  const kinds: Record<string, ListedFile['type']> = { f: 'file', d: 'directory', l: 'link' }
  const entries = records.filter(Boolean).map((r) => {
    const [kind, size, ...rest] = r.split(' ')
    return { path: rest.join(' '), type: kinds[kind!] ?? 'other', bytes: Number(size) }
  })
  entries.sort((a, b) => (a.path < b.path ? -1 : 1))
  return { path: target, entries, truncated: res.truncated }
}
