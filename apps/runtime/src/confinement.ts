import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chmod, lchown, lstat, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import type { RuntimeConfig } from '@roster/protocol'
import { Cgroups } from './cgroups.js'
import type { Confinement } from './sandbox.js'

// How this host confines interns' commands beyond their sandbox's namespaces, decided once at
// start: the limits every command has (rlimits, always), a control group per command where the host
// can make them (cgroup v2, or v1's pids, memory and cpu; as root), and, when the host runs as root,
// an unprivileged user to run them as (root is not held to a process limit, and a sandbox escape
// should land nowhere near root). What could not be had is said, once, in `notes`.

const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv']

export function prepareConfinement(config: RuntimeConfig): { confinement: Confinement; notes: string[] } {
  const mib = (n: number) => n * 1024 * 1024
  const confinement: Confinement = {
    limits: {
      processes: config.SANDBOX_PROCESSES,
      memoryBytes: mib(config.SANDBOX_MEMORY_MB),
      cpuSeconds: config.SANDBOX_CPU_SECONDS,
      cpuPercent: config.SANDBOX_CPU_PERCENT,
      fileBytes: mib(config.SANDBOX_FILE_MB),
      tmpBytes: mib(config.SANDBOX_TMP_MB),
      workspaceBytes: mib(config.SANDBOX_WORKSPACE_MB),
    },
  }
  const notes: string[] = []
  const root = process.getuid?.() === 0
  if (root) {
    const setpriv = SETPRIV.find((p) => existsSync(p))
    if (!setpriv)
      notes.push(
        'commands run as root inside their sandboxes, so the process limit does not hold: install util-linux (setpriv)',
      )
    else confinement.user = { uid: config.SANDBOX_UID, gid: config.SANDBOX_UID, setpriv }
    const groups = Cgroups.detect(`runtime-${config.PORT}`)
    if (typeof groups === 'string')
      notes.push(
        `commands have no control group (memory and processes are held per process by rlimits only): ${groups}`,
      )
    else confinement.cgroups = groups
  } else {
    notes.push(
      'commands have no control group (the host is not root): memory and processes are held per process by rlimits',
    )
  }
  return { confinement, notes }
}

/**
 * Whether the sandbox user can reach `dir` (each directory above it lets others pass), as bwrap,
 * running as that user, must to mount the workspace. A directory this process owns and made
 * private (a mkdtemp data directory) is opened for passing (0711: no listing) on the way.
 */
export async function reachableBySandboxUser(
  dir: string,
  user: NonNullable<Confinement['user']>,
): Promise<string | undefined> {
  const stat = await lstat(dir)
  if (stat.uid === process.getuid?.() && (stat.mode & 0o001) === 0) await chmod(dir, (stat.mode & 0o777) | 0o111)
  const probe = spawnSync(
    user.setpriv,
    [`--reuid=${user.uid}`, `--regid=${user.gid}`, '--clear-groups', '--', '/usr/bin/test', '-x', dir],
    { timeout: 5_000 },
  )
  return probe.status === 0
    ? undefined
    : `${dir} cannot be reached by uid ${user.uid}: let others pass through its parent directories (chmod o+x), or set RUNTIME_DATA_DIR elsewhere`
}

/**
 * Gives a workspace to the sandbox user (the host made it as root, or restored it): everything in
 * it, links themselves rather than what they point to. A workspace already the user's is left as it is.
 */
export async function ownWorkspace(dir: string, user: Confinement['user']): Promise<void> {
  if (!user) return
  const top = await lstat(dir)
  if (top.uid === user.uid) return
  const pending = [dir]
  await lchown(dir, user.uid, user.gid)
  while (pending.length) {
    const at = pending.pop()!
    for (const entry of await readdir(at, { withFileTypes: true })) {
      const path = join(at, entry.name)
      await lchown(path, user.uid, user.gid)
      if (entry.isDirectory()) pending.push(path)
    }
  }
}
