import { z } from 'zod'
import {
  errorOf,
  toolError,
  type Consultation,
  type Consulted,
  type ServerTool,
  type ServerToolKind,
  type ToolCallContext,
} from './tool.js'

// `openrouter:advisor` and `openrouter:subagent`: the model consults another model mid-request, or
// hands it a task, through the same engine (routing, fallbacks, the caller's key, its guardrails
// and limits); each call the other model makes is a generation of this request, and its cost is
// in this request's. One tool per entry: `advisor` or `subagent` for an unnamed entry, with the
// entry's name (`advisor_<name>`) for a named one, so a request may offer several.

const Name = z
  .string()
  .trim()
  .min(1)
  .max(64)
  .regex(/^[\w -]+$/, 'letters, digits, spaces, underscores and dashes')
const Common = {
  name: Name.optional(),
  model: z.string().min(1).max(200).optional(),
  instructions: z.string().max(100_000).optional(),
  max_completion_tokens: z.int().min(1).max(1_000_000).optional(),
  temperature: z.number().min(0).max(2).optional(),
  reasoning: z.record(z.string(), z.unknown()).optional(),
}
const AdvisorParameters = z.object({
  ...Common,
  forward_transcript: z.boolean().optional(),
  stream: z.boolean().optional(),
})
const SubagentParameters = z.object({
  ...Common,
  max_tool_calls: z.int().min(1).max(25).optional(),
  tools: z
    .array(z.looseObject({ type: z.string().startsWith('openrouter:', 'is an openrouter: server tool') }))
    .max(16)
    .refine((ts) => !ts.some((t) => t.type === 'openrouter:subagent'), 'must not hold the subagent tool itself')
    .optional(),
  inherit_functions: z.literal(false, 'is not served by this Roster yet').optional(),
  inherited_function_names: z.array(z.string()).max(0, 'is not served by this Roster yet').optional(),
})

/** The function name an entry's tool is offered under. */
const toolName = (kind: string, name: string | undefined) =>
  name ? `${kind}_${name.replace(/[^\w-]+/g, '_').slice(0, 64 - kind.length - 1)}` : kind

/** Runs a consultation, telling the model why when there is none to run (no engine) or it failed. */
async function consulted(ctx: ToolCallContext, run: () => Promise<Consulted>): Promise<Consulted | { error: string }> {
  if (!ctx.consult) return toolError('no model can be consulted here')
  try {
    return await run()
  } catch (err) {
    return toolError(`the consultation failed: ${(err as Error).message}`)
  }
}

const str = (v: unknown) => (typeof v === 'string' ? v : undefined)

/** What an entry and the model's call ask of the model consulted (the entry's model before the call's). */
const asked = (
  p: {
    model?: string
    instructions?: string
    max_completion_tokens?: number
    temperature?: number
    reasoning?: Record<string, unknown>
  },
  args: Record<string, unknown>,
  prompt: unknown,
): Consultation => ({
  model: p.model ?? str(args.model),
  instructions: p.instructions,
  prompt: str(prompt) ?? '',
  max_output_tokens: p.max_completion_tokens,
  temperature: p.temperature,
  reasoning: p.reasoning,
})

export const advisor: ServerToolKind<z.infer<typeof AdvisorParameters>> = {
  type: 'openrouter:advisor',
  parameters: AdvisorParameters,
  offer(p): ServerTool {
    return {
      type: 'openrouter:advisor',
      definition: {
        name: toolName('advisor', p.name),
        description: `Consults ${p.name ? `the advisor "${p.name}"` : 'an advisor'} (another model) for advice on a question; returns its advice.`,
        parameters: {
          type: 'object',
          properties: {
            prompt: { type: 'string', description: 'What to ask the advisor' },
            ...(p.model ? {} : { model: { type: 'string', description: 'A model to consult (optional)' } }),
          },
          required: ['prompt'],
          additionalProperties: false,
        },
      },
      run: (args, ctx) =>
        consulted(ctx, () =>
          ctx.consult!({
            ...asked(p, args, args.prompt),
            transcript: p.forward_transcript,
            // `stream`: the advice shown as it comes, as text deltas of the advisor's item.
            ...(p.stream && ctx.progress
              ? {
                  onText: (delta) =>
                    ctx.progress!('response.output_text.delta', { content_index: 0, delta, logprobs: [] }),
                }
              : {}),
          }),
        ),
      itemFields(args, output) {
        const o = output as Partial<Consulted>
        const error = errorOf(output)
        return {
          prompt: str(args.prompt) ?? '',
          ...(o.text !== undefined ? { advice: o.text } : {}),
          ...(o.model ? { model: o.model } : {}),
          ...(p.name ? { instance_name: p.name } : {}),
          ...(error ? { error } : {}),
        }
      },
    }
  },
}

export const subagent: ServerToolKind<z.infer<typeof SubagentParameters>> = {
  type: 'openrouter:subagent',
  parameters: SubagentParameters,
  offer(p): ServerTool {
    return {
      type: 'openrouter:subagent',
      definition: {
        name: toolName('subagent', p.name),
        description: `Hands a task to ${p.name ? `the subagent "${p.name}"` : 'a subagent'} (another model${p.tools?.length ? ' with tools' : ''}), which works on it alone and returns its outcome.`,
        parameters: {
          type: 'object',
          properties: {
            task: { type: 'string', description: 'The task, with everything the subagent needs to know' },
            task_name: { type: 'string', description: 'A short name for the task' },
            ...(p.model ? {} : { model: { type: 'string', description: 'A model to hand it to (optional)' } }),
          },
          required: ['task'],
          additionalProperties: false,
        },
      },
      run: (args, ctx) =>
        consulted(ctx, () =>
          ctx.consult!({
            ...asked(p, args, args.task),
            ...(p.tools?.length ? { tools: p.tools, max_tool_calls: p.max_tool_calls ?? 10 } : {}),
          }),
        ),
      itemFields(args, output) {
        const o = output as Partial<Consulted>
        const error = errorOf(output)
        return {
          task_description: str(args.task) ?? '',
          ...(str(args.task_name) ? { task_name: str(args.task_name) } : {}),
          ...(o.text !== undefined ? { outcome: o.text } : {}),
          ...(o.model ? { model: o.model } : {}),
          ...(p.name ? { instance_name: p.name } : {}),
          ...(error ? { error } : {}),
        }
      },
    }
  },
}
