import { z } from 'zod'
import { SandboxEnvironment, sandboxOf } from './sandbox-environment.js'
import { errorOf, toolError, type SandboxResult, type ServerToolKind } from './tool.js'

// `openrouter:shell`: the hosted shell OpenAI's shell tool describes (a list of commands, each run
// in turn, each with its output and how it ended), run in the request's gateway sandbox on a
// runtime host as `openrouter:bash` is (no provider's hosted shell is reached from here, so every
// engine comes to Roster's sandbox). The item shows the commands as its `action` and each
// command's output in its `output`, as the official client's types have them.

const Parameters = z.object({
  engine: z.string().max(32).optional(),
  environment: SandboxEnvironment.optional(),
})

/** Most commands one call may run. */
const MAX_COMMANDS = 20

interface ShellOutput {
  stdout: string
  stderr: string
  outcome: { type: 'exit'; exit_code: number } | { type: 'timeout' }
}

const commandsOf = (args: Record<string, unknown>) =>
  Array.isArray(args.commands) ? args.commands.filter((c): c is string => typeof c === 'string' && !!c.trim()) : []
const int = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : undefined)

export const shell: ServerToolKind<z.infer<typeof Parameters>> = {
  type: 'openrouter:shell',
  parameters: Parameters,
  offer: (p) => ({
    type: 'openrouter:shell',
    definition: {
      name: 'shell',
      description:
        "Runs shell commands, one after another, in a sandboxed Linux workspace (no network); returns each one's output and exit code. Files written stay for the next call.",
      parameters: {
        type: 'object',
        properties: {
          commands: { type: 'array', items: { type: 'string' }, description: 'The commands, run in order' },
          timeout_ms: { type: 'integer', description: 'Longest each command may run, in milliseconds' },
          max_output_length: { type: 'integer', description: 'Most characters kept of each output' },
        },
        required: ['commands'],
        additionalProperties: false,
      },
    },
    async run(args, ctx) {
      const commands = commandsOf(args)
      if (!commands.length) return toolError('commands is empty')
      if (commands.length > MAX_COMMANDS) return toolError(`at most ${MAX_COMMANDS} commands are run in one call`)
      if (!ctx.sandbox) return toolError('no runtime host is there to run sandboxed commands')
      const at = sandboxOf(p.environment, ctx.sandbox)
      const cap = int(args.max_output_length)
      const outputs: ShellOutput[] = []
      for (const command of commands) {
        let r: SandboxResult
        try {
          r = await ctx.sandbox.port.run(at.key, command, int(args.timeout_ms), at.network)
        } catch (err) {
          return toolError(`the command could not be run: ${(err as Error).message}`)
        }
        outputs.push({
          stdout: cap ? r.stdout.slice(0, cap) : r.stdout,
          stderr: cap ? r.stderr.slice(0, cap) : r.stderr,
          outcome: r.timed_out ? { type: 'timeout' } : { type: 'exit', exit_code: r.exit_code ?? 128 },
        })
      }
      return at.containerId ? { outputs, container_id: at.containerId } : { outputs }
    },
    itemFields(args, output) {
      const error = errorOf(output)
      return {
        action: {
          commands: commandsOf(args),
          ...(int(args.timeout_ms) ? { timeout_ms: int(args.timeout_ms) } : {}),
          ...(int(args.max_output_length) ? { max_output_length: int(args.max_output_length) } : {}),
        },
        output: (output as { outputs?: ShellOutput[] } | null)?.outputs ?? [],
        ...((output as { container_id?: string } | null)?.container_id
          ? { container_id: (output as { container_id: string }).container_id }
          : {}),
        ...(error ? { error } : {}),
      }
    },
  }),
}
