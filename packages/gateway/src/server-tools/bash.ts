import { z } from 'zod'
import { SandboxEnvironment, sandboxOf } from './sandbox-environment.js'
import { errorOf, toolError, type ServerToolKind } from './tool.js'

// `openrouter:bash`: with engine `openrouter`, the model's commands run in a sandbox of the request
// (or of its session, kept while the session is used) on a runtime host: bubblewrap, the host's
// limits on processes, memory, time and disk, no network (or the hosts its `environment` allows),
// a workspace of its own discarded after (or a named container of the workspace's, kept).
// Never in the API's process. With `auto` or `native` (the default, as OpenRouter's), the tool is
// a function the client runs: its calls are handed over.

const Parameters = z.object({
  engine: z.string().max(32).optional(),
  environment: SandboxEnvironment.optional(),
})

const definition = {
  name: 'bash',
  description:
    'Runs a bash command in a sandboxed Linux workspace (no network) and returns its exit code and output. Files written stay for the next command.',
  parameters: {
    type: 'object',
    properties: {
      command: { type: 'string', description: 'The bash command' },
      timeout_ms: { type: 'integer', description: 'Longest the command may run, in milliseconds' },
    },
    required: ['command'],
    additionalProperties: false,
  },
}

export const bash: ServerToolKind<z.infer<typeof Parameters>> = {
  type: 'openrouter:bash',
  parameters: Parameters,
  offer(p) {
    const engine = p.engine ?? 'auto'
    // The client's engine: offered as its function (run-setup.ts), never run here.
    if (engine !== 'openrouter')
      return {
        type: 'openrouter:bash',
        definition,
        client: true,
        run: () => Promise.reject(new Error('openrouter:bash with the client engine is the client’s to run')),
      }
    return {
      type: 'openrouter:bash',
      definition,
      async run(args, ctx) {
        const command = typeof args.command === 'string' ? args.command : ''
        if (!command.trim()) return toolError('command is empty')
        if (!ctx.sandbox) return toolError('no runtime host is there to run sandboxed commands')
        const timeout = typeof args.timeout_ms === 'number' && args.timeout_ms > 0 ? args.timeout_ms : undefined
        const at = sandboxOf(p.environment, ctx.sandbox)
        try {
          const r = await ctx.sandbox.port.run(at.key, command, timeout, at.network)
          return at.containerId ? { ...r, container_id: at.containerId } : r
        } catch (err) {
          return toolError(`the command could not be run: ${(err as Error).message}`)
        }
      },
      itemFields(args, output) {
        const o = (output ?? {}) as {
          exit_code?: number | null
          stdout?: string
          stderr?: string
          container_id?: string
        }
        const error = errorOf(output)
        return {
          command: typeof args.command === 'string' ? args.command : '',
          ...(o.container_id ? { container_id: o.container_id } : {}),
          ...(o.stdout !== undefined ? { stdout: o.stdout } : {}),
          ...(o.stderr !== undefined ? { stderr: o.stderr } : {}),
          ...(typeof o.exit_code === 'number' ? { exitCode: o.exit_code } : {}),
          ...(error ? { error } : {}),
        }
      },
    }
  },
}
