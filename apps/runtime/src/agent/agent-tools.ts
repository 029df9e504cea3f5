import { EgressRequest } from '@roster/protocol'
import { listWorkspaceFiles, readWorkspaceFile, writeWorkspaceFile } from '../workspace-files.js'
import { ElicitationRequest, PERMISSION_OPTIONS } from './interactions.js'
import type { AgentSetup, Json } from './agent-setup.js'

export type { HttpRequestArgs } from './agent-setup.js'

// The tools an intern's model is offered (its shell, its workspace's files, questions to its user,
// HTTP requests through the egress, its MCP servers' tools) and how each call runs, in manual mode
// only once the user allows.

export const TOOLS = [
  {
    type: 'function',
    name: 'shell',
    description:
      'Run a bash command in your workspace (/workspace). Returns exit code, stdout and stderr. Set network to true when the command needs the network.',
    parameters: {
      type: 'object',
      properties: { command: { type: 'string' }, network: { type: 'boolean' } },
      required: ['command'],
    },
  },
  {
    type: 'function',
    name: 'ask_user',
    description:
      'Ask the user a question and wait for the answer. fields: what to fill in, each {name, type: string|number|integer|boolean, required, options?}.',
    parameters: {
      type: 'object',
      properties: { message: { type: 'string' }, fields: { type: 'array', items: { type: 'object' } } },
      required: ['message'],
    },
  },
  {
    type: 'function',
    name: 'read_file',
    description: 'Read a file of your workspace.',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
  {
    type: 'function',
    name: 'write_file',
    description: 'Write (create or replace) a file of your workspace.',
    parameters: {
      type: 'object',
      properties: { path: { type: 'string' }, content: { type: 'string' } },
      required: ['path', 'content'],
    },
  },
  {
    type: 'function',
    name: 'list_files',
    description: 'List a directory of your workspace.',
    parameters: { type: 'object', properties: { path: { type: 'string' }, depth: { type: 'integer' } } },
  },
]
export const HTTP_TOOL = {
  type: 'function',
  name: 'http_request',
  description:
    'Make an HTTP(S) request. Write {{secret:NAME}} in a header or the body to use one of your secrets; it is sent only to the hosts it is bound to.',
  parameters: {
    type: 'object',
    properties: {
      method: { type: 'string' },
      url: { type: 'string' },
      headers: { type: 'object', additionalProperties: { type: 'string' } },
      body: { type: 'string' },
    },
    required: ['url'],
  },
}

export const SUBAGENT_TOOL = {
  type: 'function',
  name: 'start_subagent',
  description:
    'Start a subagent: a turn of your own in a session of its own, with this prompt (and a model, and a budget in USD it stops at). It runs alongside you (this turn goes on, and so do later ones); when it ends you are told, in this session, what it said. Its usage is yours.',
  parameters: {
    type: 'object',
    properties: { prompt: { type: 'string' }, model: { type: 'string' }, budget_usd: { type: 'number' } },
    required: ['prompt'],
  },
}

/**
 * In manual mode, whether the user lets an approval-bearing operation happen: asked each time
 * unless they answered allow_always or reject_always for its kind earlier in this run. Undefined
 * when it may go ahead; else what the model is told instead.
 */
async function permitted(
  setup: AgentSetup,
  grants: Map<string, 'allow' | 'reject'>,
  kind: string,
  operation: string,
): Promise<string | undefined> {
  if (setup.approval !== 'manual') return undefined
  let grant = grants.get(kind)
  if (!grant) {
    const answer = await setup.ask({
      kind: 'permission',
      operation: operation.length > 500 ? `${operation.slice(0, 500)}…` : operation,
      options: [...PERMISSION_OPTIONS],
    })
    const choice = answer.kind === 'permission' ? answer.choice : 'cancel'
    if (choice === 'allow_always' || choice === 'reject_always')
      grants.set(kind, choice === 'allow_always' ? 'allow' : 'reject')
    grant = choice.startsWith('allow') ? 'allow' : 'reject'
  }
  return grant === 'allow' ? undefined : JSON.stringify({ error: 'the user did not allow this; carry on without it' })
}

export async function runTool(
  setup: AgentSetup,
  grants: Map<string, 'allow' | 'reject'>,
  name: string,
  argText: string,
  signal?: AbortSignal,
): Promise<string> {
  let args: Json
  try {
    const parsed: unknown = JSON.parse(argText || '{}')
    args = typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Json) : {}
  } catch {
    return JSON.stringify({ error: 'the arguments are not JSON' })
  }
  try {
    switch (name) {
      case 'shell': {
        const command = String(args.command ?? '')
        // Manual: commands run without network unless the user allows it for this one (its own permission).
        // Self-drive: every command has the network, when the host can give it.
        const network = setup.commandNetwork && (setup.approval === 'self-drive' || args.network === true)
        const refused = await permitted(
          setup,
          grants,
          network ? 'shell_network' : 'shell',
          `${network ? 'shell command with network' : 'shell command'}: ${command}`,
        )
        if (refused) return refused
        const r = await setup.runCommand(
          command,
          { network, timeoutMs: setup.commandTimeoutMs, maxOutputBytes: 64 * 1024 },
          signal,
        )
        return JSON.stringify({
          exit_code: r.exitCode,
          stdout: r.stdout,
          stderr: r.stderr,
          ...(r.timedOut ? { timed_out: true } : {}),
          ...(r.truncated ? { truncated: true } : {}),
        })
      }
      case 'ask_user': {
        const request = ElicitationRequest.safeParse(args)
        if (!request.success)
          return JSON.stringify({
            error: `ask_user needs {message, fields: [{name, type, required, options?}]}: ${request.error.issues[0]?.message}`,
          })
        const answer = await setup.ask({
          kind: 'elicitation',
          message: request.data.message,
          fields: request.data.fields,
        })
        return JSON.stringify(
          answer.kind === 'elicitation' && answer.action === 'accept'
            ? { action: 'accept', content: answer.content }
            : {
                action: answer.kind === 'elicitation' ? answer.action : 'cancel',
                note: 'the user gave no answer; carry on without it',
              },
        )
      }
      case 'read_file':
        return JSON.stringify(await readWorkspaceFile(setup.workspace, String(args.path ?? '')))
      case 'write_file':
        return JSON.stringify(
          await writeWorkspaceFile(setup.workspace, String(args.path ?? ''), String(args.content ?? '')),
        )
      case 'http_request': {
        if (!setup.http) return JSON.stringify({ error: 'there is no tool named http_request' })
        // Checked by the egress's own schema, before the user is asked about a request that cannot be sent.
        const headers = EgressRequest.shape.headers.safeParse(args.headers)
        if (!headers.success) return JSON.stringify({ error: 'http_request: headers must be an object of strings' })
        const refused = await permitted(
          setup,
          grants,
          'http_request',
          `http_request: ${String(args.method ?? 'GET').toUpperCase()} ${String(args.url ?? '')}`,
        )
        if (refused) return refused
        return JSON.stringify(
          await setup.http(
            {
              method: args.method === undefined ? undefined : String(args.method),
              url: String(args.url ?? ''),
              headers: headers.data,
              body: args.body === undefined ? undefined : String(args.body),
            },
            signal,
          ),
        )
      }
      case 'list_files':
        return JSON.stringify(
          await listWorkspaceFiles(
            setup.workspace,
            args.path === undefined ? '.' : String(args.path),
            Number(args.depth ?? 1),
          ),
        )
      case 'start_subagent': {
        if (!setup.startSubagent) return JSON.stringify({ error: 'there is no tool named start_subagent' })
        const prompt = String(args.prompt ?? '').trim()
        if (!prompt) return JSON.stringify({ error: 'start_subagent needs a prompt' })
        const budget = args.budget_usd === undefined ? undefined : Number(args.budget_usd)
        if (budget !== undefined && !(budget > 0 && budget <= 1_000))
          return JSON.stringify({ error: 'budget_usd is a number of dollars above 0, at most 1000' })
        return JSON.stringify(
          await setup.startSubagent({
            prompt: prompt.slice(0, 32_000),
            ...(args.model ? { model: String(args.model) } : {}),
            ...(budget !== undefined ? { budget_usd: budget } : {}),
          }),
        )
      }
      default: {
        const extra = setup.extraTools?.run(
          name,
          args,
          (kind, operation) => permitted(setup, grants, kind, operation),
          signal,
        )
        return extra ? await extra : JSON.stringify({ error: `there is no tool named ${name}` })
      }
    }
  } catch (err) {
    // A run that ended (cancelled, suspended, past a question's deadline) ends here, not in a tool output.
    if (signal?.aborted) throw err
    return JSON.stringify({ error: (err as Error).message })
  }
}
