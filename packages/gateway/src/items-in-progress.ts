import type { Delta } from './deltas.js'
import { itemId } from './item-id.js'
import type {
  FunctionCallItem,
  ItemEvent,
  LogProb,
  MessageItem,
  OutputItem,
  OutputText,
  ReasoningItem,
  Refusal,
} from './wire.js'

// The output items a model's turn makes, each while it is being streamed: its `.added` event when it
// starts, its deltas, and its `.done`s when it closes. The assembler decides when each starts and
// closes (an item closes when something else starts); these know each item's events.

/** Receives each Open Responses event as it is made (streaming); absent for a whole reply. */
export type Emit = (event: ItemEvent) => void

/** Where an item in progress is added and its events go (the assembler: `emit` is read per event, as it may be set late). */
export interface ItemSink {
  readonly emit: Emit | undefined
  addItem(item: OutputItem): number
}

interface OpenPart {
  kind: 'text' | 'refusal'
  index: number
  text: string
  logprobs: LogProb[]
}

/** An assistant message: content parts of text or refusal, one after another. */
export class MessageInProgress {
  readonly item: MessageItem = {
    type: 'message',
    id: itemId('msg'),
    role: 'assistant',
    status: 'in_progress',
    content: [],
  }
  readonly index: number
  private part?: OpenPart

  constructor(private readonly sink: ItemSink) {
    this.index = sink.addItem(this.item)
  }

  delta(kind: 'text' | 'refusal', delta: string, logprobs: LogProb[] | undefined) {
    if (this.part?.kind !== kind) this.openPart(kind)
    const p = this.part!
    p.text += delta
    if (logprobs) for (const l of logprobs) p.logprobs.push(l)
    const emit = this.sink.emit
    if (!emit) return
    const item_id = this.item.id
    if (kind === 'text')
      emit({
        type: 'response.output_text.delta',
        item_id,
        output_index: this.index,
        content_index: p.index,
        delta,
        logprobs: logprobs ?? [],
      })
    else emit({ type: 'response.refusal.delta', item_id, output_index: this.index, content_index: p.index, delta })
  }

  close() {
    this.closePart()
    this.item.status = 'completed'
    this.sink.emit?.({ type: 'response.output_item.done', output_index: this.index, item: this.item })
  }

  private openPart(kind: 'text' | 'refusal') {
    this.closePart()
    const contentIndex = this.item.content.length
    const part: OutputText | Refusal =
      kind === 'text'
        ? { type: 'output_text', text: '', annotations: [], logprobs: [] }
        : { type: 'refusal', refusal: '' }
    this.item.content.push(part)
    this.part = { kind, index: contentIndex, text: '', logprobs: [] }
    this.sink.emit?.({
      type: 'response.content_part.added',
      item_id: this.item.id,
      output_index: this.index,
      content_index: contentIndex,
      part: { ...part },
    })
  }

  private closePart() {
    const p = this.part
    if (!p) return
    const at = { item_id: this.item.id, output_index: this.index, content_index: p.index }
    const part: OutputText | Refusal =
      p.kind === 'text'
        ? { type: 'output_text', text: p.text, annotations: [], logprobs: p.logprobs }
        : { type: 'refusal', refusal: p.text }
    this.item.content[p.index] = part
    const emit = this.sink.emit
    if (p.kind === 'text') emit?.({ type: 'response.output_text.done', ...at, text: p.text, logprobs: p.logprobs })
    else emit?.({ type: 'response.refusal.done', ...at, refusal: p.text })
    emit?.({ type: 'response.content_part.done', ...at, part })
    this.part = undefined
  }
}

/** Reasoning, as one summary part. */
export class ReasoningInProgress {
  readonly item: ReasoningItem = { type: 'reasoning', id: itemId('rs'), summary: [] }
  readonly index: number
  private text = ''

  constructor(private readonly sink: ItemSink) {
    this.index = sink.addItem(this.item)
    sink.emit?.({
      type: 'response.reasoning_summary_part.added',
      item_id: this.item.id,
      output_index: this.index,
      summary_index: 0,
      part: { type: 'summary_text', text: '' },
    })
  }

  delta(delta: string) {
    this.text += delta
    this.sink.emit?.({
      type: 'response.reasoning_summary_text.delta',
      item_id: this.item.id,
      output_index: this.index,
      summary_index: 0,
      delta,
    })
  }

  close() {
    const part = { type: 'summary_text' as const, text: this.text }
    this.item.summary = [part]
    const at = { item_id: this.item.id, output_index: this.index, summary_index: 0 }
    const emit = this.sink.emit
    emit?.({ type: 'response.reasoning_summary_text.done', ...at, text: this.text })
    emit?.({ type: 'response.reasoning_summary_part.done', ...at, part })
    emit?.({ type: 'response.output_item.done', output_index: this.index, item: this.item })
  }
}

/** A function call the model made in the turn that just ended. */
export interface TurnCall {
  callId: string
  name: string
  arguments: string
  server: boolean
}

/**
 * A function call. A server tool's call (run by Roster) is not the client's to see as a function
 * call: it is never added to the output, and the client sees its result item instead.
 */
export class CallInProgress {
  readonly item: FunctionCallItem
  private readonly index: number

  constructor(
    private readonly sink: ItemSink,
    d: Extract<Delta, { type: 'tool_call' }>,
    private readonly server: boolean,
  ) {
    this.item = {
      type: 'function_call',
      id: itemId('fc'),
      call_id: d.id || itemId('call'),
      name: d.name ?? '',
      arguments: '',
      status: 'in_progress',
    }
    this.index = server ? -1 : sink.addItem(this.item)
  }

  delta(args: string) {
    this.item.arguments += args
    if (!this.server)
      this.sink.emit?.({
        type: 'response.function_call_arguments.delta',
        item_id: this.item.id,
        output_index: this.index,
        delta: args,
      })
  }

  close(): TurnCall {
    const { item } = this
    if (!this.server) {
      item.status = 'completed'
      this.sink.emit?.({
        type: 'response.function_call_arguments.done',
        item_id: item.id,
        output_index: this.index,
        name: item.name,
        arguments: item.arguments,
      })
      this.sink.emit?.({ type: 'response.output_item.done', output_index: this.index, item })
    }
    return { callId: item.call_id, name: item.name, arguments: item.arguments, server: this.server }
  }
}
