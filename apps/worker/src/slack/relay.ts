import { type RunEvent } from '@roster/shared'
import { insertSlackQuestion, setQuestionCard } from '@roster/shared/repositories'
import type { WorkerDeps } from '../context.js'
import { parsedQuestion, questionCard, questionText } from './cards.js'
import type { SlackPoster } from './poster.js'

// A run's events into Slack: its text streamed into the reply message (while Slack takes it), and a
// question it asks posted as a card in the thread (recorded first, so a click finds it); the run
// then waits on its host for the card's answer (the stream ends at the pause; the run stays). What
// it returns is the whole reply, which the turn then posts.

/** How long a host may take to start a turn or take an answer (the chat route's RUNTIME_ANSWER_TIMEOUT_MS default). */
export const HOST_ANSWER_TIMEOUT_MS = 30_000

export interface RunInThread {
  internId: string
  eventId: string
  sessionId: string
}

export async function relayRun(
  deps: WorkerDeps,
  run: RunInThread,
  slack: SlackPoster,
  replyTs: string | undefined,
  events: AsyncIterable<RunEvent>,
): Promise<{ text: string; outcome: string }> {
  let text = ''
  let ended = 'answered'
  const note = (line: string) => (text += `${text ? '\n\n' : ''}_${line}_`)
  for await (const e of events) {
    if (e.type === 'text') {
      text += e.delta
      await slack.streaming(replyTs, text)
    } else if (e.type === 'error' || e.type === 'ended') {
      note(e.message)
      ended = e.type
    } else if (e.type === 'pause') {
      const question = parsedQuestion(e.arguments)
      await insertSlackQuestion(deps.db, { ...run, interactionId: e.interaction_id, question })
      const cardTs = await slack.postCard(questionCard(e.interaction_id, question), questionText(question))
      await setQuestionCard(deps.db, run.internId, e.interaction_id, cardTs)
      note('Waiting for an answer to the question below.')
      ended = 'asked'
    }
  }
  return { text: text || '_(no answer)_', outcome: ended }
}
