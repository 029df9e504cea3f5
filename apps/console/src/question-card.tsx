import { useState, type FormEvent } from 'react'
import type { Question } from './chat-stream'
import { Text } from './markdown'

const OPTION_LABELS: Record<string, string> = {
  allow_once: 'Allow once',
  allow_always: 'Allow always',
  reject_once: 'Reject',
  reject_always: 'Reject always',
}

/**
 * A question a run asked, answered on the card: a button per permission option, or a form for an
 * elicitation's fields (with Decline). `onAnswer` gets the reply's content and what to show for it.
 */
export function QuestionCard({
  question,
  answered,
  disabled,
  onAnswer,
}: {
  question: Question
  answered?: string
  disabled: boolean
  onAnswer: (content: string, shown: string) => void
}) {
  const [values, setValues] = useState<Record<string, string>>({})
  const done = answered ? <p className="muted">Answered: {answered}</p> : null
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
                onClick={() => onAnswer(o, OPTION_LABELS[o] ?? o)}
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
    onAnswer(JSON.stringify({ action: 'accept', content }), Object.values(content).join(', ') || 'accepted')
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
              onClick={() => onAnswer(JSON.stringify({ action: 'decline' }), 'declined')}
            >
              Decline
            </button>
          </div>
        </>
      )}
    </form>
  )
}
