import type { Entry } from '../conversation.js'
import type { Delta } from '../deltas.js'
import type { ResponsesRequest } from '../request.js'
import type { ProviderWebSearch, WebSearch } from '../web-search.js'

/**
 * A provider's reply read as its protocol's shape (the official clients' types), any part of it
 * possibly missing or null: providers differ, so each field is checked as it is read.
 */
export type AsSent<T> = T extends string | number | boolean | null | undefined
  ? T
  : T extends readonly (infer U)[]
    ? AsSent<U>[]
    : T extends object
      ? { [K in keyof T]?: AsSent<T[K]> | null }
      : T

export interface FunctionDef {
  name: string
  description?: string
  parameters: Record<string, unknown>
  strict?: boolean | null
}

export type ChoiceSpec = 'auto' | 'none' | 'required' | { name: string }

/** One upstream call, in neutral terms; each adapter writes it in its protocol. */
export interface CallSpec {
  req: ResponsesRequest
  entries: Entry[]
  tools: FunctionDef[]
  /** The provider's own web search, in its protocol, where the endpoint has one and the client offered it. */
  search?: ProviderWebSearch
  toolChoice: ChoiceSpec
  upstreamModel: string
  /** `user`, already replaced by its keyed hash. */
  user?: string
  stream: boolean
  /** The endpoint accepts cache breakpoints on content blocks. */
  caching: boolean
  /** For protocols that require a maximum (Anthropic): the model's, or a sensible default. */
  defaultMaxTokens: number
  /** To an Anthropic endpoint: the Anthropic client's fields only Anthropic reads (doors/anthropic-betas.ts), as sent. */
  anthropicFields?: Record<string, unknown>
}

/** An event of a streamed reply, as the SSE framing gives it. */
export interface StreamEvent {
  event?: string
  data: string
  /** The data parsed, where the engine read it already (an event forwarded as it came): parsed once. */
  json?: unknown
}

/**
 * Translates one streamed reply; stateful, so make one per call. Throws GatewayError on a stream
 * error. Called once more with `end` when the stream has ended, for what the protocol says only by
 * ending (a Chat Completions stream that ends with [DONE] and no finish reason).
 */
export type StreamTranslator = (e: StreamEvent | 'end') => Delta[]

/** One protocol: the body it is sent (`Body`), and its whole reply (`Reply`) as deltas. */
export interface Adapter<Body extends object = object, Reply = never> {
  /** The protocol's name for people (in messages). */
  title: string
  /** Appended to the endpoint's base URL. */
  path: string
  /** A tool's result may carry images (Chat Completions' tool messages carry text only). */
  toolImages: boolean
  /**
   * The provider's own web search tool, in this protocol, for the one the client offered (undefined:
   * it cannot honour what was asked); absent where the protocol has none.
   */
  webSearch?: (search: WebSearch) => ProviderWebSearch | undefined
  headers(apiKey: string | undefined): Record<string, string>
  body(spec: CallSpec): Body
  /** `provider` names who answered, in the errors a reply that reports a failure becomes. */
  reply(reply: AsSent<Reply>, provider: string): Delta[]
  streamer(provider: string): StreamTranslator
}

/** Any protocol's adapter, as the engine holds them. */
// The engine hands each adapter the parsed JSON of its own protocol's reply.
export type AnyAdapter = Adapter<object, unknown>

/** The request's fields that a protocol's body has under the same name, with a type the body takes. */
export type SameNamed<B> = {
  [K in keyof B & keyof ResponsesRequest]-?: NonNullable<ResponsesRequest[K]> extends B[K] ? K : never
}[keyof B & keyof ResponsesRequest]

/** Copies the request's generation settings that a protocol names as the request does (those given). */
export function copyGiven<B extends object>(req: ResponsesRequest, body: B, names: readonly SameNamed<B>[]) {
  for (const k of names) if (req[k] != null) (body as Record<string, unknown>)[k as string] = req[k]
}
