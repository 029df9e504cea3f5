import { useState, type FormEvent } from 'react'
import { useMutation, useQuery } from '@tanstack/react-query'
import { api } from '../api'
import type { Route } from '../router'

interface Verdict {
  allowed: boolean
  guardrails: { id: string; name: string }[]
  matches: { guardrail: string; filter: string; action: string }[]
  endpoints?: { model: string; provider: string }[]
  status?: number
  reason?: string
}

// "Would this request pass, and which rule decides?" (POST /guardrails/dry-run): a model and a
// prompt checked against the guardrails in force on a key (the member's own, or, for a management
// key, another key of the workspace by its hash), with nothing sent to a model or spent.
export function DryRun({ route }: { route: Route }) {
  const [model, setModel] = useState('')
  const served = useQuery({ queryKey: ['models'], queryFn: () => api<{ data: { id: string }[] }>('models') })
  const [prompt, setPrompt] = useState('')
  const [keyHash, setKeyHash] = useState(route.query.get('key') ?? '')
  const check = useMutation({
    mutationFn: () =>
      api<Verdict>('guardrails/dry-run', {
        method: 'POST',
        body: JSON.stringify({
          request: { model, input: prompt },
          ...(keyHash.trim() ? { key_hash: keyHash.trim() } : {}),
        }),
      }),
  })
  const submit = (e: FormEvent) => {
    e.preventDefault()
    check.mutate()
  }
  const v = check.data
  return (
    <section aria-labelledby="dry-run-title">
      <h1 id="dry-run-title">Guardrail dry run</h1>
      <form className="create" onSubmit={submit} aria-label="Dry run">
        <label htmlFor="dr-model">Model</label>
        <input
          id="dr-model"
          value={model}
          onChange={(e) => setModel(e.target.value)}
          required
          maxLength={256}
          list="dr-models"
        />
        {/* The catalogue's models as the field's choices (any name may still be typed: the check says what it makes of it). */}
        <datalist id="dr-models">
          {(served.data?.data ?? []).map((m) => (
            <option key={m.id} value={m.id} />
          ))}
        </datalist>
        <label htmlFor="dr-prompt">Prompt</label>
        <textarea id="dr-prompt" value={prompt} onChange={(e) => setPrompt(e.target.value)} required />
        <label htmlFor="dr-key">As the key (hash)</label>
        <input
          id="dr-key"
          value={keyHash}
          onChange={(e) => setKeyHash(e.target.value)}
          placeholder="this key"
          pattern="[0-9a-f]{64}"
        />
        <button type="submit" disabled={check.isPending}>
          Check
        </button>
      </form>
      {check.isError && <p role="alert">{check.error.message}</p>}
      {v && (
        <div className="verdict" role="status">
          <p>
            <strong>{v.allowed ? 'It would pass.' : `It would be refused (${v.status}).`}</strong>
            {v.reason && ` ${v.reason}`}
          </p>
          <p>Guardrails in force: {v.guardrails.length ? v.guardrails.map((g) => g.name).join(', ') : 'none'}</p>
          {v.matches.length > 0 && (
            <ul>
              {v.matches.map((m, n) => (
                <li key={n}>
                  {m.guardrail}: {m.filter} ({m.action})
                </li>
              ))}
            </ul>
          )}
          {v.endpoints && v.endpoints.length > 0 && (
            <p>Would try: {v.endpoints.map((e) => `${e.model} at ${e.provider}`).join(', ')}</p>
          )}
        </div>
      )}
    </section>
  )
}
