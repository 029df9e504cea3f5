/** How the simulator behaves; every field can also be set per request with an `x-sim-<name>` header. */
export interface SimSettings {
  /** Milliseconds before the first byte of a reply. */
  latencyMs: number
  /** Streaming pace; 0 sends tokens as fast as possible. */
  tokensPerSecond: number
  /** Tokens in a text reply (a request's max output tokens caps it). */
  replyTokens: number
  /** Report usage (tokens, cached, reasoning). */
  usage: boolean
  /** Call an offered function tool when tool_choice allows it. */
  toolCalls: boolean
  /** Call a tool again even after a tool result (an agent that never stops calling; for loop limits). */
  repeatToolCalls: boolean
  /** What a tool call passes for a URL argument (`format: uri`). */
  sampleUrl: string
  /**
   * A fault to produce: none, 429 (with Retry-After), 500, 503, timeout (never answers), cut (a
   * stream's connection drops mid-way), truncate (a stream ends cleanly mid-way, unfinished),
   * garbled (a 200 whose body breaks off: not JSON).
   */
  fault: 'none' | '429' | '500' | '503' | 'timeout' | 'cut' | 'truncate' | 'garbled'
  /** The credential callers must present (Bearer or x-api-key); empty accepts any. */
  apiKey: string
  /** Where a replayed recording is cut into pieces (the seed of its cuts; replay.ts). */
  cutSeed: number
  /**
   * The demo `npm start` runs: without a `[sim]` script a reply says in plain words what the
   * simulator is and how to connect a real model, and no tool is called unless the request demands
   * one (tool_choice required or named).
   */
  demo: boolean
}

export const defaultSettings: SimSettings = {
  latencyMs: 0,
  tokensPerSecond: 0,
  replyTokens: 12,
  usage: true,
  toolCalls: true,
  repeatToolCalls: false,
  sampleUrl: 'http://127.0.0.1/',
  fault: 'none',
  apiKey: '',
  cutSeed: 1,
  demo: false,
}

/** Settings for one request: the server's, overridden by `x-sim-*` headers. */
export function requestSettings(
  base: SimSettings,
  headers: Record<string, string | string[] | undefined>,
): SimSettings {
  const header = (name: string) => {
    const v = headers[`x-sim-${name}`]
    return Array.isArray(v) ? v[0] : v
  }
  const num = (name: string, fallback: number) => {
    const v = header(name)
    return v !== undefined && Number.isFinite(Number(v)) ? Number(v) : fallback
  }
  const bool = (name: string, fallback: boolean) => {
    const v = header(name)
    return v === undefined ? fallback : v === 'true' || v === '1'
  }
  const fault = header('fault')
  return {
    latencyMs: num('latency-ms', base.latencyMs),
    tokensPerSecond: num('tokens-per-second', base.tokensPerSecond),
    replyTokens: num('reply-tokens', base.replyTokens),
    usage: bool('usage', base.usage),
    toolCalls: bool('tool-calls', base.toolCalls),
    repeatToolCalls: bool('repeat-tool-calls', base.repeatToolCalls),
    sampleUrl: header('sample-url') ?? base.sampleUrl,
    fault:
      (['none', '429', '500', '503', 'timeout', 'cut', 'truncate', 'garbled'] as const).find((f) => f === fault) ??
      base.fault,
    apiKey: base.apiKey,
    cutSeed: num('cut-seed', base.cutSeed),
    demo: bool('demo', base.demo),
  }
}
