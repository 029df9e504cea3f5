import { spawn, type ChildProcess } from 'node:child_process'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { waitFor } from './wait.js'

// A real child process of the built code, as the stacks start it, and the free ports they bind.
export const repoRoot = join(import.meta.dirname, '..', '..', '..')

/** Ports this process has handed out: the kernel may offer a port just closed again at once. */
const handedOut = new Set<number>()

/**
 * A port free on 127.0.0.1 now, never one handed out before in this process (a replica once got its
 * primary's port, asked for one after the other, and could not start).
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await anyFreePort()
    if (handedOut.has(port)) continue
    handedOut.add(port)
    return port
  }
}

function anyFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

/** A child process whose output is kept, for tests that start, kill and restart real processes. */
export class NodeProcess {
  child: ChildProcess | undefined
  output = ''
  constructor(
    readonly name: string,
    readonly script: string,
    /** Merged over this process's environment; a key set to `undefined` is removed from it. */
    readonly env: Record<string, string | undefined>,
  ) {}

  start(): this {
    this.output = ''
    const merged: Record<string, string | undefined> = { ...process.env, LOG_LEVEL: 'info', ...this.env }
    const env = Object.fromEntries(Object.entries(merged).filter((e): e is [string, string] => e[1] !== undefined))
    const child = spawn(process.execPath, [this.script], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    child.stdout!.on('data', (d) => (this.output += d))
    child.stderr!.on('data', (d) => (this.output += d))
    this.child = child
    return this
  }

  get running(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null
  }

  /**
   * Waits for the process to print `pattern`. A process that exits first fails the wait at once, and
   * either failure carries the end of what it printed (a port taken, a bad setting), not a bare timeout.
   */
  async waitForOutput(pattern: RegExp, timeoutMs = 30_000): Promise<void> {
    const tail = () => this.output.slice(-2_000)
    try {
      await waitFor(
        () => {
          if (pattern.test(this.output)) return true
          if (this.child && !this.running)
            throw new Error(
              `${this.name} exited (${this.child.exitCode ?? this.child.signalCode}) before printing ${pattern}`,
            )
          return false
        },
        { timeoutMs, what: `${this.name} to print ${pattern}` },
      )
    } catch (err) {
      throw new Error(`${(err as Error).message}; it printed:\n${tail()}`, { cause: err })
    }
  }

  /** Resolves with the exit code (null: a signal) once the process has exited, at once if it has. */
  exited(): Promise<number | null> {
    const child = this.child
    if (!child) return Promise.resolve(null)
    if (!this.running) return Promise.resolve(child.exitCode)
    return new Promise((resolve) => child.once('exit', (code) => resolve(code)))
  }

  async kill(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    const child = this.child
    if (!child || !this.running) return child?.exitCode ?? null
    const exited = this.exited()
    child.kill(signal)
    return exited
  }
}
