import { createHash } from 'node:crypto'
import { mkdir, readdir, rm, stat, utimes } from 'node:fs/promises'
import { join } from 'node:path'
import type { CommandResult } from './command-types.js'
import { ownWorkspace } from './confinement.js'
import type { CommandRunner, Confinement } from './sandbox.js'

// The gateway's sandboxes: where `openrouter:bash` runs a request's commands, on a runtime host and
// never in the API. Each sandbox is a workspace of its own (a request's, or a session's), its
// commands confined as interns' are (bubblewrap, the host's limits, no network), and discarded when
// the request ends or, for a session, once unused for `idleMs`. A host runs at most `concurrency` of
// them at once: past that a command is refused (busy), not queued without bound.

export class SandboxBusy extends Error {}

export interface GatewaySandboxOptions {
  dataDir: string
  run: CommandRunner
  /** Longest one command may run, and most bytes kept of each of its outputs. */
  timeoutMs: number
  maxOutputBytes: number
  concurrency: number
  idleMs: number
  /** The unprivileged user sandboxed commands run as (the host running as root): the workspace is theirs. */
  user?: Confinement['user']
}

/** A sandbox's key (a request's or a session's, made by the API) as a directory name: its digest. */
const dirName = (key: string) => createHash('sha256').update(key).digest('hex').slice(0, 40)

export class GatewaySandboxes {
  private running = 0
  private readonly root: string
  private readonly sweeper: NodeJS.Timeout

  constructor(private readonly opts: GatewaySandboxOptions) {
    this.root = join(opts.dataDir, 'gateway-sandboxes')
    this.sweeper = setInterval(() => void this.sweep().catch(() => {}), Math.min(60_000, opts.idleMs)).unref()
  }

  async run(key: string, command: string, timeoutMs: number | undefined, signal?: AbortSignal): Promise<CommandResult> {
    if (this.running >= this.opts.concurrency)
      throw new SandboxBusy(`this host runs ${this.opts.concurrency} sandboxed commands at once`)
    this.running++
    try {
      const workspace = join(this.root, dirName(key))
      // The sandbox user passes through the root (it lists nothing there) to its own workspace.
      await mkdir(this.root, { recursive: true, mode: 0o711 })
      await mkdir(workspace, { recursive: true, mode: 0o700 })
      await ownWorkspace(workspace, this.opts.user)
      const now = new Date()
      await utimes(workspace, now, now)
      return await this.opts.run(
        command,
        {
          workspace,
          timeoutMs: Math.min(timeoutMs ?? this.opts.timeoutMs, this.opts.timeoutMs),
          maxOutputBytes: this.opts.maxOutputBytes,
        },
        signal,
      )
    } finally {
      this.running--
    }
  }

  async discard(key: string) {
    await rm(join(this.root, dirName(key)), { recursive: true, force: true })
  }

  /** Removes the sandboxes unused for longer than `idleMs`. */
  async sweep() {
    const names = await readdir(this.root).catch(() => [] as string[])
    const before = Date.now() - this.opts.idleMs
    for (const name of names) {
      const at = join(this.root, name)
      const s = await stat(at).catch(() => undefined)
      if (s && s.mtimeMs < before) await rm(at, { recursive: true, force: true })
    }
  }

  stop() {
    clearInterval(this.sweeper)
  }
}
