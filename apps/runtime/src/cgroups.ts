import { existsSync, mkdirSync, readFileSync, readdirSync, rmdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

// Control groups for interns' commands: each command's processes in a group of its own, with a
// ceiling on their number (a fork bomb), their memory (a memory hog; tmpfs pages count too) and their
// share of the CPU. cgroup v2 where the machine has it, v1's pids, memory and cpu hierarchies
// otherwise; only where this process may make groups (root, or a delegated subtree). Where it may
// not, the sandbox's rlimits are all there is (sandbox.ts).

export interface CgroupLimits {
  processes: number
  memoryBytes: number
  /** Share of one core, in percent (100: one whole core). */
  cpuPercent: number
}

/** One command's group: the files its first process writes its pid to, what limit it met, and its removal. */
export interface CommandCgroup {
  procs: string[]
  /** The limit the command's processes ran into, if any (read once the command has ended). */
  verdict(): 'memory' | 'processes' | undefined
  remove(): void
}

const ROOT = '/sys/fs/cgroup'
const V1_CONTROLLERS = ['pids', 'memory', 'cpu'] as const
const CPU_PERIOD_US = 100_000

export class Cgroups {
  private constructor(
    readonly kind: 'v1' | 'v2',
    /** The host's own directory in each hierarchy (v2: one). */
    private readonly bases: Record<string, string>,
  ) {}

  /**
   * This host's groups under `roster/<name>` (its port, so hosts side by side on one machine keep
   * apart), made and checked now; undefined, with the reason, where groups cannot be made here.
   * Groups a previous run of this host left (it was killed) are removed first.
   */
  static detect(name: string, root = ROOT): Cgroups | string {
    try {
      if (existsSync(join(root, 'cgroup.controllers'))) {
        const enabled = readFileSync(join(root, 'cgroup.controllers'), 'utf8').split(/\s+/)
        const missing = ['pids', 'memory', 'cpu'].filter((c) => !enabled.includes(c))
        if (missing.length) return `cgroup v2 lacks the ${missing.join(', ')} controller(s)`
        const parent = join(root, 'roster')
        const base = join(parent, name)
        for (const dir of [root, parent]) {
          if (dir !== root) mkdirSync(dir, { recursive: true })
          writeFileSync(join(dir, 'cgroup.subtree_control'), '+pids +memory +cpu')
        }
        mkdirSync(base, { recursive: true })
        writeFileSync(join(base, 'cgroup.subtree_control'), '+pids +memory +cpu')
        const groups = new Cgroups('v2', { unified: base })
        groups.sweep()
        groups.create('probe').remove()
        return groups
      }
      const bases: Record<string, string> = {}
      for (const controller of V1_CONTROLLERS) {
        const hierarchy = join(root, controller)
        if (!existsSync(join(hierarchy, 'cgroup.procs')))
          return `the cgroup v1 ${controller} hierarchy is not mounted at ${hierarchy}`
        bases[controller] = join(hierarchy, 'roster', name)
        mkdirSync(bases[controller]!, { recursive: true })
      }
      const groups = new Cgroups('v1', bases)
      groups.sweep()
      groups.create('probe').remove()
      return groups
    } catch (err) {
      return `control groups cannot be made here (${(err as Error).message})`
    }
  }

  /** A group for one command, its limits written. */
  create(
    id: string,
    limits: CgroupLimits = { processes: 64, memoryBytes: 64 * 1024 * 1024, cpuPercent: 100 },
  ): CommandCgroup {
    const quota = Math.max(1_000, Math.round((limits.cpuPercent / 100) * CPU_PERIOD_US))
    if (this.kind === 'v2') {
      const dir = join(this.bases.unified!, id)
      mkdirSync(dir)
      write(dir, 'pids.max', limits.processes)
      write(dir, 'memory.max', limits.memoryBytes)
      tryWrite(dir, 'memory.swap.max', 0)
      write(dir, 'cpu.max', `${quota} ${CPU_PERIOD_US}`)
      return {
        procs: [join(dir, 'cgroup.procs')],
        verdict: () =>
          counter(dir, 'memory.events', 'oom_kill') > 0
            ? 'memory'
            : counter(dir, 'pids.events', 'max') > 0
              ? 'processes'
              : undefined,
        remove: () => removeDir(dir),
      }
    }
    const dirs = Object.fromEntries(V1_CONTROLLERS.map((c) => [c, join(this.bases[c]!, id)])) as Record<
      (typeof V1_CONTROLLERS)[number],
      string
    >
    for (const dir of Object.values(dirs)) mkdirSync(dir)
    write(dirs.pids, 'pids.max', limits.processes)
    write(dirs.memory, 'memory.limit_in_bytes', limits.memoryBytes)
    // Where swap is accounted, memory and swap together: a hog must not swap the host to a halt.
    tryWrite(dirs.memory, 'memory.memsw.limit_in_bytes', limits.memoryBytes)
    write(dirs.cpu, 'cpu.cfs_period_us', CPU_PERIOD_US)
    write(dirs.cpu, 'cpu.cfs_quota_us', quota)
    return {
      procs: Object.values(dirs).map((dir) => join(dir, 'cgroup.procs')),
      verdict: () =>
        counter(dirs.memory, 'memory.oom_control', 'oom_kill') > 0
          ? 'memory'
          : counter(dirs.pids, 'pids.events', 'max') > 0
            ? 'processes'
            : undefined,
      remove: () => Object.values(dirs).forEach(removeDir),
    }
  }

  /** Removes the groups left in this host's directories (by a run of it that was killed). */
  private sweep() {
    for (const base of Object.values(this.bases)) {
      for (const entry of readdirSync(base, { withFileTypes: true }))
        if (entry.isDirectory()) removeDir(join(base, entry.name))
    }
  }
}

function write(dir: string, file: string, value: string | number) {
  writeFileSync(join(dir, file), String(value))
}
function tryWrite(dir: string, file: string, value: string | number) {
  try {
    write(dir, file, value)
  } catch {
    // Not accounted on this machine (no swap accounting): nothing to limit.
  }
}

/** A `name value` line of a cgroup file, as a number (0 when absent). */
function counter(dir: string, file: string, name: string): number {
  try {
    const line = readFileSync(join(dir, file), 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${name} `))
    return Number(line?.split(' ')[1] ?? 0)
  } catch {
    return 0
  }
}

/**
 * Removes a group once its processes are gone. The kernel frees a group a moment after its last
 * process exits, so a busy group is tried again shortly; one still busy is left for the next sweep.
 */
function removeDir(dir: string, tries = 20) {
  try {
    rmdirSync(dir)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT') return
    if (code === 'EBUSY' && tries > 0) setTimeout(() => removeDir(dir, tries - 1), 50).unref()
  }
}
