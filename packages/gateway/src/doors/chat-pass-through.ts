import { sseEvent } from '@roster/protocol'
import type { StreamEvent } from '../adapters/adapter.js'
import type { ResponseObject } from '../wire.js'
import type { PassThroughStream, PassThroughWhole, StreamStart } from './door.js'
import {
  edited,
  isObject,
  memberSpans,
  replaceValue,
  setMembers,
  sseFrame,
  usageEdits,
  type Json,
} from './json-members.js'

// /chat/completions answered with the provider's own Chat Completions (pass-through): its chunks,
// or its whole completion, forwarded as it sent them, with what Roster answers for put in (the id
// its generation is found by, the model as the catalogue names it, the cost in the usage). Only
// what the door's clients may be given as it came is forwarded: a reply whose shape Roster would
// change (a provider's own names for reasoning, calls without their index, citations of its own, a
// finish the clients do not know, an error) is translated, from the chunk where that shows on.

const FINISHES = new Set(['stop', 'length', 'tool_calls', 'content_filter'])
const DONE = sseEvent('[DONE]')

/** What of the door's own stream the pass-through shares: its ids, and its ending when Roster must make one. */
export interface ChatDoorParts {
  /** The stream's ids are `started`'s (the door's chunk head, for an ending or a failure of its own). */
  begin(started: StreamStart): void
  /** The door's chunk saying how the reply finished. */
  finishChunk(response: ResponseObject): string
  /** The door's usage chunk (`choices: []`). */
  usageChunk(response: ResponseObject): string
  /** The usage as the door reports it. */
  usage(response: ResponseObject): unknown
  /** The completion's id as the door answers it. */
  idOf(responseId: string): string
  /** The door's `system_fingerprint`, for a completion whose provider sent none. */
  fingerprint: string
}

/** Roster's members of a provider's usage: the cost, and whether the call was on the workspace's own key. */
const COST_KEYS = ['cost', 'is_byok', 'cost_details']

const usageForwardable = (u: unknown) =>
  isObject(u) && Number.isInteger(u.prompt_tokens) && Number.isInteger(u.completion_tokens)

/** The calls begun so far in a stream (each call's first delta has its id, its name and the next index). */
interface Calls {
  begun: number
}

/**
 * A call's delta as the clients read it: its index always; its id, type and name once, on its first
 * delta, which takes the next index (a provider that numbers calls after its text, or repeats a
 * call's head, is the door's to renumber).
 */
function callDeltaForwardable(t: unknown, calls: Calls): boolean {
  if (!isObject(t) || !Number.isInteger(t.index)) return false
  const fn = t.function
  if (fn !== undefined && !isObject(fn)) return false
  if (isObject(fn) && fn.arguments != null && typeof fn.arguments !== 'string') return false
  const name = isObject(fn) ? fn.name : undefined
  if (t.id == null) return name === undefined && (t.index as number) < calls.begun
  if (typeof t.id !== 'string' || t.type !== 'function' || typeof name !== 'string' || t.index !== calls.begun)
    return false
  calls.begun++
  return true
}

/** A whole message's call: id, type, name and arguments, as the clients read them. */
const callForwardable = (t: unknown) =>
  isObject(t) &&
  typeof t.id === 'string' &&
  t.type === 'function' &&
  isObject(t.function) &&
  typeof t.function.name === 'string' &&
  typeof t.function.arguments === 'string'

/**
 * What Roster would change of a delta or message: a provider's own names (reasoning_content,
 * function_call), reasoning without its details, content in parts, calls it numbers otherwise.
 * `calls`: a stream's calls so far (absent: a whole message).
 */
function messageForwardable(d: unknown, calls?: Calls): boolean {
  if (!isObject(d)) return false
  if (d.content != null && typeof d.content !== 'string') return false
  if (d.reasoning_content !== undefined || d.function_call !== undefined) return false
  if (d.reasoning != null && (typeof d.reasoning !== 'string' || !Array.isArray(d.reasoning_details))) return false
  if (d.tool_calls == null) return true
  if (!Array.isArray(d.tool_calls)) return false
  return calls ? d.tool_calls.every((t) => callDeltaForwardable(t, calls)) : d.tool_calls.every(callForwardable)
}

/**
 * The choice of a completion or chunk, one at most (Roster asks for one), with the keys the openai
 * client's types require of it (a whole one's `logprobs`, and its message's `content` and `refusal`).
 */
function choicesForwardable(choices: unknown, calls?: Calls): boolean {
  if (!Array.isArray(choices) || choices.length > 1) return false
  const c = choices[0] as unknown
  if (c === undefined) return true
  if (!isObject(c) || c.index !== 0 || !('finish_reason' in c)) return false
  if (!(c.finish_reason === null || (typeof c.finish_reason === 'string' && FINISHES.has(c.finish_reason))))
    return false
  if (calls) return messageForwardable(c.delta, calls)
  return (
    'logprobs' in c &&
    isObject(c.message) &&
    'content' in c.message &&
    'refusal' in c.message &&
    messageForwardable(c.message)
  )
}

/** The members every chat completion (or chunk) has, as the clients require them. */
const headForwardable = (c: Json, object: string) =>
  typeof c.id === 'string' &&
  typeof c.model === 'string' &&
  c.object === object &&
  Number.isInteger(c.created) &&
  c.error === undefined &&
  // Perplexity's citations become the door's annotations.
  c.citations === undefined &&
  (c.usage == null || usageForwardable(c.usage))

/** A chunk's choice that carries nothing but who speaks (or nothing at all). */
function saysNothing(choice: Json | undefined): boolean {
  const d = choice?.delta
  if (!isObject(d)) return true
  for (const k in d) if (k !== 'role' && d[k] !== '' && d[k] != null) return false
  return true
}

/** One call's chunks forwarded (see the file's head). */
export class ChatPassThrough implements PassThroughStream {
  private ids?: { id: string; model: string }
  /** The head of the provider's chunks up to their id and model, as it came and as edited. */
  private head?: { theirs: string; ours: string }
  /** The chunks from the first that says how it finished (or its usage) on: sent once the reply is accounted. */
  private readonly held: string[] = []
  private finished = false
  private readonly calls: Calls = { begun: 0 }
  /** Whether a chunk that says something (text, a call, reasoning) has gone; until then, the opening ones wait for it. */
  private said = false
  private opening = ''
  private usageHeld = -1

  constructor(private readonly door: ChatDoorParts) {}

  forward(e: StreamEvent, json: unknown, starting: () => StreamStart): string | undefined {
    if (json === undefined) return e.data === '[DONE]' && this.ids ? '' : this.stop()
    const c = json as Json
    if (!isObject(json) || !headForwardable(c, 'chat.completion.chunk') || !choicesForwardable(c.choices, this.calls))
      return this.stop()
    if (!this.ids) {
      const started = starting()
      this.ids = { id: JSON.stringify(this.door.idOf(started.id)), model: JSON.stringify(started.model) }
      this.door.begin(started)
    }
    const text = this.withIds(e.data)
    const choice = (c.choices as Json[])[0]
    if (choice?.finish_reason != null) this.finished = true
    if (c.usage != null) this.usageHeld = this.held.length
    // From how it finished on, the chunks wait for the record (the durability rule).
    if (this.finished || this.usageHeld >= 0 || this.held.length) {
      this.held.push(text)
      return ''
    }
    // A first chunk that only says who speaks goes with the next, in one write, as the door's own
    // opening goes with its first text (a write and a packet less for every stream).
    if (!this.said && saysNothing(choice)) {
      this.opening += sseFrame(text)
      return ''
    }
    this.said = true
    return this.flush() + sseFrame(text)
  }

  flush(): string {
    const opening = this.opening
    this.opening = ''
    return opening
  }

  /**
   * A chunk with Roster's id and model. A provider begins every chunk alike (its id, object, created,
   * model, in its order): the head of the last chunk edited is kept, and a chunk that begins with it
   * takes the edited head without a scan.
   */
  private withIds(data: string): string {
    const head = this.head
    if (head && data.startsWith(head.theirs)) return head.ours + data.slice(head.theirs.length)
    const spans = memberSpans(data, ['id', 'model'], 0, true)
    const id = spans.get('id')
    const model = spans.get('model')
    const text = edited(data, [...replaceValue(id, this.ids!.id), ...replaceValue(model, this.ids!.model)])
    if (id && model) {
      const end = Math.max(id[1], model[1])
      this.head = { theirs: data.slice(0, end), ours: text.slice(0, end + text.length - data.length) }
    }
    return text
  }

  end(response: ResponseObject): string {
    let out = this.flush()
    if (!this.finished) out += this.door.finishChunk(response)
    this.held.forEach((text, i) => {
      out += sseFrame(
        i === this.usageHeld ? edited(text, usageEdits(text, this.door.usage(response), response, COST_KEYS)) : text,
      )
    })
    if (this.usageHeld < 0) out += this.door.usageChunk(response)
    return out + DONE
  }

  /** The door translates from here on. */
  private stop(): undefined {
    this.held.length = 0
    return undefined
  }
}

/** A whole completion forwarded (see the file's head). */
export const chatWhole = (door: Pick<ChatDoorParts, 'usage' | 'idOf' | 'fingerprint'>): PassThroughWhole => ({
  protocol: 'openai-chat',
  whole(text, json, response) {
    if (!isObject(json) || !headForwardable(json, 'chat.completion') || !choicesForwardable(json.choices))
      return undefined
    if (!isObject(json.usage)) return undefined
    const spans = memberSpans(text, ['id', 'model'])
    return edited(text, [
      ...replaceValue(spans.get('id'), JSON.stringify(door.idOf(response.id))),
      ...replaceValue(spans.get('model'), JSON.stringify(response.model)),
      ...usageEdits(text, door.usage(response), response, COST_KEYS),
      // The official client requires the key (a string, in the openai client's type): the door's
      // own where the provider sent none, as a translated reply has it.
      ...('system_fingerprint' in json
        ? []
        : setMembers(text, 0, { system_fingerprint: JSON.stringify(door.fingerprint) })),
    ])
  },
})
