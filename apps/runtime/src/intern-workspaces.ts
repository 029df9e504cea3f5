import { createHash } from 'node:crypto'
import { mkdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { WORKSPACE_FILE_MAX_BYTES } from '@roster/protocol'
import { ownWorkspace } from './confinement.js'
import { restoreSnapshot, SnapshotTooLarge, takeSnapshot, workspaceFingerprint } from './workspace-snapshots.js'
import { writeWorkspaceFile } from './workspace-files.js'
import type { HostedIntern } from './hosted-intern.js'
import type { InternsDeps } from './interns-deps.js'

// The interns' local state on this host (RUNTIME_DATA_DIR/interns/<id>: its workspace and its
// sessions' cache), made anew from the record and the latest snapshot when an intern is placed here,
// and its workspace kept off the host (snapshotted) when it changed.

/** What an empty workspace's fingerprint is (a new intern's, or one with no snapshot): nothing to snapshot. */
const EMPTY_WORKSPACE = createHash('sha256').digest('hex')

export class InternWorkspaces {
  /** The directory of every intern's, made once. */
  private internsDir?: Promise<void>

  constructor(private readonly deps: InternsDeps) {}

  dir(id: string) {
    return join(this.deps.config.RUNTIME_DATA_DIR, 'interns', id)
  }

  workspace(id: string) {
    return join(this.dir(id), 'workspace')
  }

  /** Its local state gone (it lives on in the record). */
  remove(id: string) {
    return rm(this.dir(id), { recursive: true, force: true })
  }

  /** Its local state made anew: sessions to be read from the record, the workspace from its latest snapshot. */
  async restore(id: string, hasSnapshot: boolean): Promise<string> {
    const dir = this.dir(id)
    await rm(dir, { recursive: true, force: true })
    // Passable, not listable, on the way to the workspace: the sandbox user mounts it from there.
    this.internsDir ??= mkdir(join(this.deps.config.RUNTIME_DATA_DIR, 'interns'), {
      recursive: true,
      mode: 0o711,
    }).then(() => {})
    await this.internsDir
    await mkdir(dir, { mode: 0o711 })
    const workspace = join(dir, 'workspace')
    await mkdir(workspace, { recursive: true })
    await ownWorkspace(workspace, this.deps.user)
    // A new intern has none: no call for it.
    const snapshot = hasSnapshot ? await this.deps.fleet.getSnapshot(id) : undefined
    if (!snapshot) return EMPTY_WORKSPACE
    if (this.deps.commands.mode === 'refused') {
      this.deps.log.warn(
        { intern: id },
        'a workspace snapshot cannot be restored on this host: it cannot run commands (no bubblewrap)',
      )
      return EMPTY_WORKSPACE
    }
    await restoreSnapshot(this.deps.commands.run, workspace, snapshot)
    return workspaceFingerprint(workspace)
  }

  /** Puts a file into the intern's workspace, as its own file tools write (in its sandbox). */
  putFile(intern: HostedIntern, path: string, bytes: Uint8Array) {
    return writeWorkspaceFile(join(this.dir(intern.id), 'workspace'), path, bytes, {
      timeoutMs: 30_000,
      maxBytes: WORKSPACE_FILE_MAX_BYTES,
    })
  }

  /** The workspace kept off the host, if it changed since it last was (one snapshot at a time per intern). */
  snapshot(intern: HostedIntern, { strict = false }: { strict?: boolean } = {}): Promise<void> {
    const take = async () => {
      if (this.deps.commands.mode === 'refused') return
      const workspace = join(this.dir(intern.id), 'workspace')
      const fingerprint = await workspaceFingerprint(workspace)
      if (fingerprint === intern.snapshotOf) return
      try {
        const bytes = await takeSnapshot(
          this.deps.commands.run,
          workspace,
          this.deps.config.RUNTIME_SNAPSHOT_MAX_MB * 1024 * 1024,
        )
        await this.deps.fleet.putSnapshot(intern.id, bytes)
        intern.snapshotOf = fingerprint
      } catch (err) {
        const level = err instanceof SnapshotTooLarge ? 'warn' : 'error'
        this.deps.log[level]({ err, intern: intern.id }, 'the workspace snapshot was not kept')
        if (strict) throw err
      }
    }
    const next = (intern.snapshotting ?? Promise.resolve()).then(take, take)
    intern.snapshotting = next
    return next
  }
}
