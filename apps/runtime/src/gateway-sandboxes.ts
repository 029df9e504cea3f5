import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, readdir, rm, stat, utimes } from 'node:fs/promises'
import { join } from 'node:path'
import type { CommandResult } from './command-types.js'
import { ownWorkspace } from './confinement.js'
import type { CommandRunner, Confinement } from './sandbox.js'
import type { EgressProxies } from './egress-proxy.js'

// The gateway's sandboxes: where `openrouter:bash` runs a request's commands, on a runtime host and
// never in the API. Each sandbox is a workspace of its own (a request's, or a session's), its
// commands confined as interns' are (bubblewrap, the host's limits, no network), and discarded when
// the request ends or, for a session, once unused for `idleMs`. A host runs at most `concurrency` of
// them at once: past that a command is refused (busy), not queued without bound.

export class SandboxBusy extends Error {}
/** A command asking a sandbox for another network than the one it was made with. */
export class SandboxPolicyConflict extends Error {}

/** Where a sandbox granted the network reaches it (the host's egress proxies), and on which ports. */
export interface SandboxEgress {
  proxies: Pick<EgressProxies, 'socketFor' | 'close'>
  ports: readonly number[]
}

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
  /** Absent: no sandbox may be granted the network. */
  egress?: SandboxEgress
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

  /** Each sandbox's network, as it was made (the hosts it may reach, sorted; '' for none): fixed for its life. */
  private readonly networks = new Map<string, string>()

  async run(
    key: string,
    command: string,
    timeoutMs: number | undefined,
    signal?: AbortSignal,
    allowedHosts?: readonly string[],
  ): Promise<CommandResult> {
    const name = dirName(key)
    const network = allowedHosts?.length ? [...new Set(allowedHosts)].sort().join(',') : ''
    const fixed = this.networks.get(name) ?? (existsSync(join(this.root, name)) ? '' : undefined)
    if (fixed !== undefined && fixed !== network)
      throw new SandboxPolicyConflict(
        `this sandbox was made with ${fixed ? `the network of ${fixed}` : 'no network'}; its network cannot change (use another container)`,
      )
    if (network && !this.opts.egress) throw new SandboxPolicyConflict('this host grants no sandbox the network')
    if (this.running >= this.opts.concurrency)
      throw new SandboxBusy(`this host runs ${this.opts.concurrency} sandboxed commands at once`)
    this.running++
    try {
      const workspace = join(this.root, name)
      this.networks.set(name, network)
      const egressSocket = network
        ? await this.opts.egress!.proxies.socketFor(`gw-${name}`, {
            allowedHosts: network.split(','),
            ports: this.opts.egress!.ports,
          })
        : undefined
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
          ...(egressSocket ? { egressSocket } : {}),
        },
        signal,
      )
    } finally {
      this.running--
    }
  }

  async discard(key: string) {
    await this.forget(dirName(key))
  }

  /** A sandbox gone: its files, its network's proxy, its policy. */
  private async forget(name: string) {
    this.networks.delete(name)
    await this.opts.egress?.proxies.close(`gw-${name}`)
    await rm(join(this.root, name), { recursive: true, force: true })
  }

  /** Removes the sandboxes unused for longer than `idleMs`. */
  async sweep() {
    const names = await readdir(this.root).catch(() => [] as string[])
    const before = Date.now() - this.opts.idleMs
    for (const name of names) {
      const at = join(this.root, name)
      const s = await stat(at).catch(() => undefined)
      if (s && s.mtimeMs < before) await this.forget(name)
    }
  }

  stop() {
    clearInterval(this.sweeper)
  }
}
