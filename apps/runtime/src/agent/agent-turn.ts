import { setTimeout as sleep } from 'node:timers/promises'
import { request } from 'undici'
import { EgressRequest, retryableAnswer, type ApprovalMode, type RunEvent, type TurnUsage } from '@roster/protocol'
import { injectTrace, readEventStream } from '@roster/platform'
import type { CommandLimits, CommandResult } from '../sandbox.js'
import { listWorkspaceFiles, readWorkspaceFile, writeWorkspaceFile } from '../workspace-files.js'
import type { SessionStore } from './session-store.js'
import { ElicitationRequest, PERMISSION_OPTIONS, type Answer, type Question } from './interactions.js'

type HttpRequestArgs = Omit<EgressRequest, 'method'> & { method?: string }
/** A session item, and a tool's arguments: JSON objects. */
type Json = Record<string, unknown>

/** What the turn reads of /responses' reply (the rest of it is passed over). */
interface ModelReply {
  model?: string
  output?: {
    type: string
    content?: { type: string; text?: string }[]
    call_id?: string
    name?: string
    arguments?: string
  }[]
  usage?: { input_tokens?: number; output_tokens?: number; total_tokens?: number; cost?: number }
  error?: { message?: string; metadata?: { retryable?: unknown; error_type?: unknown } }
}
/** What the turn reads of /responses' stream events. */
interface ReplyEvent {
  type: string
  delta?: string
  response?: ModelReply
}

// One turn of an intern's run: its model called through Roster's own /responses as the intern (its
// own key), with its instructions, the session's history and its own tools; tool calls run in its
// sandbox and go back to the model until it answers in text. What happens streams out as events;
// the session keeps every item, so the next turn (or a restarted host) continues from it.

export interface AgentSetup {
  /** Roster's API base (…/api/v1). */
  apiBase: string
  /** The intern's own API key (kind intern). */
  apiKey: string
  model: string
  instructions: string | null
  /** The intern's workspace directory (mounted at /workspace in its sandbox). */
  workspace: string
  /** Runs a shell command in the intern's workspace, in its sandbox; `network`: through its egress. */
  runCommand: (
    command: string,
    opts: CommandLimits & { network: boolean },
    signal?: AbortSignal,
  ) => Promise<CommandResult>
  sessions: SessionStore
  /** Model turns at most per run (tool calls in between); then one last turn without tools. */
  maxSteps: number
  commandTimeoutMs: number
  /** Told of a model call made again after a passing refusal (for the host's log). */
  onRetry?: (err: TurnFailed, waitMs: number, attempt: number) => void
  /** Prompts sent into this running turn (steering): taken between model calls, answered in this turn. */
  steered?: () => string[]
  /** The intern's HTTP requests, through the egress that releases its secrets by host (absent: no http_request tool). */
  http?: (args: HttpRequestArgs, signal?: AbortSignal) => Promise<unknown>
  /**
   * `manual`: every shell command, network for one, and every HTTP request first asks the user's
   * permission. `self-drive`: nothing asks, and shell commands get the network (when the host can give it).
   */
  approval: ApprovalMode
  /** Whether this host can give a shell command the network (through the egress). */
  commandNetwork: boolean
  /** Puts a question to the user and waits for the answer (the run pauses meanwhile; rejects when the run ends). */
  ask: (question: Question) => Promise<Answer>
}

/** What a turn tells as it goes: the protocol's run events of text, reasoning and tools. */
export type AgentEvent = Extract<RunEvent, { type: 'text' | 'reasoning' | 'tool' }>

export class TurnFailed extends Error {
  override name = 'TurnFailed'
  /** Whether trying again may help: the API's word for it (retryableAnswer), else its status's. */
  readonly retryable: boolean
  /** How long the answer asked the caller to wait before trying again (Retry-After), in ms. */
  readonly retryAfterMs?: number
  constructor(
    message: string,
    /** The HTTP status the model call answered. */
    readonly status: number,
    answer: { error?: ModelReply['error']; retryAfterMs?: number } = {},
  ) {
    super(message)
    this.retryable = retryableAnswer(status, answer.error?.metadata)
    this.retryAfterMs = answer.retryAfterMs
  }
}

/**
 * A model call the API refused for a passing reason (429, 5xx, or a connection that broke before
 * its answer) is made again, as the official clients do (OpenAI's and Anthropic's: twice, backing
 * off from half a second, Retry-After obeyed): a provider's hiccup or a moment of load on the API is
 * not the user's failed turn. A refused call showed nothing and was not charged, so the second call
 * duplicates nothing (a connection that broke mid-call is the exception: the API records, cancelled,
 * a call its provider had begun answering, and that part is charged, as for any client that leaves).
 * A wait asked for longer than MAX_RETRY_WAIT_MS fails the turn at once, saying so: the user, not a
 * hidden sleep, decides whether to wait that long.
 */
export const MODEL_CALL_RETRIES = 2
const FIRST_RETRY_WAIT_MS = 500
const MAX_RETRY_WAIT_MS = 8_000

/** How long to wait before the `attempt`-th retry of a call that failed with `err`; undefined: do not retry. */
export function retryWait(err: unknown, attempt: number): number | undefined {
  if (!(err instanceof TurnFailed) || !err.retryable || attempt > MODEL_CALL_RETRIES) return undefined
  if (err.retryAfterMs !== undefined) return err.retryAfterMs <= MAX_RETRY_WAIT_MS ? err.retryAfterMs : undefined
  // Exponential with jitter (a quarter either way), so interns failed together do not retry together.
  const base = FIRST_RETRY_WAIT_MS * 2 ** (attempt - 1)
  return Math.round(base * (0.75 + Math.random() * 0.5))
}

/** Retry-After as milliseconds: delta-seconds or an HTTP date; undefined when absent or unreadable. */
function retryAfterMs(header: string | string[] | undefined): number | undefined {
  const value = Array.isArray(header) ? header[0] : header
  if (value === undefined || value.trim() === '') return undefined
  const seconds = Number(value)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const at = Date.parse(value)
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now())
}

const TOOLS = [
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
const HTTP_TOOL = {
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

/** Runs one turn for `userText` in `sessionId`; resolves with the turn's summed usage. */
export async function runAgentTurn(
  setup: AgentSetup,
  sessionId: string,
  userText: string,
  emit: (e: AgentEvent) => void,
  signal?: AbortSignal,
): Promise<TurnUsage> {
  const history = await setup.sessions.load(sessionId)
  const added: Json[] = [{ type: 'message', role: 'user', content: userText }]
  // Kept while the model answers: started once its first event arrives (or it ends), so the write
  // (through the API, when sessions are kept off the host) never delays the first chunk; awaited
  // before the turn goes on, so a failure to keep it fails the turn below. The store keeps appends
  // in order.
  let keeping: Promise<void> | undefined
  const keep = () => {
    keeping ??= setup.sessions.append(sessionId, [...added.slice(0, 1)])
    keeping.catch(() => {})
    return keeping
  }
  const firstEmit = (e: AgentEvent) => {
    void keep()
    emit(e)
  }
  const usage: TurnUsage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, cost: 0 }
  const asPrompts = (texts: string[]) => texts.map((text) => ({ type: 'message', role: 'user', content: text }))
  let late: Json[] = []
  const grants = new Map<string, 'allow' | 'reject'>()
  for (let step = 0; ; step++) {
    // Prompts steered in after the last call's items were kept join now, before this call.
    if (late.length) {
      added.push(...late)
      await setup.sessions.append(sessionId, late)
    }
    const last = step >= setup.maxSteps
    const response = await modelTurn(
      setup,
      [...history, ...added],
      last,
      step === 0 ? firstEmit : emit,
      signal,
    ).finally(() => void keep())
    if (step === 0) await keep()
    usage.prompt_tokens += response.usage?.input_tokens ?? 0
    usage.completion_tokens += response.usage?.output_tokens ?? 0
    usage.total_tokens += response.usage?.total_tokens ?? 0
    usage.cost += response.usage?.cost ?? 0
    const items: Json[] = []
    const calls: { call_id?: string; name: string; arguments: string }[] = []
    for (const o of response.output ?? []) {
      if (o.type === 'message')
        items.push({
          type: 'message',
          role: 'assistant',
          content: (o.content ?? [])
            .filter((p) => p.type === 'output_text')
            .map((p) => p.text)
            .join(''),
        })
      if (o.type === 'function_call') {
        const call = { call_id: o.call_id, name: o.name ?? '', arguments: o.arguments ?? '' }
        items.push({ type: 'function_call', ...call })
        calls.push(call)
      }
    }
    for (const call of calls) {
      const output = await runTool(setup, grants, call.name, call.arguments, signal)
      emit({ type: 'tool', name: call.name, arguments: call.arguments, output })
      items.push({ type: 'function_call_output', call_id: call.call_id, output })
    }
    // Prompts that arrived while the model or a tool ran join the conversation before the next call.
    const steering = asPrompts(setup.steered?.() ?? [])
    items.push(...steering)
    added.push(...items)
    await setup.sessions.append(sessionId, items)
    // Checked again with nothing awaited between this and the decision: a prompt steered in while
    // the items were being kept is answered in this turn, never dropped.
    late = asPrompts(setup.steered?.() ?? [])
    if ((!calls.length && !steering.length && !late.length) || last)
      return { ...usage, cost: Number(usage.cost.toPrecision(12)) }
  }
}

/**
 * One streamed call of /responses as the intern: text and reasoning leave as they come. Made again
 * (retryWait) when it fails for a passing reason before the API has answered 200.
 */
async function modelTurn(
  setup: AgentSetup,
  input: Json[],
  last: boolean,
  emit: (e: AgentEvent) => void,
  signal?: AbortSignal,
): Promise<ModelReply> {
  for (let attempt = 1; ; attempt++) {
    const call = { answered: false }
    try {
      return await modelCall(setup, input, last, emit, call, signal)
    } catch (err) {
      // Once the API has answered 200 the call is under way (and may be charged): a failure in its
      // stream fails the turn, as the official clients do not retry a stream either.
      const wait = call.answered || signal?.aborted ? undefined : retryWait(err, attempt)
      if (wait === undefined) throw err
      setup.onRetry?.(err as TurnFailed, wait, attempt)
      await sleep(wait, undefined, { signal })
    }
  }
}

async function modelCall(
  setup: AgentSetup,
  input: Json[],
  last: boolean,
  emit: (e: AgentEvent) => void,
  call: { answered: boolean },
  signal?: AbortSignal,
): Promise<ModelReply> {
  const body = {
    model: setup.model,
    instructions: setup.instructions ?? undefined,
    input,
    tools: setup.http ? [...TOOLS, HTTP_TOOL] : TOOLS,
    tool_choice: last ? 'none' : 'auto',
    stream: true,
  }
  const res = await request(`${setup.apiBase}/responses`, {
    method: 'POST',
    headers: injectTrace({
      authorization: `Bearer ${setup.apiKey}`,
      'content-type': 'application/json',
      accept: 'text/event-stream',
    }),
    body: JSON.stringify(body),
    signal,
  }).catch((err: Error) => {
    // The API could not be reached, or the connection broke before its answer: a passing failure.
    if (signal?.aborted) throw err
    throw new TurnFailed(`the model call could not reach the API: ${err.message}`, 502)
  })
  if (res.statusCode !== 200) {
    const text = await res.body.text()
    let error: ModelReply['error']
    try {
      error = (JSON.parse(text) as ModelReply).error
    } catch {
      // Not JSON: the text itself says what went wrong.
    }
    throw new TurnFailed(
      `the model call answered ${res.statusCode}: ${error?.message ?? text.slice(0, 300)}`,
      res.statusCode,
      {
        error,
        retryAfterMs: retryAfterMs(res.headers['retry-after']),
      },
    )
  }
  call.answered = true
  let final: ModelReply | undefined
  let failure: ModelReply['error'] | undefined
  for await (const event of readEventStream(res.body, (data) =>
    data === '[DONE]' ? undefined : (JSON.parse(data) as ReplyEvent),
  )) {
    if (!event) continue
    const model = event.response?.model ?? setup.model
    if (event.type === 'response.output_text.delta') emit({ type: 'text', delta: event.delta ?? '', model })
    else if (event.type === 'response.reasoning_summary_text.delta')
      emit({ type: 'reasoning', delta: event.delta ?? '', model })
    else if (event.type === 'response.completed' || event.type === 'response.incomplete') final = event.response
    else if (event.type === 'response.failed') failure = event.response?.error ?? {}
  }
  if (failure) throw new TurnFailed(failure.message ?? 'the model call failed', 502, { error: failure })
  if (!final) throw new TurnFailed('the model stream ended before the reply was finished', 502)
  return final
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

async function runTool(
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
      default:
        return JSON.stringify({ error: `there is no tool named ${name}` })
    }
  } catch (err) {
    // A run that ended (cancelled, suspended, past a question's deadline) ends here, not in a tool output.
    if (signal?.aborted) throw err
    return JSON.stringify({ error: (err as Error).message })
  }
}
