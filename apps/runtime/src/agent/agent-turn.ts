import type { TurnUsage } from '@roster/protocol'
import type { AgentEvent, AgentSetup, Json } from './agent-setup.js'
import { modelTurn } from './model-call.js'
import { runTool } from './agent-tools.js'

export type { AgentEvent, AgentSetup } from './agent-setup.js'

export { MODEL_CALL_RETRIES, retryWait, TurnFailed } from './model-call.js'

// One turn of an intern's run: its model called through Roster's own /responses as the intern (its
// own key), with its instructions, the session's history and its own tools; tool calls run in its
// sandbox and go back to the model until it answers in text. What happens streams out as events;
// the session keeps every item, so the next turn (or a restarted host) continues from it.

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
    // A subagent that has spent its budget runs nothing more: it says so, and its turn ends.
    const spent = setup.budgetUsd !== undefined && usage.cost >= setup.budgetUsd
    if (spent && calls.length) {
      const note = `(stopped: its budget of $${setup.budgetUsd} is spent)`
      emit({ type: 'text', delta: note, model: setup.model })
      for (const call of calls)
        items.push({ type: 'function_call_output', call_id: call.call_id, output: JSON.stringify({ error: note }) })
      items.push({ type: 'message', role: 'assistant', content: note })
      await setup.sessions.append(sessionId, items)
      return { ...usage, cost: Number(usage.cost.toPrecision(12)) }
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
