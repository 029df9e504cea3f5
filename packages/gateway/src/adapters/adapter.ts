import type { Entry } from '../conversation.js'
import type { Delta } from '../deltas.js'
import type { ResponsesRequest } from '../request.js'

type Json = Record<string, any>

export interface FunctionDef {
  name: string
  description?: string
  parameters: Json
  strict?: boolean | null
}

export type ChoiceSpec = 'auto' | 'none' | 'required' | { name: string }

/** One upstream call, in neutral terms; each adapter writes it in its protocol. */
export interface CallSpec {
  req: ResponsesRequest
  entries: Entry[]
  tools: FunctionDef[]
  toolChoice: ChoiceSpec
  upstreamModel: string
  /** `user`, already replaced by its keyed hash. */
  user?: string
  stream: boolean
  /** The endpoint accepts cache breakpoints on content blocks. */
  caching: boolean
  /** For protocols that require a maximum (Anthropic): the model's, or a sensible default. */
  defaultMaxTokens: number
}

/** An event of a streamed reply, as the SSE framing gives it. */
export interface StreamEvent {
  event?: string
  data: string
}

/** Translates one streamed reply; stateful, so make one per call. Throws GatewayError on a stream error. */
export type StreamTranslator = (e: StreamEvent) => Delta[]

export interface Adapter {
  /** Appended to the endpoint's base URL. */
  path: string
  headers(apiKey: string | undefined): Record<string, string>
  body(spec: CallSpec): Json
  reply(body: Json): Delta[]
  streamer(): StreamTranslator
}

/** The request's generation settings that most protocols share under the same names. */
export function common(req: ResponsesRequest, body: Json, names: readonly (keyof ResponsesRequest)[]) {
  for (const k of names) if (req[k] != null) body[k] = req[k]
}
