import { isProviderItem, type Annotation, type OutputItem, type ProviderItem } from './wire.js'
import { spanning, type Emit } from './items-in-progress.js'

// What the assembler reads and changes of the items already written.

/** An annotation added to a written message's text part, and announced. */
export function addAnnotation(
  item: Extract<OutputItem, { type: 'message' }>,
  output_index: number,
  content_index: number,
  annotation: Annotation,
  emit: Emit | undefined,
) {
  const part = item.content[content_index]
  if (part?.type !== 'output_text') return
  part.annotations.push(annotation)
  emit?.({
    type: 'response.output_text.annotation.added',
    item_id: item.id,
    output_index,
    content_index,
    annotation_index: part.annotations.length - 1,
    annotation,
  })
}

/**
 * An annotation on the last text part written (a provider may send its citations after the text
 * they cite), announced; false when no text was written to cite.
 */
export function annotateWritten(
  output: OutputItem[],
  annotation: Annotation,
  covers: number | undefined,
  emit: Emit | undefined,
): boolean {
  for (let index = output.length - 1; index >= 0; index--) {
    const item = output[index]!
    if (isProviderItem(item) || item.type !== 'message') continue
    const content_index = item.content.findLastIndex((p) => p.type === 'output_text')
    const part = item.content[content_index]
    if (part?.type !== 'output_text') continue
    addAnnotation(
      item,
      index,
      content_index,
      covers === undefined ? annotation : spanning(annotation, part.text.length, covers),
      emit,
    )
    return true
  }
  return false
}

/** The web searches a provider's item stands for, priced per search (OpenAI's item, or Anthropic's blocks read as one). */
function searchesIn(item: ProviderItem): number {
  const action = (item as { action?: { type?: unknown } }).action
  return item.type === 'web_search_call' && (action?.type === undefined || action.type === 'search') ? 1 : 0
}

/**
 * A provider's item as Open Responses names an item it does not define (its "Items are extensible"
 * rule): its kind prefixed with the slug of the provider whose protocol made it. Items translated
 * from Anthropic's blocks are `anthropic:` already; the OpenAI Responses kinds (`web_search_call`,
 * `custom_tool_call`…) become `openai:<kind>`. What Roster knows of it (its symbol key) comes along.
 */
export function sluggedItem(item: ProviderItem): ProviderItem {
  return item.type.includes(':') ? item : { ...item, type: `openai:${item.type}` }
}

/** What ProviderItems needs of the assembler. */
interface Assembling {
  /** The door names the provider's items by their slug (CallOptions.providerItemNames). */
  readonly slugged: boolean
  readonly output: OutputItem[]
  readonly emit: Emit | undefined
  addItem(item: OutputItem): number
  /** Closes the message and reasoning being written. */
  closeOpen(): void
  /** Counts web searches the provider ran (priced per search). */
  searched(n: number): void
}

/** A turn's provider's own items: each added when first seen, replaced by each later form, announced done once. */
export class ProviderItems {
  /** By their key: their place in the output and whether they are done. */
  private readonly known = new Map<string, { index: number; done: boolean }>()

  constructor(private readonly assembling: Assembling) {}

  put(key: string, given: ProviderItem, done: boolean) {
    const a = this.assembling
    const item = a.slugged ? sluggedItem(given) : given
    const known = this.known.get(key)
    if (!known) {
      a.closeOpen()
      const index = a.addItem(item)
      this.known.set(key, { index, done })
      if (done) {
        a.searched(searchesIn(given))
        a.emit?.({ type: 'response.output_item.done', output_index: index, item })
      }
      return
    }
    if (known.done) return
    a.output[known.index] = item
    known.done = done
    if (done) {
      a.searched(searchesIn(given))
      a.emit?.({ type: 'response.output_item.done', output_index: known.index, item })
    }
  }

  /** The turn's items the provider never said were done are closed as they last were. */
  closeAll() {
    for (const known of this.known.values())
      if (!known.done) {
        known.done = true
        this.assembling.emit?.({
          type: 'response.output_item.done',
          output_index: known.index,
          item: this.assembling.output[known.index]!,
        })
      }
    this.known.clear()
  }

  /** A turn abandoned: its items are forgotten (not closed). */
  forget() {
    this.known.clear()
  }
}
