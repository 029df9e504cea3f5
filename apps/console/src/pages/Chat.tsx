import { useEffect, useRef, useState, type FormEvent } from 'react'
import { useQuery } from '@tanstack/react-query'
import { api, call, readEvents, refusal, type Intern } from '../api'
import { Text } from '../markdown'
import { href, replaceQuery, type Route } from '../router'

// A conversation with an intern (the intern chat API, docs/console.md): replies streamed as they
// come, a question or a permission request as a card answered in place, a stop button (closing the
// stream cancels the run), messages sent while a turn runs steer it, and the session in the URL, so
// a reload shows its history and goes on with it.

/** How long sending waits after a stop (the host ends the run within milliseconds). */
const STOP_SETTLE_MS = 1_000

type Question =
  | { kind: 'permission'; operation: string | null; options: string[] }
  | {
      kind: 'elicitation'
      message: string
      fields: { name: string; type: string; required?: boolean; options?: string[] }[]
    }

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
      const res = await call(`interns/${id}/chat/completions`, {
        method: 'POST',
        body: JSON.stringify({
          stream: true,
          session_id: sessionId,
          approval_mode: manual ? 'manual' : 'self-drive',
          messages,
        }),
        signal: controller.signal,
      })
      // Taken into a turn already running (a steer, or a turn started elsewhere in this session).
      if (res.status === 202) return add({ kind: 'note', text: 'Sent into the running turn.' })
      if (!res.ok) throw await refusal(res)
      if (!owns) {
        owns = true
        setStreaming({ controller, started: false })
      }
      const mine = ++replies.current
      reply = mine
      add({ kind: 'assistant', reply: mine, text: '', reasoning: '' })
      let started = false
      await readEvents(res, (_event, data) => {
        if (!started) {
          started = true
          setStreaming({ controller, started: true })
        }
        if (data === '[DONE]') return
        const chunk = JSON.parse(data) as {
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
        const choice = chunk.choices[0]
        if (!choice) return
        const { content, reasoning, tool_calls } = choice.delta
        if (content) toReply(mine, (r) => (r.text += content))
        if (reasoning) toReply(mine, (r) => (r.reasoning += reasoning))
        for (const tc of tool_calls ?? [])
          add({
            kind: 'question',
            id: tc.id,
            args: tc.function.arguments,
            question: JSON.parse(tc.function.arguments) as Question,
          })
        if (choice.finish_reason === 'error')
          add({ kind: 'note', text: `The turn failed: ${chunk.error?.message ?? 'no reason given'}`, alert: true })
      })
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
    void run(
      [
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: q.id, type: 'function', function: { name: 'openrouter.provide_input', arguments: q.args } },
          ],
        },
        { role: 'tool', tool_call_id: q.id, content },
      ],
      session!,
    )
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
      return <QuestionCard q={e} disabled={busy || e.answered !== undefined} answer={answer} />
  }
}

const OPTION_LABELS: Record<string, string> = {
  allow_once: 'Allow once',
  allow_always: 'Allow always',
  reject_once: 'Reject',
  reject_always: 'Reject always',
}

function QuestionCard({
  q,
  disabled,
  answer,
}: {
  q: Extract<Entry, { kind: 'question' }>
  disabled: boolean
  answer: (q: Extract<Entry, { kind: 'question' }>, content: string, shown: string) => void
}) {
  const [values, setValues] = useState<Record<string, string>>({})
  const question = q.question
  const done = q.answered ? <p className="muted">Answered: {q.answered}</p> : null
  if (question.kind === 'permission')
    return (
      <div className="card" role="group" aria-label="Permission request">
        <p>
          <strong>May the intern run {question.operation ?? 'this'}?</strong>
        </p>
        {done ?? (
          <div className="actions">
            {question.options.map((o) => (
              <button
                key={o}
                type="button"
                disabled={disabled}
                className={o.startsWith('reject') ? 'danger' : undefined}
                onClick={() => answer(q, o, OPTION_LABELS[o] ?? o)}
              >
                {OPTION_LABELS[o] ?? o}
              </button>
            ))}
          </div>
        )}
      </div>
    )
  const submit = (e: FormEvent) => {
    e.preventDefault()
    const content: Record<string, string | number | boolean> = {}
    for (const f of question.fields) {
      const v = values[f.name]
      if (v === undefined || v === '') continue
      content[f.name] =
        f.type === 'boolean' ? v === 'true' : f.type === 'number' || f.type === 'integer' ? Number(v) : v
    }
    answer(q, JSON.stringify({ action: 'accept', content }), Object.values(content).join(', ') || 'accepted')
  }
  return (
    <form className="card" aria-label="Question" onSubmit={submit}>
      <Text>{question.message}</Text>
      {done ?? (
        <>
          {question.fields.map((f) => (
            <label key={f.name}>
              {f.name}{' '}
              {f.options ? (
                <select
                  required={f.required !== false}
                  value={values[f.name] ?? ''}
                  onChange={(e) => setValues({ ...values, [f.name]: e.target.value })}
                >
                  <option value="" />
                  {f.options.map((o) => (
                    <option key={o}>{o}</option>
                  ))}
                </select>
              ) : (
                <input
                  required={f.required !== false}
                  type={f.type === 'number' || f.type === 'integer' ? 'number' : 'text'}
                  value={values[f.name] ?? ''}
                  onChange={(e) => setValues({ ...values, [f.name]: e.target.value })}
                />
              )}
            </label>
          ))}
          <div className="actions">
            <button type="submit" disabled={disabled}>
              Answer
            </button>
            <button
              type="button"
              disabled={disabled}
              onClick={() => answer(q, JSON.stringify({ action: 'decline' }), 'declined')}
            >
              Decline
            </button>
          </div>
        </>
      )}
    </form>
  )
}
