import { emptyUsage, type Delta, type Finish, type Usage } from './deltas.js'
import {
  CallInProgress,
  MessageInProgress,
  ReasoningInProgress,
  type Emit,
  type ItemSink,
  type TurnCall,
} from './items-in-progress.js'
import type { OutputItem, ServerToolItem } from './wire.js'

export { itemId } from './item-id.js'
export type { Emit, TurnCall } from './items-in-progress.js'

/**
 * Builds the Response's output from deltas, turn after turn, and (when streaming) the events of
 * each item's lifecycle: output_item.added → content_part.added → deltas → the `.done`s. Items
 * are numbered in the order they are added; an item closes when something else starts.
 */
export class ResponseAssembler implements ItemSink {
  readonly output: OutputItem[] = []
  readonly usage: Usage = emptyUsage()
  finish: Finish = 'stop'
  private turnUsage: Usage = emptyUsage()
  private message?: MessageInProgress
  private reasoning?: ReasoningInProgress
  private calls = new Map<number, CallInProgress>()
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
        if (!d.delta) return
        this.closeReasoning()
        this.message ??= new MessageInProgress(this)
        this.message.delta(d.type, d.delta, d.type === 'text' ? d.logprobs : undefined)
        return
      case 'reasoning':
        if (!d.delta) return
        this.closeMessage()
        this.reasoning ??= new ReasoningInProgress(this)
        this.reasoning.delta(d.delta)
        return
      case 'tool_call': {
        let call = this.calls.get(d.index)
        if (!call) {
          this.closeReasoning()
          this.closeMessage()
          call = new CallInProgress(this, d, this.serverTools.has(d.name ?? ''))
          this.calls.set(d.index, call)
        }
        if (d.arguments) call.delta(d.arguments)
        return
      }
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
    for (const call of this.calls.values()) this.turnCalls.push(call.close())
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

  /** Adds a model's item to the output, announcing a copy of it as it starts (ItemSink). */
  addItem(item: OutputItem): number {
    const index = this.output.push(item) - 1
    this.emit?.({ type: 'response.output_item.added', output_index: index, item: { ...item } })
    return index
  }

  private closeMessage() {
    this.message?.close()
    this.message = undefined
  }

  private closeReasoning() {
    this.reasoning?.close()
    this.reasoning = undefined
  }
}
