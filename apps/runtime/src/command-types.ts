// What a shell command is given and what it comes back with: the sandbox (sandbox.ts) confines it,
// the command process (command-process.ts) runs it; both speak these.

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
  /** Keep standard output as bytes (`stdoutBytes`), not text: for an archive. */
  binary?: boolean
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
  /** The limit the command ran into and was stopped by, when one was (its processes, memory or workspace size). */
  limit?: 'processes' | 'memory' | 'workspace'
  /** Standard output as bytes, when asked for (`binary`). */
  stdoutBytes?: Buffer
}
