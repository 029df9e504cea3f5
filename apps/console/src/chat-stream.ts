import { call, readEvents, refusal } from './api'

// One request to an intern's chat (POST /interns/{id}/chat/completions) and its streamed answer,
// for every page that talks to interns: the chat, and the inbox that answers questions in place.

export type Question =
  | { kind: 'permission'; operation: string | null; options: string[] }
  | {
      kind: 'elicitation'
      message: string
      fields: { name: string; type: string; required?: boolean; options?: string[] }[]
    }

export interface TurnHandlers {
  /** The first chunk came: the intern holds the turn. */
  started?(): void
  content?(text: string): void
  reasoning?(text: string): void
  /** The run paused on a question (its interaction id and its arguments as sent). */
  question?(id: string, args: string, question: Question): void
  failed?(message: string): void
}

interface Chunk {
  choices: {
    delta: {
      content?: string
      reasoning?: string
      tool_calls?: { id: string; function: { name: string; arguments: string } }[]
    }
    finish_reason: string | null
  }[]
  error?: { message: string }
}

/**
 * Sends `body` and reads the answer into `on`: 'steered' when a running turn took the message
 * (202), 'streamed' once the stream ended. A refusal before the stream throws its ApiError.
 */
export async function sendTurn(
  internId: string,
  body: object,
  signal: AbortSignal,
  on: TurnHandlers,
  /** Called once the answer is known to be a stream, before it is read. */
  streaming?: () => void,
): Promise<'steered' | 'streamed'> {
  const res = await call(`interns/${internId}/chat/completions`, {
    method: 'POST',
    body: JSON.stringify({ stream: true, ...body }),
    signal,
  })
  if (res.status === 202) return 'steered'
  if (!res.ok) throw await refusal(res)
  streaming?.()
  let started = false
  await readEvents(res, (_event, data) => {
    if (!started) {
      started = true
      on.started?.()
    }
    if (data === '[DONE]') return
    const chunk = JSON.parse(data) as Chunk
    const choice = chunk.choices[0]
    if (!choice) return
    const { content, reasoning, tool_calls } = choice.delta
    if (content) on.content?.(content)
    if (reasoning) on.reasoning?.(reasoning)
    for (const tc of tool_calls ?? [])
      on.question?.(tc.id, tc.function.arguments, JSON.parse(tc.function.arguments) as Question)
    if (choice.finish_reason === 'error') on.failed?.(chunk.error?.message ?? 'no reason given')
  })
  return 'streamed'
}

/** The messages that answer the question `id` (asked with `args`) with `content`. */
export function answerMessages(id: string, args: string, content: string) {
  return [
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id, type: 'function', function: { name: 'openrouter.provide_input', arguments: args } }],
    },
    { role: 'tool', tool_call_id: id, content },
  ]
}
