import { emptyUsage, type Delta, type Finish, type Usage } from './deltas.js'
import type { NamespacedName } from './namespaces.js'
import {
  CallInProgress,
  MessageInProgress,
  ReasoningInProgress,
  type Emit,
  type ItemSink,
  type TurnCall,
} from './items-in-progress.js'
import {
  isProviderItem,
  type Annotation,
  type OutputItem,
  type ReasoningItem,
  type ServerToolItem,
  type HandedOverItem,
} from './wire.js'
import { annotateWritten, ProviderItems } from './written-items.js'

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
  /** The provider's own items of this turn. */
  private readonly providerItems = new ProviderItems(this)
  /** Where the turn under way began in the output. */
  private turnStart = 0
  /** The bytes of text, reasoning and call arguments the turn under way has passed on (for Roster's own count). */
  private turnBytes = 0

  constructor(
    /** Set when streaming: each event goes here as it is made. */
    public emit: Emit | undefined,
    private readonly serverTools: ReadonlySet<string> = new Set(),
    /** Flat names of namespace tools' functions, and the names the client gave them (namespaces.ts). */
    private readonly namespaced?: ReadonlyMap<string, NamespacedName>,
    /** The provider's items are named by their slug (CallOptions.providerItemNames). */
    readonly slugged = false,
  ) {}

  push(d: Delta) {
    switch (d.type) {
      case 'text':
      case 'refusal':
        if (!d.delta) return
        this.turnBytes += Buffer.byteLength(d.delta, 'utf8')
        this.closeReasoning()
        this.message ??= new MessageInProgress(this)
        this.message.delta(d.type, d.delta, d.type === 'text' ? d.logprobs : undefined)
        return
      case 'reasoning': {
        // A piece naming another item starts one (an empty item is an item too); an unnamed one continues.
        const another = d.item !== undefined && d.item !== this.reasoning?.key
        if (!d.delta && !another) return
        this.turnBytes += Buffer.byteLength(d.delta, 'utf8')
        this.closeMessage()
        if (another) this.closeReasoning()
        this.reasoning ??= new ReasoningInProgress(this, d.item)
        this.reasoning.delta(d.delta, d.part)
        return
      }
      case 'reasoning_state':
        this.closeMessage()
        this.reasoning ??= new ReasoningInProgress(this, undefined)
        this.reasoning.state(d.state)
        return
      case 'reasoning_redacted':
        this.closeMessage()
        this.closeReasoning()
        this.reasoning = new ReasoningInProgress(this, d.item, d.data)
        return
      case 'annotation':
        this.annotate(d.annotation, d.covers)
        return
      case 'provider_item':
        this.providerItems.put(d.key, d.item, d.done)
        return
      case 'tool_call': {
        let call = this.calls.get(d.index)
        if (!call) {
          this.closeReasoning()
          this.closeMessage()
          call = new CallInProgress(
            this,
            d,
            this.serverTools.has(d.name ?? ''),
            d.name ? this.namespaced?.get(d.name) : undefined,
          )
          this.calls.set(d.index, call)
        }
        if (d.arguments) {
          this.turnBytes += Buffer.byteLength(d.arguments, 'utf8')
          call.delta(d.arguments)
        }
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

  /**
   * Closes what is open, adds the turn's usage, and says which calls the model made, and what it
   * reasoned before them (a tool loop's next turn gives that back: Anthropic requires it with
   * thinking on, and its signature with it).
   */
  endTurn(): { usage: Usage; calls: TurnCall[]; reasoning: ReasoningItem[] } {
    this.closeReasoning()
    this.closeMessage()
    // In the order the calls began (a Map keeps insertion order).
    for (const call of this.calls.values()) this.turnCalls.push(call.close())
    this.calls.clear()
    const usage = this.turnUsage
    for (const k of Object.keys(usage) as (keyof Usage)[]) this.usage[k] += usage[k]
    const calls = this.turnCalls
    this.providerItems.closeAll()
    this.turnUsage = emptyUsage()
    this.turnCalls = []
    this.turnBytes = 0
    const reasoning = this.output.slice(this.turnStart).filter((i): i is ReasoningItem => i.type === 'reasoning')
    this.turnStart = this.output.length
    return { usage, calls, reasoning }
  }

  /** The usage the turn under way has reported so far (a call that broke is accounted with it). */
  get usageSoFar(): Usage {
    return { ...this.turnUsage }
  }

  /** The bytes of text, reasoning and call arguments the turn under way has passed on. */
  get bytesSoFar(): number {
    return this.turnBytes
  }

  /** The text, reasoning and call arguments the turn under way has written (what its output tokens are). */
  textsSoFar(): string[] {
    const texts: string[] = []
    for (const item of this.output.slice(this.turnStart)) {
      if (isProviderItem(item)) continue
      if (item.type === 'message')
        for (const p of item.content) texts.push(p.type === 'output_text' ? p.text : p.refusal)
      else if (item.type === 'reasoning') for (const p of item.summary) texts.push(p.text)
    }
    // The open message and reasoning hold their text in their parts until they close.
    for (const open of [this.message, this.reasoning]) if (open) texts.push(open.textSoFar)
    // A call's name is the model's output too (a call without arguments is still tokens).
    for (const call of this.calls.values()) texts.push(call.item.name, call.item.arguments)
    return texts
  }

  /** Forgets a turn that failed before anything of it was shown, so another endpoint can redo it. */
  abandonTurn() {
    this.turnUsage = emptyUsage()
    this.turnBytes = 0
    this.turnCalls = []
    this.calls.clear()
    this.providerItems.forget()
    this.message = undefined
    this.reasoning = undefined
    this.finish = 'stop'
  }

  /** An item Roster makes itself (a server tool's call): announced when it starts… */
  startItem(pending: ServerToolItem | HandedOverItem): number {
    const index = this.output.push(pending) - 1
    this.emit?.({ type: 'response.output_item.added', output_index: index, item: pending })
    return index
  }

  /** …and replaced by its finished form when it is done. */
  finishItem(index: number, item: ServerToolItem | HandedOverItem) {
    this.output[index] = item
    this.emit?.({ type: 'response.output_item.done', output_index: index, item })
  }

  /** Adds a model's item to the output, announcing a copy of it as it starts (ItemSink). */
  addItem(item: OutputItem): number {
    const index = this.output.push(item) - 1
    this.emit?.({ type: 'response.output_item.added', output_index: index, item: { ...item } })
    return index
  }

  /**
   * An annotation goes on the message being written, or, if none is open, on the last text part
   * written (a provider may send its citations after the text they cite).
   */
  private annotate(annotation: Annotation, covers: number | undefined) {
    if (this.message) return this.message.annotate(annotation, covers)
    if (annotateWritten(this.output, annotation, covers, this.emit)) return
    // Nothing was written to cite: the annotation opens the message it belongs to.
    this.message = new MessageInProgress(this)
    this.message.annotate(annotation, covers)
  }

  /** Web searches the provider ran this turn (priced per search). */
  searched(n: number) {
    this.turnUsage.searches += n
  }

  /** Closes the message and reasoning being written (a new item begins). */
  closeOpen() {
    this.closeReasoning()
    this.closeMessage()
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
