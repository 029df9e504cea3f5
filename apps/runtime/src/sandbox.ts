import { spawnSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { existsSync, readlinkSync, realpathSync } from 'node:fs'
import type { Cgroups } from './cgroups.js'
import {
  bwrapArguments,
  commandArguments,
  EGRESS_SOCKET,
  ETC_ENTRIES,
  ROOT_DIRS,
  systemMounts,
  type EgressForwarder,
  type HostLayout,
  type SandboxPolicy,
} from './sandbox-policy.js'
import { run, watchWorkspace } from './command-process.js'

export { diskUsage } from './command-process.js'
import type { CommandOptions, CommandResult } from './command-types.js'
export type { CommandLimits, CommandOptions, CommandResult } from './command-types.js'

// Shell commands of an intern, confined by bubblewrap (its arguments: sandbox-policy.ts): the intern's workspace is the only writable
// place and the only part of the host's files it sees beyond the system's own read-only
// directories (/usr and what programs need of /etc) (no other intern's workspace, no home directory, no Roster data, no /tmp of the
// host); its processes live in namespaces of their own (no network unless granted, no view of the
// host's processes); every command has a time and an output limit, and a runaway is killed with
// everything it started.

/**
 * What confines every command beyond its namespaces: rlimits inside the sandbox, a control group of
 * its own where the host can make them, the unprivileged user it runs as where the host is root,
 * and a ceiling on its workspace's size (see confinement.ts, which decides these once per host).
 */
export interface Confinement {
  limits: SandboxLimits
  /** The user and group commands run as (the host is root: never root inside). */
  user?: { uid: number; gid: number; setpriv: string }
  cgroups?: Cgroups
}

export interface SandboxLimits {
  /** Processes (and threads) one command may have at once. */
  processes: number
  /** Memory of all its processes together (a control group), or of each (RLIMIT_AS) where no group can be made. */
  memoryBytes: number
  /** CPU time each of its processes may use (RLIMIT_CPU), and their share of one core in percent (a control group). */
  cpuSeconds: number
  cpuPercent: number
  /** Largest file a command may write (RLIMIT_FSIZE). */
  fileBytes: number
  /** Size of the sandbox's own /tmp (a tmpfs: memory). */
  tmpBytes: number
  /** The workspace's size past which a command that grows it is killed. */
  workspaceBytes: number
}

let layout: HostLayout | undefined
/** This host's /etc entries and root directories, as sandboxes mount them: read once. */
function hostLayout(): HostLayout {
  layout ??= {
    etc: ETC_ENTRIES.filter((entry) => existsSync(`/etc/${entry}`)),
    rootDirs: ROOT_DIRS.flatMap((name) => {
      const linkTo = linkTarget(`/${name}`)
      return linkTo ? [{ name, linkTo }] : existsSync(`/${name}`) ? [{ name }] : []
    }),
  }
  return layout
}

let forwarder: EgressForwarder | undefined
/**
 * What starts, inside a sandbox granted the network, the forwarder from 127.0.0.1:3128 (its own
 * loopback) to the egress socket: socat (fast: about 12 ms to start) or Node, the runtime's own
 * binary (about ten times that, but always there). `auto`: socat where installed.
 */
export function chooseEgressForwarder(kind: 'auto' | 'socat' | 'node') {
  const socat =
    kind === 'node' ? undefined : ['/usr/bin/socat', '/bin/socat', '/usr/local/bin/socat'].find((p) => existsSync(p))
  if (kind === 'socat' && !socat) throw new Error('RUNTIME_EGRESS_FORWARDER is socat, but socat is not installed')
  if (socat)
    return (forwarder = {
      start: `${socat} TCP-LISTEN:3128,bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:${EGRESS_SOCKET} &`,
      binds: [],
    })
  const node = realpathSync(process.execPath)
  const script = `const n=require('net');n.createServer(c=>{const u=n.connect('${EGRESS_SOCKET}');c.pipe(u).pipe(c);u.on('error',()=>c.destroy());c.on('error',()=>u.destroy())}).listen(3128,'127.0.0.1')`
  return (forwarder = {
    start: `${node} -e "${script}" &`,
    binds: node.startsWith('/usr/') ? [] : ['--ro-bind', node, node],
  })
}
const egressForwarder = () => forwarder ?? chooseEgressForwarder('auto')

/** Room of the sandbox's own /tmp (tmpfs: memory) when no limits say otherwise. */
const DEFAULT_TMP_BYTES = 256 * 1024 * 1024

function linkTarget(path: string): string | undefined {
  try {
    return readlinkSync(path)
  } catch {
    return undefined
  }
}

/**
 * Whether commands can be confined here: bubblewrap installed and allowed to make namespaces
 * (containers without user namespaces, and macOS, cannot). Undefined when they can; else why not.
 */
export function sandboxUnavailable(
  env: NodeJS.ProcessEnv = process.env,
  user?: Confinement['user'],
): string | undefined {
  const bwrap = ['bwrap', ...systemMounts(hostLayout()), '--unshare-all', '--die-with-parent', '/usr/bin/true']
  const argv = user
    ? [user.setpriv, `--reuid=${user.uid}`, `--regid=${user.gid}`, '--clear-groups', '--', ...bwrap]
    : bwrap
  const probe = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8', timeout: 10_000, env })
  if (probe.error) return `bubblewrap (bwrap) is not installed: ${probe.error.message}; install the bubblewrap package`
  if (probe.status !== 0)
    return `bubblewrap cannot make namespaces here: ${probe.stderr.trim() || `exit ${probe.status}`}`
  return undefined
}

/** bwrap's arguments for `command` in its sandbox. */
export const sandboxArgs = (
  command: string,
  opts: CommandOptions,
  limits?: SandboxLimits,
  memoryGroup = false,
): string[] => {
  const forwarder = opts.egressSocket ? egressForwarder() : undefined
  const policy: SandboxPolicy = {
    workspace: realpathSync(opts.workspace),
    egressSocket: opts.egressSocket,
    forwarder,
    tmpBytes: limits?.tmpBytes ?? DEFAULT_TMP_BYTES,
    env: opts.env,
  }
  return [
    ...bwrapArguments(policy, hostLayout()),
    ...commandArguments(command, { timeoutMs: opts.timeoutMs, args: opts.args, forwarder, limits, memoryGroup }),
  ]
}

let hostConfinement: Confinement | undefined
/** The confinement of every command this process runs from now on (the runtime host sets it once, at start). */
export function confineCommands(confinement: Confinement | undefined) {
  hostConfinement = confinement
}

/**
 * Joins the control groups named before `--` (each a cgroup.procs file), then becomes the command
 * after it: the group is joined before bwrap runs, so nothing the command starts is ever outside it.
 */
const JOIN_GROUPS = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'

/** Runs `command` with bash inside the sandbox. Rejects only if bubblewrap cannot start at all. */
export async function runSandboxed(
  command: string,
  opts: CommandOptions,
  signal?: AbortSignal,
): Promise<CommandResult> {
  const confinement = hostConfinement
  const limits = confinement?.limits
  const group = confinement?.cgroups?.create(
    `cmd-${randomUUID()}`,
    limits && { processes: limits.processes, memoryBytes: limits.memoryBytes, cpuPercent: limits.cpuPercent },
  )
  // bwrap names on fd 3 the sandbox's first process (the init of its PID namespace): see run().
  let argv = ['bwrap', '--info-fd', '3', ...sandboxArgs(command, opts, limits, !!group)]
  const user = confinement?.user
  if (user) argv = [user.setpriv, `--reuid=${user.uid}`, `--regid=${user.gid}`, '--clear-groups', '--', ...argv]
  if (group) argv = ['/bin/sh', '-c', JOIN_GROUPS, 'roster-join', ...group.procs, '--', ...argv]
  const growth = limits && watchWorkspace(opts.workspace, limits.workspaceBytes)
  try {
    const result = await run(argv[0]!, argv.slice(1), opts, signal, { sandbox: true, stop: growth?.stop })
    const limit = growth?.exceeded() ? 'workspace' : group?.verdict()
    return limit ? { ...result, limit } : result
  } finally {
    growth?.end()
    group?.remove()
  }
}

/**
 * Runs `command` with bash in the workspace without any confinement: only where the operator has
 * allowed it for development (a machine without bubblewrap); never chosen silently.
 */
export function runUnconfined(command: string, opts: CommandOptions, signal?: AbortSignal): Promise<CommandResult> {
  return run(
    'bash',
    ['-c', command, 'roster', ...(opts.args ?? [])],
    { ...opts, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: opts.workspace, ...opts.env } },
    signal,
    { cwd: opts.workspace },
  )
}

export type CommandRunner = (command: string, opts: CommandOptions, signal?: AbortSignal) => Promise<CommandResult>

/** Why a shell command was not run: the sandbox cannot work here and unconfined commands are not allowed. */
export class SandboxUnavailableError extends Error {
  override name = 'SandboxUnavailableError'
}

/**
 * How this host runs interns' shell commands, decided once: in the sandbox; or, where bubblewrap
 * cannot work, unconfined only if the operator allowed it (`RUNTIME_UNCONFINED_COMMANDS=allow`,
 * for development); otherwise every command is refused with the reason. Never silently unconfined.
 */
export function commandRunner(
  unconfined: 'refuse' | 'allow',
  env: NodeJS.ProcessEnv = process.env,
  user?: Confinement['user'],
): { run: CommandRunner; mode: 'sandboxed' | 'unconfined' | 'refused'; why?: string } {
  const why = sandboxUnavailable(env, user)
  if (!why) return { run: runSandboxed, mode: 'sandboxed' }
  if (unconfined === 'allow') return { run: runUnconfined, mode: 'unconfined', why }
  return {
    mode: 'refused',
    why,
    run: () =>
      Promise.reject(
        new SandboxUnavailableError(
          `shell commands are refused on this host: ${why}; install bubblewrap, or set RUNTIME_UNCONFINED_COMMANDS=allow on a development machine`,
        ),
      ),
  }
}
