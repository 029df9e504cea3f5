import type { ApprovalMode, RunEvent, TurnUsage } from '@roster/protocol'
import type { CommandLimits, CommandResult } from '../sandbox.js'
import type { SessionStore } from './session-store.js'
import type { Answer, Question } from './interactions.js'
import { modelTurn, type Json, type TurnFailed } from './model-call.js'
import { runTool, type HttpRequestArgs } from './agent-tools.js'

export { MODEL_CALL_RETRIES, retryWait, TurnFailed } from './model-call.js'

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
