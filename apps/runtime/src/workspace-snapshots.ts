import { createHash } from 'node:crypto'
import { lstat, readdir } from 'node:fs/promises'
import { join, relative } from 'node:path'
import type { CommandRunner } from './sandbox.js'

// An intern's workspace kept off its host: a gzipped tar taken after a turn that changed files
// (and on drain, suspend and archive), restored on the host the intern is placed on next, before it
// runs. The tar is made and unpacked by `tar` inside the intern's own sandbox, as the intern's user:
// an archive the intern's files shaped (its links, its names) is never unpacked by the host itself.

/**
 * What a workspace holds, in one digest: every entry's path, kind, size and modification time,
 * read without following links. The same digest after a turn: nothing to snapshot.
 */
export async function workspaceFingerprint(dir: string): Promise<string> {
  const hash = createHash('sha256')
  const pending = [dir]
  while (pending.length) {
    const at = pending.pop()!
    let entries
    try {
      entries = await readdir(at, { withFileTypes: true })
    } catch {
      continue
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : 1))
    for (const entry of entries) {
      const path = join(at, entry.name)
      const stat = await lstat(path).catch(() => undefined)
      if (!stat) continue
      hash.update(`${relative(dir, path)}\0${stat.mode}\0${stat.size}\0${stat.mtimeMs}\n`)
      if (entry.isDirectory()) pending.push(path)
    }
  }
  return hash.digest('hex')
}

export class SnapshotTooLarge extends Error {
  override name = 'SnapshotTooLarge'
}

/** The workspace as a gzipped tar, made in its sandbox; refused past `maxBytes`. */
export async function takeSnapshot(run: CommandRunner, workspace: string, maxBytes: number): Promise<Buffer> {
  const res = await run('tar -czf - -C /workspace .', {
    workspace,
    timeoutMs: 120_000,
    maxOutputBytes: maxBytes + 1,
    binary: true,
  })
  if (res.truncated)
    throw new SnapshotTooLarge(
      `the workspace is larger than a snapshot may be (${Math.round(maxBytes / 1024 / 1024)} MiB compressed, RUNTIME_SNAPSHOT_MAX_MB)`,
    )
  if (res.exitCode !== 0)
    throw new Error(`the workspace could not be archived: ${res.stderr.trim() || `exit ${res.exitCode}`}`)
  return res.stdoutBytes!
}

/** Unpacks a snapshot into the (empty) workspace, in its sandbox. */
export async function restoreSnapshot(run: CommandRunner, workspace: string, bytes: Buffer): Promise<void> {
  const res = await run('tar -xzf - -C /workspace --no-same-owner', {
    workspace,
    timeoutMs: 120_000,
    maxOutputBytes: 64 * 1024,
    input: bytes,
  })
  if (res.exitCode !== 0)
    throw new Error(`the workspace snapshot could not be restored: ${res.stderr.trim() || `exit ${res.exitCode}`}`)
}
