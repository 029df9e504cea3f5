import type { Protocol } from '@roster/gateway'
import type { SimSettings } from '../settings.js'
import type { Ask, Plan } from '../plan.js'
import type { StreamWriter } from '../writer.js'
import type { Json } from '../json-view.js'
import { askFromChat, chatError, chatResponse, chatStream } from './chat-completions.js'
import { askFromResponses, responsesResponse, responsesStream } from './responses.js'
import { askFromMessages, messagesError, messagesResponse, messagesStream, refuseMessages } from './anthropic.js'

// The provider protocols the simulator speaks, one per protocol the gateway speaks: the table is a
// Record over the gateway's Protocol, so a protocol the gateway gains and the simulator lacks does not
// compile. A protocol is its module (its requests read, its replies written) and one line here.

/** One protocol as the simulator serves it. */
export interface SimProtocol {
  /** Where its requests come (under the simulator's base URL). */
  path: string
  ask(body: Json): Ask
  reply(p: Plan, settings: SimSettings): unknown
  stream(p: Plan, out: StreamWriter, body: Json, settings: SimSettings): Promise<void>
  error(status: number, message: string): unknown
  /** What the provider refuses of a well-formed request (400, its words), if anything. */
  refuse?(body: Json): string | undefined
  /** A recording's events (one JSON a line) framed as this protocol's stream. */
  frame(lines: string[]): string
}

/** Server-Sent Events named after each event's type (Anthropic's and OpenAI Responses' framing). */
const typedEvents = (lines: string[]) =>
  lines.map((l) => `event: ${String((JSON.parse(l) as { type?: unknown }).type)}\ndata: ${l}\n\n`).join('')

export const SIM_PROTOCOLS: Record<Protocol, SimProtocol> = {
  'openai-chat': {
    path: '/v1/chat/completions',
    ask: askFromChat,
    reply: (p, s) => chatResponse(p, s.usage),
    stream: (p, out, body, s) => chatStream(p, out, body, s.usage),
    error: chatError,
    // Data only, then [DONE].
    frame: (lines) => lines.map((l) => `data: ${l}\n\n`).join('') + 'data: [DONE]\n\n',
  },
  'openai-responses': {
    path: '/v1/responses',
    ask: askFromResponses,
    reply: (p, s) => responsesResponse(p, s.usage),
    stream: (p, out, _body, s) => responsesStream(p, out, s.usage),
    error: chatError,
    frame: typedEvents,
  },
  'anthropic-messages': {
    path: '/v1/messages',
    ask: askFromMessages,
    reply: (p) => messagesResponse(p),
    stream: (p, out) => messagesStream(p, out),
    error: messagesError,
    refuse: refuseMessages,
    frame: typedEvents,
  },
}

/** The protocols by the path their requests come to. */
export const BY_PATH: ReadonlyMap<string, SimProtocol> = new Map(Object.values(SIM_PROTOCOLS).map((p) => [p.path, p]))
