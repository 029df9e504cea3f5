import { randomBytes } from 'node:crypto'
import { emptyUsage, type Delta, type Finish, type Usage } from './deltas.js'
import type {
  FunctionCallItem,
  ItemEvent,
  LogProb,
  MessageItem,
  OutputItem,
  OutputText,
  ReasoningItem,
  Refusal,
  ServerToolItem,
} from './wire.js'

/** Receives each Open Responses event as it is made (streaming); absent for a whole reply. */
export type Emit = (event: ItemEvent) => void

// Ids need to be unique, not secret: a random per-process part and a counter are as unique as
// 12 random bytes each time, without a call into the system's random source per item.
const PROCESS_PART = randomBytes(8).toString('hex')
let counter = 0
export const itemId = (prefix: string) => `${prefix}_${PROCESS_PART}${(counter++).toString(16).padStart(8, '0')}`

interface OpenText {
  kind: 'text' | 'refusal'
  index: number
  text: string
  logprobs: LogProb[]
}
interface OpenMessage {
  item: MessageItem
  index: number
  part?: OpenText
}
interface OpenReasoning {
  item: ReasoningItem
  index: number
  text: string
}
interface OpenCall {
  item: FunctionCallItem
  index: number
  /** Calls of server tools are run by Roster, so the client sees their result items instead. */
  server: boolean
}

/** A function call the model made in the turn that just ended. */
export interface TurnCall {
  callId: string
  name: string
  arguments: string
  server: boolean
}

/**
 * Builds the Response's output from deltas, turn after turn, and (when streaming) the events of
 * each item's lifecycle: output_item.added → content_part.added → deltas → the `.done`s. Items
 * are numbered in the order they are added; an item closes when something else starts.
 */
export class ResponseAssembler {
  readonly output: OutputItem[] = []
  readonly usage: Usage = emptyUsage()
  finish: Finish = 'stop'
  private turnUsage: Usage = emptyUsage()
  private message?: OpenMessage
  private reasoning?: OpenReasoning
  private calls = new Map<number, OpenCall>()
  private turnCalls: TurnCall[] = []

  constructor(
    /** Set when streaming: each event goes here as it is made. */
    public emit: Emit | undefined,
    private readonly serverTools: ReadonlySet<string> = new Set(),
  ) {}

  push(d: Delta) {
    switch (d.type) {
      case 'text':
      case 'refusal':
        if (d.delta) this.textDelta(d.type, d.delta, d.type === 'text' ? d.logprobs : undefined)
        return
      case 'reasoning':
        if (d.delta) this.reasoningDelta(d.delta)
        return
      case 'tool_call':
        return this.callDelta(d)
      case 'usage':
        for (const k in d.usage) {
          const v = d.usage[k as keyof Usage]
          if (v !== undefined) this.turnUsage[k as keyof Usage] = v
        }
        return
      case 'finish':
        this.finish = d.reason
    }
  }

  /** Closes what is open, adds the turn's usage, and says which calls the model made. */
  endTurn(): { usage: Usage; calls: TurnCall[] } {
    this.closeReasoning()
    this.closeMessage()
    // In the order the calls began (a Map keeps insertion order).
    for (const call of this.calls.values()) this.closeCall(call)
    this.calls.clear()
    const usage = this.turnUsage
    for (const k of Object.keys(usage) as (keyof Usage)[]) this.usage[k] += usage[k]
    const calls = this.turnCalls
    this.turnUsage = emptyUsage()
    this.turnCalls = []
    return { usage, calls }
  }

  /** Forgets a turn that failed before anything of it was shown, so another endpoint can redo it. */
  abandonTurn() {
    this.turnUsage = emptyUsage()
    this.turnCalls = []
    this.calls.clear()
    this.message = undefined
    this.reasoning = undefined
    this.finish = 'stop'
  }

  /** An item Roster makes itself (a server tool's call): announced when it starts… */
  startItem(pending: ServerToolItem): number {
    const index = this.output.push(pending) - 1
    this.emit?.({ type: 'response.output_item.added', output_index: index, item: pending })
    return index
  }

  /** …and replaced by its finished form when it is done. */
  finishItem(index: number, item: ServerToolItem) {
    this.output[index] = item
    this.emit?.({ type: 'response.output_item.done', output_index: index, item })
  }

  private add(item: OutputItem): number {
    const index = this.output.push(item) - 1
    this.emit?.({ type: 'response.output_item.added', output_index: index, item: { ...item } })
    return index
  }

  private textDelta(kind: 'text' | 'refusal', delta: string, logprobs: LogProb[] | undefined) {
    this.closeReasoning()
    if (!this.message) {
      const item: MessageItem = {
        type: 'message',
        id: itemId('msg'),
        role: 'assistant',
        status: 'in_progress',
        content: [],
      }
      this.message = { item, index: this.add(item) }
    }
    const m = this.message
    if (m.part?.kind !== kind) {
      this.closePart(m)
      const contentIndex = m.item.content.length
      const part: OutputText | Refusal =
        kind === 'text'
          ? { type: 'output_text', text: '', annotations: [], logprobs: [] }
          : { type: 'refusal', refusal: '' }
      m.item.content.push(part)
      m.part = { kind, index: contentIndex, text: '', logprobs: [] }
      this.emit?.({
        type: 'response.content_part.added',
        item_id: m.item.id,
        output_index: m.index,
        content_index: contentIndex,
        part: { ...part },
      })
    }
    const p = m.part!
    p.text += delta
    if (logprobs) for (const l of logprobs) p.logprobs.push(l)
    const at = { item_id: m.item.id, output_index: m.index, content_index: p.index }
    if (kind === 'text') this.emit?.({ type: 'response.output_text.delta', ...at, delta, logprobs: logprobs ?? [] })
    else this.emit?.({ type: 'response.refusal.delta', ...at, delta })
  }

  private closePart(m: OpenMessage) {
    const p = m.part
    if (!p) return
    const at = { item_id: m.item.id, output_index: m.index, content_index: p.index }
    const part: OutputText | Refusal =
      p.kind === 'text'
        ? { type: 'output_text', text: p.text, annotations: [], logprobs: p.logprobs }
        : { type: 'refusal', refusal: p.text }
    m.item.content[p.index] = part
    if (p.kind === 'text') this.emit?.({ type: 'response.output_text.done', ...at, text: p.text, logprobs: p.logprobs })
    else this.emit?.({ type: 'response.refusal.done', ...at, refusal: p.text })
    this.emit?.({ type: 'response.content_part.done', ...at, part })
    m.part = undefined
  }

  private closeMessage() {
    const m = this.message
    if (!m) return
    this.closePart(m)
    m.item.status = 'completed'
    this.emit?.({ type: 'response.output_item.done', output_index: m.index, item: m.item })
    this.message = undefined
  }

  private reasoningDelta(delta: string) {
    this.closeMessage()
    if (!this.reasoning) {
      const item: ReasoningItem = { type: 'reasoning', id: itemId('rs'), summary: [] }
      const index = this.add(item)
      this.reasoning = { item, index, text: '' }
      this.emit?.({
        type: 'response.reasoning_summary_part.added',
        item_id: item.id,
        output_index: index,
        summary_index: 0,
        part: { type: 'summary_text', text: '' },
      })
    }
    const r = this.reasoning
    r.text += delta
    this.emit?.({
      type: 'response.reasoning_summary_text.delta',
      item_id: r.item.id,
      output_index: r.index,
      summary_index: 0,
      delta,
    })
  }

  private closeReasoning() {
    const r = this.reasoning
    if (!r) return
    const part = { type: 'summary_text' as const, text: r.text }
    r.item.summary = [part]
    const at = { item_id: r.item.id, output_index: r.index, summary_index: 0 }
    this.emit?.({ type: 'response.reasoning_summary_text.done', ...at, text: r.text })
    this.emit?.({ type: 'response.reasoning_summary_part.done', ...at, part })
    this.emit?.({ type: 'response.output_item.done', output_index: r.index, item: r.item })
    this.reasoning = undefined
  }

  private callDelta(d: Extract<Delta, { type: 'tool_call' }>) {
    let call = this.calls.get(d.index)
    if (!call) {
      this.closeReasoning()
      this.closeMessage()
      const name = d.name ?? ''
      const item: FunctionCallItem = {
        type: 'function_call',
        id: itemId('fc'),
        call_id: d.id || itemId('call'),
        name,
        arguments: '',
        status: 'in_progress',
      }
      const server = this.serverTools.has(name)
      // A server tool's call is not the client's to see as a function call: it gets a result item.
      call = { item, index: server ? -1 : this.add(item), server }
      this.calls.set(d.index, call)
    }
    if (!d.arguments) return
    call.item.arguments += d.arguments
    if (!call.server)
      this.emit?.({
        type: 'response.function_call_arguments.delta',
        item_id: call.item.id,
        output_index: call.index,
        delta: d.arguments,
      })
  }

  private closeCall(call: OpenCall) {
    const { item } = call
    this.turnCalls.push({ callId: item.call_id, name: item.name, arguments: item.arguments, server: call.server })
    if (call.server) return
    item.status = 'completed'
    this.emit?.({
      type: 'response.function_call_arguments.done',
      item_id: item.id,
      output_index: call.index,
      name: item.name,
      arguments: item.arguments,
    })
    this.emit?.({ type: 'response.output_item.done', output_index: call.index, item })
  }
}
