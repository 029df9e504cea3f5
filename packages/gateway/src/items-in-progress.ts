import type { Delta } from './deltas.js'
import { itemId } from './item-id.js'
import type { NamespacedName } from './namespaces.js'
import {
  REDACTED_THINKING,
  type Annotation,
  type FunctionCallItem,
  type ItemEvent,
  type LogProb,
  type MessageItem,
  type OutputItem,
  type OutputText,
  type ReasoningItem,
  type Refusal,
  type SummaryText,
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
  annotations: Annotation[]
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

  /** The open part's text (the parts before it are in the item already). */
  get textSoFar(): string {
    return this.part?.text ?? ''
  }

  /**
   * An annotation on the text part that is open (a text part is opened for it if none is): with
   * `covers`, it spans the last `covers` characters of that part's text.
   */
  annotate(annotation: Annotation, covers: number | undefined) {
    if (this.part?.kind !== 'text') this.openPart('text')
    const p = this.part!
    const a = covers === undefined ? annotation : spanning(annotation, p.text.length, covers)
    p.annotations.push(a)
    this.sink.emit?.({
      type: 'response.output_text.annotation.added',
      item_id: this.item.id,
      output_index: this.index,
      content_index: p.index,
      annotation_index: p.annotations.length - 1,
      annotation: a,
    })
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
    this.part = { kind, index: contentIndex, text: '', logprobs: [], annotations: [] }
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
        ? { type: 'output_text', text: p.text, annotations: p.annotations, logprobs: p.logprobs }
        : { type: 'refusal', refusal: p.text }
    this.item.content[p.index] = part
    const emit = this.sink.emit
    if (p.kind === 'text') emit?.({ type: 'response.output_text.done', ...at, text: p.text, logprobs: p.logprobs })
    else emit?.({ type: 'response.refusal.done', ...at, refusal: p.text })
    emit?.({ type: 'response.content_part.done', ...at, part })
    this.part = undefined
  }
}

/** An annotation that spans the last `covers` characters of a text `length` long (Anthropic's citations name no indices). */
export function spanning(annotation: Annotation, length: number, covers: number): Annotation {
  const start = Math.max(0, length - covers)
  return Object.assign(annotation, { start_index: start, end_index: length })
}

/**
 * Reasoning: summary parts one after another (a part opens with its first text, so an item the
 * provider sent empty stays empty), and the provider's opaque state for it (encrypted content, a
 * thinking signature), given back with the item.
 */
export class ReasoningInProgress {
  readonly item: ReasoningItem = { type: 'reasoning', id: itemId('rs'), summary: [] }
  readonly index: number
  private parts: SummaryText[] = []
  private partKey?: number
  private open = false

  constructor(
    private readonly sink: ItemSink,
    /** The provider's name for it (see Delta): pieces naming another item start a new one. */
    readonly key: string | undefined,
    redacted?: string,
  ) {
    if (redacted !== undefined) {
      this.item.encrypted_content = redacted
      this.item[REDACTED_THINKING] = true
    }
    this.index = sink.addItem(this.item)
  }

  delta(delta: string, part: number | undefined) {
    if (!delta) return
    if (!this.open || (part !== undefined && part !== this.partKey)) this.openPart(part)
    const p = this.parts.at(-1)!
    p.text += delta
    this.sink.emit?.({
      type: 'response.reasoning_summary_text.delta',
      item_id: this.item.id,
      output_index: this.index,
      summary_index: this.parts.length - 1,
      delta,
    })
  }

  /** The text of its parts so far (the item's summary is written when it closes). */
  get textSoFar(): string {
    return this.parts.map((p) => p.text).join('')
  }

  /** The provider's opaque state, appended (a signature may come in pieces). */
  state(piece: string) {
    this.item.encrypted_content = (this.item.encrypted_content ?? '') + piece
  }

  close() {
    this.closePart()
    this.item.summary = this.parts.map((p) => ({ type: 'summary_text', text: p.text }))
    this.sink.emit?.({ type: 'response.output_item.done', output_index: this.index, item: this.item })
  }

  private openPart(key: number | undefined) {
    this.closePart()
    this.parts.push({ type: 'summary_text', text: '' })
    this.partKey = key
    this.open = true
    this.sink.emit?.({
      type: 'response.reasoning_summary_part.added',
      item_id: this.item.id,
      output_index: this.index,
      summary_index: this.parts.length - 1,
      part: { type: 'summary_text', text: '' },
    })
  }

  private closePart() {
    if (!this.open) return
    this.open = false
    const index = this.parts.length - 1
    const part = { type: 'summary_text' as const, text: this.parts[index]!.text }
    const at = { item_id: this.item.id, output_index: this.index, summary_index: index }
    const emit = this.sink.emit
    emit?.({ type: 'response.reasoning_summary_text.done', ...at, text: part.text })
    emit?.({ type: 'response.reasoning_summary_part.done', ...at, part })
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
    /** The client's name for a namespace tool's function (the provider called it by its flat name). */
    named?: NamespacedName,
  ) {
    this.item = {
      type: 'function_call',
      id: itemId('fc'),
      call_id: d.id || itemId('call'),
      name: named?.name ?? d.name ?? '',
      ...(named ? { namespace: named.namespace } : {}),
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
    // A call with no arguments is sent as none by some providers (Anthropic's `input: {}` streams
    // as an empty string): the arguments are JSON, and no arguments is the empty object.
    if (item.arguments === '') this.delta('{}')
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
