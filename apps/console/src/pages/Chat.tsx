import { useEffect, useRef, useState, type FormEvent } from 'react'
import { useQuery } from '@tanstack/react-query'
import { api, type Intern } from '../api'
import { answerMessages, sendTurn, type Question } from '../chat-stream'
import { QuestionCard } from '../question-card'
import { Text } from '../markdown'
import { href, replaceQuery, type Route } from '../router'

// A conversation with an intern (the intern chat API, docs/console.md): replies streamed as they
// come, a question or a permission request as a card answered in place, a stop button (closing the
// stream cancels the run), messages sent while a turn runs steer it, and the session in the URL, so
// a reload shows its history and goes on with it.

/** How long sending waits after a stop (the host ends the run within milliseconds). */
const STOP_SETTLE_MS = 1_000

type Entry =
  | { kind: 'user'; text: string }
  | { kind: 'assistant'; text: string; reasoning: string; reply?: number }
  | { kind: 'tool'; name: string; args: string; output?: string }
  | { kind: 'question'; id: string; args: string; question: Question; answered?: string }
  | { kind: 'note'; text: string; alert?: boolean }

interface Item {
  item: Record<string, unknown>
}

/** A session's history as entries (tool calls folded with their outputs). */
function fromHistory(items: Item[]): Entry[] {
  const entries: Entry[] = []
  const tools = new Map<string, Extract<Entry, { kind: 'tool' }>>()
  for (const { item } of items) {
    if (item.type === 'message') {
      const text = typeof item.content === 'string' ? item.content : ''
      entries.push(item.role === 'user' ? { kind: 'user', text } : { kind: 'assistant', text, reasoning: '' })
    } else if (item.type === 'function_call') {
      const tool = { kind: 'tool' as const, name: String(item.name), args: String(item.arguments ?? '') }
      tools.set(String(item.call_id), tool)
      entries.push(tool)
    } else if (item.type === 'function_call_output') {
      const tool = tools.get(String(item.call_id))
      if (tool) tool.output = String(item.output ?? '')
    } else if (item.type === 'roster.interaction') {
      const question = item.question as Question
      entries.push({ kind: 'question', id: String(item.id), args: JSON.stringify(question), question })
    }
  }
  // Only a question nothing came after may still be waiting (the API says so if it is not).
  const last = entries.at(-1)
  return entries.map((e) => (e.kind === 'question' && e !== last ? { ...e, answered: 'earlier' } : e))
}

export default function Chat({ id, route }: { id: string; route: Route }) {
  const session = route.query.get('session')
  const intern = useQuery({ queryKey: ['intern', id], queryFn: () => api<Intern>(`interns/${id}`) })
  const history = useQuery({
    queryKey: ['session', id, session],
    queryFn: () => api<{ items: Item[] }>(`interns/${id}/sessions/${encodeURIComponent(session!)}`),
    enabled: !!session,
    staleTime: Infinity,
  })
  const [entries, setEntries] = useState<Entry[]>([])
  const [loadedFor, setLoadedFor] = useState<string | null>(null)
  useEffect(() => {
    if (history.data && loadedFor !== session) {
      setEntries(fromHistory(history.data.items))
      setLoadedFor(session)
    }
  }, [history.data, session, loadedFor])

  // The turn streaming now; `started` once its first chunk came (the intern holds the turn): only
  // then can a message steer it (sent earlier, it could race the turn's own start).
  const [streaming, setStreaming] = useState<{ controller: AbortController; started: boolean }>()
  const steerable = streaming?.started === true
  // After a stop the host takes a moment to end the run; a message sent meanwhile would be steered
  // into the run being cancelled (and lost with it), so sending waits that moment out.
  const [stopping, setStopping] = useState(false)
  const stop = () => {
    streaming?.controller.abort()
    setStopping(true)
    setTimeout(() => setStopping(false), STOP_SETTLE_MS)
  }
  const [text, setText] = useState('')
  const [manual, setManual] = useState(true)
  const log = useRef<HTMLOListElement>(null)
  // (A block, not an arrow's value: scrollIntoView returns a promise in newer browsers, and an
  // effect may return nothing but its clean-up.)
  useEffect(() => {
    log.current?.lastElementChild?.scrollIntoView({ block: 'nearest' })
  }, [entries])

  const add = (e: Entry) => setEntries((all) => [...all, e])
  /** Each streamed reply's number, so its chunks land in it whatever was added after it. */
  const replies = useRef(0)
  const toReply = (reply: number, change: (e: Extract<Entry, { kind: 'assistant' }>) => void) =>
    setEntries((all) =>
      all.map((e) => {
        if (e.kind !== 'assistant' || e.reply !== reply) return e
        const next = { ...e }
        change(next)
        return next
      }),
    )

  /**
   * Sends `messages` and streams the answer into the log. A steer (`steer`) is taken into the
   * running turn (202, its effect shows on that turn's stream); if that turn ended meanwhile the
   * intern takes it as a turn of its own, streamed like any other.
   */
  const run = async (messages: unknown[], sessionId: string, steer = false) => {
    const controller = new AbortController()
    let owns = !steer
    let reply: number | undefined
    if (owns) setStreaming({ controller, started: false })
    try {
      const outcome = await sendTurn(
        id,
        { session_id: sessionId, approval_mode: manual ? 'manual' : 'self-drive', messages },
        controller.signal,
        {
          started: () => setStreaming({ controller, started: true }),
          content: (text) => toReply(reply!, (r) => (r.text += text)),
          reasoning: (text) => toReply(reply!, (r) => (r.reasoning += text)),
          question: (qid, args, question) => add({ kind: 'question', id: qid, args, question }),
          failed: (message) => add({ kind: 'note', text: `The turn failed: ${message}`, alert: true }),
        },
        () => {
          // A message meant to steer that the intern took as a turn of its own streams like any.
          if (!owns) {
            owns = true
            setStreaming({ controller, started: false })
          }
          reply = ++replies.current
          add({ kind: 'assistant', reply, text: '', reasoning: '' })
        },
      )
      // Taken into a turn already running (a steer, or a turn started elsewhere in this session).
      if (outcome === 'steered') add({ kind: 'note', text: 'Sent into the running turn.' })
    } catch (err) {
      if (controller.signal.aborted) add({ kind: 'note', text: 'Stopped: the run was cancelled.' })
      else add({ kind: 'note', text: (err as Error).message, alert: true })
    } finally {
      if (owns) {
        setStreaming(undefined)
        // An empty reply (a pause before any text) leaves no empty bubble; only this run's own.
        setEntries((all) => all.filter((e) => e.kind !== 'assistant' || e.reply !== reply || e.text || e.reasoning))
      }
    }
  }

  const send = async (e: FormEvent) => {
    e.preventDefault()
    const prompt = text.trim()
    // A message waits while a turn is starting (it could race the turn's own start).
    if (!prompt || stopping || (streaming && !steerable)) return
    setText('')
    let sessionId = session
    if (!sessionId) {
      // A new conversation's id is chosen here, so the URL names it from its first message.
      sessionId = `console-${crypto.randomUUID()}`
      setLoadedFor(sessionId)
      replaceQuery(route, { session: sessionId })
    }
    add({ kind: 'user', text: prompt })
    await run([{ role: 'user', content: prompt }], sessionId, !!streaming)
  }

  const answer = (q: Extract<Entry, { kind: 'question' }>, content: string, shown: string) => {
    setEntries((all) => all.map((e) => (e === q ? { ...q, answered: shown } : e)))
    void run(answerMessages(q.id, q.args, content), session!)
  }

  const name = intern.data?.name ?? 'the intern'
  return (
    <section aria-labelledby="chat-title" className="chat">
      <p>
        <a href={href(['interns', id])}>{name}</a> · <a href={href(['interns', id, 'chat'])}>New conversation</a>
      </p>
      <h1 id="chat-title">Chat with {name}</h1>
      {history.isError && <p role="alert">{history.error.message}</p>}
      <ol className="log" ref={log} aria-live="polite">
        {entries.map((e, n) => (
          <li key={n} className={`entry entry-${e.kind}`}>
            <EntryView entry={e} busy={!!streaming} answer={answer} />
          </li>
        ))}
      </ol>
      <form onSubmit={send} className="composer" aria-label="Message">
        <label htmlFor="prompt">{steerable ? 'Steer the running turn' : 'Message'}</label>
        <textarea
          id="prompt"
          value={text}
          onChange={(e) => setText(e.target.value)}
          maxLength={32_000}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && !e.shiftKey) {
              e.preventDefault()
              e.currentTarget.form?.requestSubmit()
            }
          }}
        />
        <label className="inline">
          <input type="checkbox" checked={manual} onChange={(e) => setManual(e.target.checked)} /> Ask before running
          commands
        </label>
        <button type="submit" disabled={stopping || (!!streaming && !steerable)}>
          {stopping ? 'Stopping…' : steerable ? 'Steer' : streaming ? 'Starting…' : 'Send'}
        </button>
        {streaming && (
          <button type="button" className="danger" onClick={stop}>
            Stop
          </button>
        )}
      </form>
    </section>
  )
}

function EntryView({
  entry: e,
  busy,
  answer,
}: {
  entry: Entry
  busy: boolean
  answer: (q: Extract<Entry, { kind: 'question' }>, content: string, shown: string) => void
}) {
  switch (e.kind) {
    case 'user':
      return (
        <>
          <strong>You</strong>
          <Text>{e.text}</Text>
        </>
      )
    case 'assistant':
      return (
        <>
          <strong>Intern</strong>
          {e.reasoning && (
            <details>
              <summary>Reasoning</summary>
              <p className="pre">{e.reasoning}</p>
            </details>
          )}
          <Text>{e.text || '…'}</Text>
        </>
      )
    case 'tool':
      return (
        <details>
          <summary>Used {e.name}</summary>
          <pre>{e.args}</pre>
          {e.output !== undefined && <pre>{e.output}</pre>}
        </details>
      )
    case 'note':
      return <p role={e.alert ? 'alert' : 'status'}>{e.text}</p>
    case 'question':
      return (
        <QuestionCard
          question={e.question}
          answered={e.answered}
          disabled={busy || e.answered !== undefined}
          onAnswer={(content, shown) => answer(e, content, shown)}
        />
      )
  }
}
