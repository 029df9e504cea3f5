import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, readlinkSync, realpathSync } from 'node:fs'

// Shell commands of an intern, confined by bubblewrap: the intern's workspace is the only writable
// place and the only part of the host's files it sees beyond the system's own read-only
// directories (/usr and what programs need of /etc) (no other intern's workspace, no home directory, no Roster data, no /tmp of the
// host); its processes live in namespaces of their own (no network unless granted, no view of the
// host's processes); every command has a time and an output limit, and a runaway is killed with
// everything it started.

export interface CommandLimits {
  /** Wall-clock limit; past it the command and every process it started are killed. */
  timeoutMs: number
  /** Most bytes kept of stdout and of stderr each; past it the command is killed and the output marked truncated. */
  maxOutputBytes: number
}

export interface CommandOptions extends CommandLimits {
  /** The intern's workspace directory, mounted read-write at /workspace (the working directory). */
  workspace: string
  /**
   * The network for this command (an escalation in manual mode): the intern's egress proxy socket
   * (egress-proxy.ts), its only way out. Without it the command has no network at all.
   */
  egressSocket?: string
  /** Environment of the command, on top of PATH, HOME=/workspace and LANG. Nothing of the host's leaks in. */
  env?: Record<string, string>
  /** Arguments the command sees as $1, $2…: passed apart from the command text, never parsed by the shell. */
  args?: string[]
  /** What the command reads on its standard input (none: it reads end of file). */
  input?: Buffer
}

export interface CommandResult {
  exitCode: number | null
  /** The signal that ended it, when it did not exit on its own. */
  signal: string | null
  stdout: string
  stderr: string
  /** Output past maxOutputBytes was dropped (and the command killed). */
  truncated: boolean
  timedOut: boolean
  durationMs: number
}

/** The host's system directories a command may read (never write). Merged-/usr systems link the rest. */
const SYSTEM_DIRS = ['/usr']
/**
 * What of /etc a command may read: what programs need to run, resolve names and trust TLS, and
 * not the rest (the shadow password files, SSH host keys, sudoers, whatever an operator keeps there).
 */
const ETC_ENTRIES = [
  'alternatives', 'bash.bashrc', 'ca-certificates', 'ca-certificates.conf', 'gai.conf', 'group', 'host.conf', 'hostname', 'hosts',
  'inputrc', 'ld.so.cache', 'ld.so.conf', 'ld.so.conf.d', 'localtime', 'mime.types', 'nsswitch.conf', 'os-release', 'passwd',
  'profile', 'protocols', 'resolv.conf', 'services', 'ssl', 'timezone',
]
const USR_LINKS = ['bin', 'sbin', 'lib', 'lib64', 'lib32', 'libx32']

let systemMounts: string[] | undefined
/** The read-only system part of every sandbox, worked out once: /usr and /etc, and /bin and the like as the host has them. */
function systemArgs(): string[] {
  if (systemMounts) return systemMounts
  const args: string[] = []
  for (const dir of SYSTEM_DIRS) args.push('--ro-bind', dir, dir)
  for (const entry of ETC_ENTRIES) if (existsSync(`/etc/${entry}`)) args.push('--ro-bind', `/etc/${entry}`, `/etc/${entry}`)
  for (const link of USR_LINKS) {
    const path = `/${link}`
    const target = linkTarget(path)
    if (target) args.push('--symlink', target, path)
    else if (existsSync(path)) args.push('--ro-bind', path, path)
  }
  args.push('--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp', '--tmpfs', '/run')
  return (systemMounts = args)
}

/** Where the egress proxy's socket appears in a sandbox, and the port its forwarder listens on there. */
const EGRESS_SOCKET = '/run/roster/egress.sock'
const PROXY = 'http://127.0.0.1:3128'

let forwarder: { start: string; binds: string[] } | undefined
/**
 * What starts, inside a sandbox granted the network, the forwarder from 127.0.0.1:3128 (its own
 * loopback) to the egress socket: socat (fast: about 12 ms to start) or Node, the runtime's own
 * binary (about ten times that, but always there). `auto`: socat where installed.
 */
export function chooseEgressForwarder(kind: 'auto' | 'socat' | 'node') {
  const socat = kind === 'node' ? undefined : ['/usr/bin/socat', '/bin/socat', '/usr/local/bin/socat'].find((p) => existsSync(p))
  if (kind === 'socat' && !socat) throw new Error('RUNTIME_EGRESS_FORWARDER is socat, but socat is not installed')
  if (socat) return (forwarder = { start: `${socat} TCP-LISTEN:3128,bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:${EGRESS_SOCKET} &`, binds: [] })
  const node = realpathSync(process.execPath)
  const script = `const n=require('net');n.createServer(c=>{const u=n.connect('${EGRESS_SOCKET}');c.pipe(u).pipe(c);u.on('error',()=>c.destroy());c.on('error',()=>u.destroy())}).listen(3128,'127.0.0.1')`
  return (forwarder = { start: `${node} -e "${script}" &`, binds: node.startsWith('/usr/') ? [] : ['--ro-bind', node, node] })
}
const egressForwarder = () => forwarder ?? chooseEgressForwarder('auto')

/** Until the egress forwarder listens: a probe in the shell itself (no process started per try), for at most ~2 s. */
const FORWARDER_READY = 'for ((i = 0; i < 200000; i++)); do { : <>/dev/tcp/127.0.0.1/3128; } 2>/dev/null && break; done'
/** How much longer than the host's own limit a sandbox's own limit on its command is: the host's comes first, and says so. */
const OWN_LIMIT_MARGIN_S = 3

/**
 * The command as the sandbox runs it, under a shell that outlives it (with the network, the
 * forwarder first, up before the command starts). The sandbox also ends on its own: its command is
 * killed past its time limit (a margin after the host's), and when the command ends whatever it
 * left running is killed, so its first process has nothing left to wait for. The host normally
 * does both; this is for a sandbox whose host died while bwrap was starting it, which bwrap could
 * not yet tie to the host's life (a forwarder left running kept such a sandbox for good).
 */
function commandArgs(command: string, opts: CommandOptions): string[] {
  const limit = Math.ceil(opts.timeoutMs / 1000) + OWN_LIMIT_MARGIN_S
  const network = opts.egressSocket ? `${egressForwarder().start}\n${FORWARDER_READY}\n` : ''
  // $$ is 2 only in a PID namespace of the sandbox's own (bwrap's init is 1): there, -1 is every
  // other process of the sandbox, and nothing of the host.
  const script = `${network}/usr/bin/timeout -s KILL ${limit} /usr/bin/bash -c "$1" roster "\${@:2}"\nstatus=$?\n[ "$$" = 2 ] && kill -KILL -1 2>/dev/null\nexit $status`
  return ['/usr/bin/bash', '-c', script, 'roster-sandbox', command, ...(opts.args ?? [])]
}

function bwrapArgs(opts: CommandOptions): string[] {
  // The sandbox's own root is a tmpfs bwrap makes: read-only once every mount point is in place.
  const args = [...systemArgs(), '--bind', realpathSync(opts.workspace), '/workspace']
  if (opts.egressSocket) args.push('--bind', opts.egressSocket, EGRESS_SOCKET, ...egressForwarder().binds)
  args.push('--remount-ro', '/', '--chdir', '/workspace')
  // No network namespace is ever shared: even a command granted the network has only its own loopback.
  args.push('--unshare-all', '--die-with-parent', '--new-session', '--clearenv')
  const proxy = opts.egressSocket ? { HTTP_PROXY: PROXY, HTTPS_PROXY: PROXY, http_proxy: PROXY, https_proxy: PROXY, NO_PROXY: '', no_proxy: '' } : {}
  const env = { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/workspace', LANG: 'C.UTF-8', ...proxy, ...opts.env }
  for (const [k, v] of Object.entries(env)) args.push('--setenv', k, v)
  return args
}

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
export function sandboxUnavailable(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const probe = spawnSync('bwrap', [...systemArgs(), '--unshare-all', '--die-with-parent', '/usr/bin/true'], { encoding: 'utf8', timeout: 10_000, env })
  if (probe.error) return `bubblewrap (bwrap) is not installed: ${probe.error.message}; install the bubblewrap package`
  if (probe.status !== 0) return `bubblewrap cannot make namespaces here: ${probe.stderr.trim() || `exit ${probe.status}`}`
  return undefined
}

/** bwrap's arguments for `command` in its sandbox. */
export const sandboxArgs = (command: string, opts: CommandOptions): string[] => [...bwrapArgs(opts), ...commandArgs(command, opts)]

/** Runs `command` with bash inside the sandbox. Rejects only if bubblewrap cannot start at all. */
export function runSandboxed(command: string, opts: CommandOptions, signal?: AbortSignal): Promise<CommandResult> {
  // bwrap names on fd 3 the sandbox's first process (the init of its PID namespace): see run().
  return run('bwrap', ['--info-fd', '3', ...sandboxArgs(command, opts)], opts, signal, { sandbox: true })
}

/**
 * Runs `command` with bash in the workspace without any confinement: only where the operator has
 * allowed it for development (a machine without bubblewrap); never chosen silently.
 */
export function runUnconfined(command: string, opts: CommandOptions, signal?: AbortSignal): Promise<CommandResult> {
  return run('bash', ['-c', command, 'roster', ...(opts.args ?? [])], { ...opts, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: opts.workspace, ...opts.env } }, signal, { cwd: opts.workspace })
}

/**
 * How a command's processes are killed: its process group (detached), which reaches everything an
 * unconfined command started. A sandbox is ended by killing its first process too: the kernel then
 * kills every process in its PID namespace. bwrap's group alone is not enough: that first process
 * leaves it (--new-session), and is bound to bwrap's life only once it has set its parent-death
 * signal, a few instructions after it was forked; a bwrap killed before that left the sandbox
 * running, parentless. So a kill asked for before bwrap has named that process (on fd 3, about
 * 3 ms after the start) waits for the name, then kills both; a bwrap that never names it (stuck
 * before it made the sandbox) is killed after a second.
 */
function killer(child: ChildProcess, sandbox: boolean): () => void {
  const killGroup = () => {
    try {
      process.kill(-child.pid!, 'SIGKILL')
    } catch {
      child.kill('SIGKILL')
    }
  }
  if (!sandbox) return killGroup
  let firstProcess: number | undefined
  let wanted = false
  let stuck: NodeJS.Timeout | undefined
  const kill = () => {
    wanted = true
    if (firstProcess === undefined) {
      stuck ??= setTimeout(killGroup, 1_000).unref()
      return
    }
    clearTimeout(stuck)
    // bwrap first: killed after its sandbox, it could see that and exit on its own first, and the
    // result would read as an exit code, not the kill it was.
    const sandboxAlive = child.exitCode === null && child.signalCode === null
    killGroup()
    if (!sandboxAlive) return
    try {
      process.kill(firstProcess, 'SIGKILL')
    } catch {
      // Already gone.
    }
  }
  let info = ''
  child.stdio[3]!.on('data', (chunk: Buffer) => {
    if (firstProcess !== undefined) return
    info += chunk
    const pid = /"child-pid":\s*(\d+)/.exec(info)?.[1]
    if (pid === undefined) return
    firstProcess = Number(pid)
    if (wanted) kill()
  })
  return kill
}

/** `cwd`: where an unconfined command runs; `sandbox`: the command is bwrap's (it names its first process on fd 3). */
function run(file: string, args: string[], opts: CommandOptions, signal: AbortSignal | undefined, { cwd, sandbox = false }: { cwd?: string; sandbox?: boolean }): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    // A run cancelled before its command was spawned (the client left while the model was still
    // answering): an abort listener added now would never fire, and the command would run its course.
    if (signal?.aborted) return reject(signal.reason)
    const started = performance.now()
    // A process group of its own (detached), so a kill reaches everything the command started (killer).
    // bwrap clears the command's environment itself (--clearenv); it needs only PATH to be found.
    const stdio = [opts.input ? 'pipe' : 'ignore', 'pipe', 'pipe', ...(sandbox ? ['pipe'] : [])] as ('pipe' | 'ignore')[]
    const child = spawn(file, args, { stdio, detached: true, cwd, env: cwd ? opts.env : { PATH: process.env.PATH ?? '/usr/bin:/bin' } })
    if (opts.input) {
      // A command that exits without reading all of it closes the pipe: not an error of ours.
      child.stdin!.on('error', () => {})
      child.stdin!.end(opts.input)
    }
    const out: Buffer[] = []
    const err: Buffer[] = []
    let sizes = [0, 0]
    let truncated = false
    let timedOut = false
    const kill = killer(child, sandbox)
    const collect = (into: Buffer[], i: 0 | 1) => (chunk: Buffer) => {
      const room = opts.maxOutputBytes - sizes[i]!
      if (room > 0) into.push(chunk.subarray(0, room))
      sizes[i] = sizes[i]! + chunk.length
      if (chunk.length > room && !truncated) {
        truncated = true
        kill()
      }
    }
    child.stdout!.on('data', collect(out, 0))
    child.stderr!.on('data', collect(err, 1))
    const timer = setTimeout(() => {
      timedOut = true
      kill()
    }, opts.timeoutMs)
    const onAbort = () => kill()
    signal?.addEventListener('abort', onAbort, { once: true })
    child.once('error', (e) => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
      reject(e)
    })
    child.once('close', (code, sig) => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
      sizes = [0, 0]
      resolve({
        exitCode: code,
        signal: sig,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
        truncated,
        timedOut,
        durationMs: performance.now() - started,
      })
    })
  })
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
export function commandRunner(unconfined: 'refuse' | 'allow', env: NodeJS.ProcessEnv = process.env): { run: CommandRunner; mode: 'sandboxed' | 'unconfined' | 'refused'; why?: string } {
  const why = sandboxUnavailable(env)
  if (!why) return { run: runSandboxed, mode: 'sandboxed' }
  if (unconfined === 'allow') return { run: runUnconfined, mode: 'unconfined', why }
  return {
    mode: 'refused',
    why,
    run: () => Promise.reject(new SandboxUnavailableError(`shell commands are refused on this host: ${why}; install bubblewrap, or set RUNTIME_UNCONFINED_COMMANDS=allow on a development machine`)),
  }
}
