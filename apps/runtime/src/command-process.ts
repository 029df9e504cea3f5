import { spawn, type ChildProcess } from 'node:child_process'
import { lstat, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import type { CommandOptions, CommandResult } from './command-types.js'

// A shell command's process under its limits, sandboxed or not (sandbox.ts decides which): its time
// and output limits, a workspace it may not grow past its ceiling, and a kill that reaches
// everything it started.

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

/**
 * Watches a workspace while a command runs: a command that grows it past `maxBytes` is killed (a
 * disk filler must not fill the host's disk for every intern). The size is measured by walking the
 * workspace (blocks in use, so a sparse file counts as what it takes), at most every second and
 * less often the longer a walk takes; a workspace already past the ceiling may still be shrunk.
 * Between two walks a command may write what the disk takes in that time (a file at most
 * fileBytes, its rlimit), so the ceiling is approached, not exact.
 */
export function watchWorkspace(dir: string, maxBytes: number) {
  let kill: (() => void) | undefined
  let over = false
  let ended = false
  let baseline: number | undefined
  let timer: NodeJS.Timeout | undefined
  const measure = async () => {
    const started = performance.now()
    const size = await diskUsage(dir, Math.max(maxBytes, baseline ?? 0) + 1).catch(() => undefined)
    if (ended) return
    if (size !== undefined) {
      baseline ??= size
      if (size > maxBytes && size > baseline) {
        over = true
        kill?.()
        return
      }
    }
    timer = setTimeout(measure, Math.max(1_000, 10 * (performance.now() - started))).unref()
  }
  void measure()
  return {
    stop: (k: () => void) => (kill = k),
    exceeded: () => over,
    end: () => {
      ended = true
      clearTimeout(timer)
    },
  }
}

/** Bytes of disk a directory tree takes, walked without following links; stops counting past `enough`. */
export async function diskUsage(dir: string, enough = Number.POSITIVE_INFINITY): Promise<number> {
  let total = 0
  const pending = [dir]
  while (pending.length && total < enough) {
    const at = pending.pop()!
    const entries = await readdir(at, { withFileTypes: true }).catch(() => [])
    for (const entry of entries) {
      const path = join(at, entry.name)
      const stat = await lstat(path).catch(() => undefined)
      if (!stat) continue
      total += stat.blocks * 512
      if (entry.isDirectory()) pending.push(path)
    }
  }
  return total
}

/**
 * `cwd`: where an unconfined command runs; `sandbox`: the command is bwrap's (it names its first
 * process on fd 3); `stop`: given the command's kill, for whatever else may end it (its workspace's growth).
 */
export function run(
  file: string,
  args: string[],
  opts: CommandOptions,
  signal: AbortSignal | undefined,
  { cwd, sandbox = false, stop }: { cwd?: string; sandbox?: boolean; stop?: (kill: () => void) => void },
): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    // A run cancelled before its command was spawned (the client left while the model was still
    // answering): an abort listener added now would never fire, and the command would run its course.
    if (signal?.aborted) return reject(signal.reason)
    const started = performance.now()
    // A process group of its own (detached), so a kill reaches everything the command started (killer).
    // bwrap clears the command's environment itself (--clearenv); it needs only PATH to be found.
    const stdio = [opts.input ? 'pipe' : 'ignore', 'pipe', 'pipe', ...(sandbox ? ['pipe'] : [])] as (
      'pipe' | 'ignore'
    )[]
    const child = spawn(file, args, {
      stdio,
      detached: true,
      cwd,
      env: cwd ? opts.env : { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    })
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
    stop?.(kill)
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
      const stdout = Buffer.concat(out)
      resolve({
        ...(opts.binary ? { stdoutBytes: stdout } : {}),
        exitCode: code,
        signal: sig,
        stdout: opts.binary ? '' : stdout.toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
        truncated,
        timedOut,
        durationMs: performance.now() - started,
      })
    })
  })
}
