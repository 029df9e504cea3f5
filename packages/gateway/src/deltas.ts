// What a provider says, whatever its protocol, in the order it says it. Every adapter translates
// its replies (streamed or whole) into these, and one assembler turns them into Open Responses
// output and events, so the two modes and the three protocols cannot drift apart.

export interface Usage {
  /** All input tokens, cached ones included. */
  input: number
  cached: number
  cacheWrite: number
  /** All output tokens, reasoning ones included. */
  output: number
  reasoning: number
}

export const emptyUsage = (): Usage => ({ input: 0, cached: 0, cacheWrite: 0, output: 0, reasoning: 0 })

export type Finish = 'stop' | 'length' | 'tool_calls' | 'content_filter'

export type Delta =
  | { type: 'text'; delta: string }
  | { type: 'refusal'; delta: string }
  | { type: 'reasoning'; delta: string }
  /** A function call's start (id and name) or a piece of its arguments; `index` tells calls apart. */
  | { type: 'tool_call'; index: number; id?: string; name?: string; arguments: string }
  /** Usage as reported so far; later reports replace the fields they carry. */
  | { type: 'usage'; usage: Partial<Usage> }
  | { type: 'finish'; reason: Finish }
