import type { Delta } from '../deltas.js'
import { itemId } from '../item-id.js'
import { chatToolCallItem } from '../provider-items.js'

// A Chat Completions stream's tool calls, piece by piece, as deltas. The grammar (the openai client's
// ChatCompletionChunk.Choice.Delta.ToolCall) gives each piece an `index`, but providers do not all
// follow it: Mistral and Gemini's OpenAI-compatible endpoint send parallel calls with their own `id`s
// and no `index`. So a piece belongs to the call its `index` names where it has one, else to the call
// its `id` names (a new id is a new call), else it continues the last call. A piece that names an
// index already holding a call with another id is a new call too: OpenAI never reuses an index, and
// merging two calls' arguments would make JSON no client can parse.
//
// A call of a kind other than `function` (GPT-5's `custom`, or a kind Roster does not know) is not a
// function call: it becomes the provider's item for the client to act on (provider-items.ts), kept
// whole as its pieces come and closed when the reply finishes.

type Fields = Record<string, unknown>

interface Known {
  id?: string
  /** The call's kind: `function` unless a piece said otherwise. */
  kind: string
  /** A non-function call as it has come so far (its pieces' strings joined). */
  other?: Fields
  itemId?: string
}

/** Fields whose pieces are parts of one string; any other field of a later piece replaces the earlier. */
const PIECED = new Set(['arguments', 'input'])

function merged(into: Fields, piece: Fields): Fields {
  const out: Fields = { ...into }
  for (const [k, v] of Object.entries(piece)) {
    const had = out[k]
    out[k] = PIECED.has(k) && typeof had === 'string' && typeof v === 'string' ? had + v : v
  }
  return out
}

export class ChatToolCalls {
  private readonly calls: Known[] = []
  /** The provider's index → the call's place in `calls`. */
  private readonly byIndex = new Map<number, number>()
  private readonly byId = new Map<string, number>()
  private last = -1

  /** Whether any call came. */
  get any(): boolean {
    return this.calls.length > 0
  }

  /** A piece of `delta.tool_calls`, as deltas. */
  piece(raw: unknown): Delta[] {
    if (!raw || typeof raw !== 'object') return []
    const c = raw as Fields
    const at = this.placeOf(c)
    const call = this.calls[at]!
    if (typeof c.type === 'string' && c.type !== 'function' && call.kind === 'function' && !call.other) {
      call.kind = c.type
      call.other = {}
      call.itemId = itemId('ctc')
    }
    if (call.kind !== 'function') {
      const payload = c[call.kind]
      call.other = merged(call.other ?? {}, payload && typeof payload === 'object' ? (payload as Fields) : {})
      return [this.otherItem(call, false)]
    }
    const f = (c.function && typeof c.function === 'object' ? c.function : {}) as Fields
    return [
      {
        type: 'tool_call',
        index: at,
        id: typeof c.id === 'string' ? c.id : undefined,
        name: typeof f.name === 'string' ? f.name : undefined,
        arguments: typeof f.arguments === 'string' ? f.arguments : '',
      },
    ]
  }

  /** The calls of other kinds, each closed as it last was (the reply finished). */
  finish(): Delta[] {
    return this.calls.filter((c) => c.kind !== 'function').map((c) => this.otherItem(c, true))
  }

  private otherItem(call: Known, done: boolean): Delta {
    const item = chatToolCallItem(
      { id: call.id, type: call.kind, [call.kind]: call.other },
      call.itemId!,
      done ? 'completed' : 'in_progress',
    )
    return { type: 'provider_item', key: call.itemId!, item, done }
  }

  /** Which call a piece belongs to (see above), a new one made where it starts one. */
  private placeOf(c: Fields): number {
    const id = typeof c.id === 'string' && c.id ? c.id : undefined
    const index = typeof c.index === 'number' && Number.isInteger(c.index) ? c.index : undefined
    let at: number | undefined
    if (index !== undefined) {
      at = this.byIndex.get(index)
      const other =
        at !== undefined && id !== undefined && this.calls[at]!.id !== undefined && this.calls[at]!.id !== id
      if (at === undefined || other) this.byIndex.set(index, (at = this.start(id)))
    } else if (id !== undefined) at = this.byId.get(id) ?? this.start(id)
    else at = this.last >= 0 ? this.last : this.start(undefined)
    const call = this.calls[at]!
    if (id !== undefined && call.id === undefined) {
      call.id = id
      this.byId.set(id, at)
    }
    this.last = at
    return at
  }

  private start(id: string | undefined): number {
    const at = this.calls.push({ id, kind: 'function' }) - 1
    if (id !== undefined) this.byId.set(id, at)
    return at
  }
}
