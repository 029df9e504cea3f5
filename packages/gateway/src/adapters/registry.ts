import type { AnyAdapter } from './adapter.js'
import { anthropic } from './anthropic-messages.js'
import { openaiChat } from './openai-chat.js'
import { openaiResponses } from './openai-responses.js'

// The provider protocols Roster speaks, each one unit: its adapter carries what the rest of the
// gateway asks of a protocol (its path, whether tool results take images, its web search). A new
// protocol is its adapter, the simulator's module for it, their tests, and one line here: the
// catalogue's protocol names, the engine and the simulator take their union from this table.

/** An adapter as the engine holds it (checked to be one: not a cast). */
const registered = (adapter: AnyAdapter): AnyAdapter => adapter
const REGISTERED = {
  'openai-chat': registered(openaiChat),
  'openai-responses': registered(openaiResponses),
  'anthropic-messages': registered(anthropic),
}

export type Protocol = keyof typeof REGISTERED

/** Each protocol's adapter: a Record over Protocol, so none is left unregistered. */
export const ADAPTERS: Readonly<Record<Protocol, AnyAdapter>> = REGISTERED

export const PROTOCOLS = Object.keys(REGISTERED) as [Protocol, ...Protocol[]]
