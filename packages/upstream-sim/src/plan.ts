import { countTokens, replyTokens, sampleFor, tokenLogprobs, type TokenLogprob } from './content.js'
import type { SimSettings } from './settings.js'

/** What a request asks for, whatever its protocol. */
export interface Ask {
  model: string
  /** All input text, for seeding and counting. */
  inputText: string
  tools: { name: string; parameters?: unknown }[]
  /** auto | none | required, or the name of the one tool to call. */
  toolChoice: string
  /** The conversation ends with a tool result: answer in text now. */
  afterToolResult: boolean
  /** The latest user prompt (a script is read from it). */
  promptText: string
  /** Tool results since that prompt: which step of its script is next. */
  toolResults: number
  /** The text of the latest of them (a script's `say` may quote it as {{result}}). */
  lastResult?: string
  maxTokens?: number
  stop?: string[]
  /** The request marks content for caching (cache_control, prompt_cache_key…). */
  cache: boolean
  reasoning: boolean
  /** Log probabilities were asked for, with this many alternatives per token (absent: not asked). */
  logprobs?: number
}

/** What the simulator answers, whatever its protocol. */
export interface Plan {
  id: string
  model: string
  text: string[]
  /** One per text token, when the request asked for them. */
  logprobs?: TokenLogprob[]
  reasoning: string[]
  toolCall?: { id: string; name: string; arguments: string }
  finish: 'stop' | 'length' | 'tool'
  usage: { input: number; cached: number; cacheWrite: number; output: number; reasoning: number }
}

let sequence = 0

/** What the demo says to any prompt without a script: what it is, and how to get a real model. */
export const DEMO_NOTE =
  "I am Roster's built-in upstream simulator, not a language model: I cannot understand or answer " +
  'your message. Roster started me because it was given no model provider. To talk to a real ' +
  'model, stop Roster and start it again with a provider key in the environment (for example ' +
  'OPENAI_API_KEY or ANTHROPIC_API_KEY), an Ollama server running on this machine, or a ' +
  'MODEL_CATALOGUE of your own (see the README). Until then I follow scripts written into a message, ' +
  'such as "[sim] say Hello!" (docs/chat.md lists them).'

/** Decides the answer. `seenPrompts` makes caching real: a prompt is a cache hit the second time. */
export function plan(ask: Ask, settings: SimSettings, seenPrompts: Set<string>): Plan {
  const p = decide(ask, settings, seenPrompts)
  if (ask.logprobs !== undefined && p.text.length) p.logprobs = tokenLogprobs(p.text, ask.logprobs, ask.inputText)
  return p
}

function decide(ask: Ask, settings: SimSettings, seenPrompts: Set<string>): Plan {
  const id = `sim-${Date.now().toString(36)}-${(sequence++).toString(36)}`
  const input = countTokens(ask.inputText)
  const cacheHit = ask.cache && seenPrompts.has(ask.inputText)
  if (ask.cache && seenPrompts.size < 100_000) seenPrompts.add(ask.inputText)
  const usage = {
    input,
    cached: cacheHit ? input : 0,
    cacheWrite: ask.cache && !cacheHit ? input : 0,
    output: 0,
    reasoning: ask.reasoning ? 8 : 0,
  }
  const reasoning = ask.reasoning ? replyTokens(`reasoning:${ask.inputText}`, 8) : []
  // A script in the prompt decides the turn instead of the dice (see scriptOf).
  const step = scriptOf(ask.promptText)[ask.toolResults]
  if (step?.kind === 'call' && ask.tools.some((t) => t.name === step.tool) && ask.toolChoice !== 'none') {
    usage.output = countTokens(step.arguments) + usage.reasoning
    return {
      id,
      model: ask.model,
      text: [],
      reasoning,
      toolCall: { id: `call_${id}`, name: step.tool, arguments: step.arguments },
      finish: 'tool',
      usage,
    }
  }
  if (step) {
    const said =
      step.kind === 'say'
        ? step.text.replaceAll('{{result}}', () => ask.lastResult ?? '')
        : `(script: the tool ${step.tool} is not offered)`
    const text = splitLike(said)
    usage.output = text.length + usage.reasoning
    return { id, model: ask.model, text, reasoning, finish: 'stop', usage }
  }
  // The demo calls a tool only when the request demands one: never "unasked".
  const demanded = ask.toolChoice !== 'auto' && ask.toolChoice !== 'none'
  const callable =
    settings.toolCalls &&
    ask.tools.length > 0 &&
    ask.toolChoice !== 'none' &&
    (!settings.demo || demanded) &&
    (!ask.afterToolResult || settings.repeatToolCalls)
  if (callable) {
    const tool = ask.tools.find((t) => t.name === ask.toolChoice) ?? ask.tools[0]!
    const args = JSON.stringify(sampleFor(tool.parameters, 0, settings.sampleUrl))
    usage.output = countTokens(args) + usage.reasoning
    return {
      id,
      model: ask.model,
      text: [],
      reasoning,
      toolCall: { id: `call_${id}`, name: tool.name, arguments: args },
      finish: 'tool',
      usage,
    }
  }
  const limit = ask.maxTokens !== undefined ? Math.max(0, ask.maxTokens - usage.reasoning) : Infinity
  const note = settings.demo ? splitLike(DEMO_NOTE) : undefined
  const wanted = note ? note.length : settings.replyTokens
  let text = note ? note.slice(0, Math.min(wanted, limit)) : replyTokens(ask.inputText, Math.min(wanted, limit))
  let finish: Plan['finish'] = wanted > limit ? 'length' : 'stop'
  for (const stop of ask.stop ?? []) {
    const joined = text.join('')
    const at = stop ? joined.indexOf(stop) : -1
    if (at >= 0) {
      text = splitLike(joined.slice(0, at))
      finish = 'stop'
    }
  }
  usage.output = text.length + usage.reasoning
  return { id, model: ask.model, text, reasoning, finish, usage }
}

/**
 * `[sim] fail <429|500|503> <n>` on a line of the latest prompt: the first n calls with this very
 * input fail with that status (`failed` counts them), the next are answered; for tests of retries.
 */
export function scriptedFault(ask: Ask, failed: Map<string, number>): '429' | '500' | '503' | undefined {
  if (!ask.promptText.includes('[sim]')) return undefined
  const m = /^\s*\[sim\]\s+fail\s+(429|500|503)\s+(\d+)\s*$/m.exec(ask.promptText)
  if (!m) return undefined
  const times = failed.get(ask.inputText) ?? 0
  if (times >= Number(m[2])) return undefined
  // Bounded: past 100,000 conversations the counts start again (a count not kept would fail forever).
  if (failed.size >= 100_000) failed.clear()
  failed.set(ask.inputText, times + 1)
  return m[1] as '429' | '500' | '503'
}

export type ScriptStep = { kind: 'call'; tool: string; arguments: string } | { kind: 'say'; text: string }

/**
 * A script in the latest user prompt, for tests that need a run to go a given way: each line
 * `[sim] call <tool> <JSON arguments>` or `[sim] say <text>` is one turn, in order; the turn after
 * the n-th tool result since that prompt plays line n+1. In a `say`, `{{result}}` stands for the
 * latest tool result's text (so a run can report what its tool gave). Past the last line, and without a script,
 * the simulator answers as usual. A call of a tool the request does not offer is answered in text
 * saying so. Other lines of the prompt are ignored.
 */
export function scriptOf(text: string): ScriptStep[] {
  if (!text.includes('[sim]')) return []
  const steps: ScriptStep[] = []
  for (const line of text.split('\n')) {
    const m = /^\s*\[sim\]\s+(call|say)\s+(.*)$/.exec(line)
    if (!m) continue
    if (m[1] === 'say') steps.push({ kind: 'say', text: m[2]!.trim() })
    else {
      const call = /^([A-Za-z0-9_.:-]+)\s*(.*)$/.exec(m[2]!.trim())
      if (call) steps.push({ kind: 'call', tool: call[1]!, arguments: call[2]!.trim() || '{}' })
    }
  }
  return steps
}

function splitLike(text: string): string[] {
  return text.match(/\s*\S+/g) ?? []
}

/** Text of any message content shape (string, parts with text, tool results). */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content
  if (Array.isArray(content)) return content.map(textOf).join(' ')
  if (content && typeof content === 'object') {
    const c = content as Record<string, unknown>
    return textOf(c.text ?? c.content ?? c.output ?? c.input_text ?? '')
  }
  return ''
}

/** Whether any part of a request asks for caching. */
export function wantsCache(body: unknown): boolean {
  return (
    JSON.stringify(body ?? {}).includes('"cache_control"') ||
    (body as { prompt_cache_key?: string })?.prompt_cache_key !== undefined
  )
}

/** The latest prompt of a conversation (its text) and how many tool results came after it. */
export function sincePrompt<T extends { content?: unknown }>(
  items: T[],
  isPrompt: (i: T) => boolean,
  isResult: (i: T) => boolean,
): { promptText: string; toolResults: number; lastResult?: string } {
  let at = -1
  for (let i = items.length - 1; i >= 0; i--)
    if (isPrompt(items[i]!)) {
      at = i
      break
    }
  const results = items.slice(at + 1).filter(isResult)
  return {
    promptText: at >= 0 ? textOf(items[at]!.content) : '',
    toolResults: results.length,
    lastResult: results.length ? textOf(results.at(-1)) : undefined,
  }
}
