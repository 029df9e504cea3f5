// The sandbox of an intern's shell command as a value: what it may see, write and reach (a
// `SandboxPolicy`), and the facts of the host that its mounts depend on (a `HostLayout`, read once
// by sandbox.ts), turned into bubblewrap's arguments by pure functions. Its rules are unit tested
// here without bubblewrap (sandbox-policy.test.ts); sandbox.test.ts runs them under the real thing.

/** The host's system directories a command may read (never write). Merged-/usr systems link the rest. */
export const SYSTEM_DIRS = ['/usr']
/**
 * What of /etc a command may read: what programs need to run, resolve names and trust TLS, and
 * not the rest (the shadow password files, SSH host keys, sudoers, whatever an operator keeps there).
 */
export const ETC_ENTRIES = [
  'alternatives',
  'bash.bashrc',
  'ca-certificates',
  'ca-certificates.conf',
  'gai.conf',
  'group',
  'host.conf',
  'hostname',
  'hosts',
  'inputrc',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'localtime',
  'mime.types',
  'nsswitch.conf',
  'os-release',
  'passwd',
  'profile',
  'protocols',
  'resolv.conf',
  'services',
  'ssl',
  'timezone',
]
/** The root's program and library directories: links into /usr on merged-/usr systems, directories elsewhere. */
export const ROOT_DIRS = ['bin', 'sbin', 'lib', 'lib64', 'lib32', 'libx32']

/** Where the egress proxy's socket appears in a sandbox, and the proxy its forwarder serves there. */
export const EGRESS_SOCKET = '/run/roster/egress.sock'
export const PROXY = 'http://127.0.0.1:3128'
/** Room of the sandbox's own /run (tmpfs: memory). */
const RUN_BYTES = 1024 * 1024

/** What starts the forwarder of a sandbox granted the network, and what of the host it needs to see. */
export interface EgressForwarder {
  /** A shell line that starts it in the background. */
  start: string
  /** bwrap arguments for its program, when it is not under /usr already. */
  binds: string[]
}

/** The facts of this host that a sandbox's mounts depend on (sandbox.ts reads them once). */
export interface HostLayout {
  /** The entries of ETC_ENTRIES this host has. */
  etc: string[]
  /** Each of ROOT_DIRS this host has: a link (to where it points) or a directory. */
  rootDirs: { name: string; linkTo?: string }[]
}

/** One command's sandbox. */
export interface SandboxPolicy {
  /** The intern's workspace as a real path (links resolved): the only writable place, at /workspace. */
  workspace: string
  /** The intern's egress proxy socket, its only way out; absent: no network at all. */
  egressSocket?: string
  /** How egress is reached inside (required with `egressSocket`). */
  forwarder?: EgressForwarder
  /** Size of the sandbox's own /tmp (memory). */
  tmpBytes: number
  /** Environment on top of PATH, HOME=/workspace and LANG (and the proxy, with the network). */
  env?: Record<string, string>
}

const mountsOf = new WeakMap<HostLayout, string[]>()
/**
 * The read-only system part of every sandbox: /usr, what programs need of /etc, /bin and the like as
 * the host has them, /dev and /proc. Worked out once per layout (a host has one): every command's
 * sandbox starts with the same.
 */
export function systemMounts(host: HostLayout): string[] {
  const known = mountsOf.get(host)
  if (known) return known
  const args: string[] = []
  for (const dir of SYSTEM_DIRS) args.push('--ro-bind', dir, dir)
  for (const entry of host.etc)
    if (ETC_ENTRIES.includes(entry)) args.push('--ro-bind', `/etc/${entry}`, `/etc/${entry}`)
  for (const dir of host.rootDirs) {
    if (dir.linkTo) args.push('--symlink', dir.linkTo, `/${dir.name}`)
    else args.push('--ro-bind', `/${dir.name}`, `/${dir.name}`)
  }
  args.push('--dev', '/dev', '--proc', '/proc')
  mountsOf.set(host, args)
  return args
}

/** The environment a command starts with: nothing of the host's. */
export function sandboxEnv(policy: Pick<SandboxPolicy, 'egressSocket' | 'env'>): Record<string, string> {
  const proxy: Record<string, string> = policy.egressSocket
    ? { HTTP_PROXY: PROXY, HTTPS_PROXY: PROXY, http_proxy: PROXY, https_proxy: PROXY, NO_PROXY: '', no_proxy: '' }
    : {}
  return { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/workspace', LANG: 'C.UTF-8', ...proxy, ...policy.env }
}

/** bubblewrap's arguments (before the command) for a policy on a host. */
export function bwrapArguments(policy: SandboxPolicy, host: HostLayout): string[] {
  if (policy.egressSocket && !policy.forwarder) throw new Error('a sandbox with the network needs its egress forwarder')
  // The sandbox's own root is a tmpfs bwrap makes: read-only once every mount point is in place.
  const args = [
    ...systemMounts(host),
    '--size',
    String(policy.tmpBytes),
    '--tmpfs',
    '/tmp',
    '--size',
    String(RUN_BYTES),
    '--tmpfs',
    '/run',
    '--bind',
    policy.workspace,
    '/workspace',
  ]
  if (policy.egressSocket) args.push('--bind', policy.egressSocket, EGRESS_SOCKET, ...policy.forwarder!.binds)
  args.push('--remount-ro', '/', '--chdir', '/workspace')
  // No network namespace is ever shared: even a command granted the network has only its own loopback.
  args.push('--unshare-all', '--die-with-parent', '--new-session', '--clearenv')
  for (const [k, v] of Object.entries(sandboxEnv(policy))) args.push('--setenv', k, v)
  return args
}

/** The rlimits of a command's processes (see sandbox.ts's SandboxLimits for what each means). */
export interface CommandRlimits {
  processes: number
  cpuSeconds: number
  fileBytes: number
  memoryBytes: number
}

/** Until the egress forwarder listens: a probe in the shell itself (no process started per try), for at most ~2 s. */
const FORWARDER_READY = 'for ((i = 0; i < 200000; i++)); do { : <>/dev/tcp/127.0.0.1/3128; } 2>/dev/null && break; done'
/** How much longer than the host's own limit a sandbox's own limit on its command is: the host's comes first, and says so. */
export const OWN_LIMIT_MARGIN_S = 3

/**
 * The rlimits every process of the command inherits, set first thing in the sandbox: processes
 * (counted per sandbox: its user namespace is its own, and its user is never root, for whom the
 * kernel does not count), CPU seconds, file size, and, where no control group holds the memory
 * (`memoryGroup` false), each process's address space. bash's ulimit counts -f and -v in KiB.
 */
export function rlimitLine(limits: CommandRlimits, memoryGroup: boolean): string {
  const kib = (bytes: number) => Math.max(1, Math.floor(bytes / 1024))
  return `ulimit -u ${limits.processes} -t ${limits.cpuSeconds} -f ${kib(limits.fileBytes)}${memoryGroup ? '' : ` -v ${kib(limits.memoryBytes)}`} 2>/dev/null\n`
}

/**
 * The command as the sandbox runs it, under a shell that outlives it (with the network, the
 * forwarder first, up before the command starts). The sandbox also ends on its own: its command is
 * killed past its time limit (a margin after the host's), and when the command ends whatever it
 * left running is killed, so its first process has nothing left to wait for. The host normally
 * does both; this is for a sandbox whose host died while bwrap was starting it, which bwrap could
 * not yet tie to the host's life (a forwarder left running kept such a sandbox for good).
 */
export function commandArguments(
  command: string,
  run: {
    timeoutMs: number
    args?: string[]
    forwarder?: EgressForwarder
    limits?: CommandRlimits
    memoryGroup?: boolean
  },
): string[] {
  const limit = Math.ceil(run.timeoutMs / 1000) + OWN_LIMIT_MARGIN_S
  // The forwarder is disowned: its kill at the end must not be reported ("Killed socat…") on the command's stderr.
  const prelude = `${run.limits ? rlimitLine(run.limits, !!run.memoryGroup) : ''}${run.forwarder ? `${run.forwarder.start}\ndisown\n${FORWARDER_READY}\n` : ''}`
  // $$ is 2 only in a PID namespace of the sandbox's own (bwrap's init is 1): there, -1 is every
  // other process of the sandbox, and nothing of the host.
  const script = `${prelude}/usr/bin/timeout -s KILL ${limit} /usr/bin/bash -c "$1" roster "\${@:2}"\nstatus=$?\n[ "$$" = 2 ] && kill -KILL -1 2>/dev/null\nexit $status`
  return ['/usr/bin/bash', '-c', script, 'roster-sandbox', command, ...(run.args ?? [])]
}
