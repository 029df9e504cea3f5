import { useState } from 'react'
import { useQuery, useQueryClient } from '@tanstack/react-query'
import { api } from '../api'
import { answerMessages, sendTurn, type Question } from '../chat-stream'
import { QuestionCard } from '../question-card'
import { Text } from '../markdown'
import { href } from '../router'

interface Open {
  intern_id: string
  intern_name: string
  session_id: string
  interaction_id: string
  question: Question
  asked_at: string
  expires_at: string
}

// Every question the interns the member can see are waiting on (GET /interns/questions), answered
// where it stands: the answer resumes the run, whose reply streams in under its card (the stream
// is read to its end: closing it would cancel the run). Refreshed every 30 s (nothing faster).
export default function Inbox() {
  const open = useQuery({
    queryKey: ['questions'],
    queryFn: () => api<{ data: Open[] }>('interns/questions'),
    refetchInterval: 30_000,
  })
  // Questions answered here stay in view with their reply, though no longer waiting.
  const [answeredHere, setAnsweredHere] = useState<Open[]>([])
  if (open.isPending) return <p aria-busy="true">Loading questions…</p>
  if (open.isError) return <p role="alert">{open.error.message}</p>
  const waiting = open.data.data
  const shown = [
    ...waiting,
    ...answeredHere.filter((a) => !waiting.some((w) => w.interaction_id === a.interaction_id)),
  ].sort((a, b) => b.asked_at.localeCompare(a.asked_at))
  // A question answered here is not waiting, even before the server's list says so.
  const stillWaiting = waiting.filter((w) => !answeredHere.some((a) => a.interaction_id === w.interaction_id)).length
  return (
    <section aria-labelledby="inbox-title">
      <h1 id="inbox-title">Questions waiting</h1>
      {stillWaiting === 0 && (
        <p>
          {shown.length
            ? 'Nothing else is waiting on an answer.'
            : 'No intern is waiting on an answer: questions and permission requests appear here as interns ask them.'}
        </p>
      )}
      {shown.length > 0 && (
        <ul className="inbox">
          {shown.map((q) => (
            <li key={q.interaction_id}>
              <Waiting q={q} onAnswered={() => setAnsweredHere((all) => [...all, q])} />
            </li>
          ))}
        </ul>
      )}
    </section>
  )
}

function Waiting({ q, onAnswered }: { q: Open; onAnswered: () => void }) {
  const client = useQueryClient()
  const [answered, setAnswered] = useState<string>()
  const [reply, setReply] = useState('')
  const [status, setStatus] = useState<{ text: string; alert?: boolean }>()
  const answer = async (content: string, shown: string) => {
    setAnswered(shown)
    onAnswered()
    setStatus({ text: 'The intern goes on…' })
    try {
      await sendTurn(
        q.intern_id,
        { session_id: q.session_id, messages: answerMessages(q.interaction_id, JSON.stringify(q.question), content) },
        new AbortController().signal,
        {
          content: (text) => setReply((r) => r + text),
          question: () => setStatus({ text: 'It asks something more: see below or in the chat.' }),
          failed: (message) => setStatus({ text: `The turn failed: ${message}`, alert: true }),
        },
      )
      setStatus((s) => (s?.text === 'The intern goes on…' ? { text: 'Done.' } : s))
    } catch (err) {
      setStatus({ text: (err as Error).message, alert: true })
    } finally {
      void client.invalidateQueries({ queryKey: ['questions'] })
    }
  }
  return (
    <article className="entry" aria-label={`Question from ${q.intern_name}`}>
      <p>
        <strong>{q.intern_name}</strong>{' '}
        <span className="muted">
          asked {new Date(q.asked_at).toLocaleTimeString()} · waits until {new Date(q.expires_at).toLocaleTimeString()}
        </span>{' '}
        <a href={href(['interns', q.intern_id, 'chat'], { session: q.session_id })}>Open the chat</a>
      </p>
      <QuestionCard question={q.question} answered={answered} disabled={answered !== undefined} onAnswer={answer} />
      {status && <p role={status.alert ? 'alert' : 'status'}>{status.text}</p>}
      {reply && <Text>{reply}</Text>}
    </article>
  )
}
