import { useRef, useState, type FormEvent } from 'react'
import { useQuery } from '@tanstack/react-query'
import { api, call, readEvents, refusal } from '../api'
import { body, useChanges } from '../changes'

// The playground: one prompt sent to one or two models side by side (POST /responses, streamed,
// with the session's own key: the member's spend, under their guardrails), each answer as it comes
// with its tokens, cost, time to first token and total time; a preset's settings used, or the
// left-hand model and its instructions saved as a preset (an admin's or a management key's).

interface Usage {
  input_tokens?: number
  output_tokens?: number
  cost?: number
}
interface Column {
  model: string
  text: string
  status: 'idle' | 'streaming' | 'done' | 'failed'
  error?: string
  usage?: Usage
  firstMs?: number
  totalMs?: number
}
const EMPTY: Column = { model: '', text: '', status: 'idle' }

export function Playground() {
  const models = useQuery({ queryKey: ['models'], queryFn: () => api<{ data: { id: string }[] }>('models') })
  const presets = useQuery({
    queryKey: ['presets'],
    queryFn: () => api<{ data: { slug: string; name?: string }[] }>('presets?limit=100'),
  })
  const [columns, setColumns] = useState<[Column, Column]>([{ ...EMPTY }, { ...EMPTY }])
  const [prompt, setPrompt] = useState('')
  const [instructions, setInstructions] = useState('')
  const [preset, setPreset] = useState('')
  const [webSearch, setWebSearch] = useState(false)
  const [slug, setSlug] = useState('')
  const stop = useRef<AbortController | undefined>(undefined)
  const { run, line, busy } = useChanges([['presets']])

  const update = (i: 0 | 1, change: Partial<Column>) =>
    setColumns((cs) => {
      const next: [Column, Column] = [{ ...cs[0] }, { ...cs[1] }]
      next[i] = { ...next[i], ...change }
      return next
    })

  const send = async (e: FormEvent) => {
    e.preventDefault()
    stop.current?.abort()
    const abort = new AbortController()
    stop.current = abort
    await Promise.all(
      ([0, 1] as const).filter((i) => columns[i].model).map((i) => ask(i, columns[i].model, abort.signal)),
    )
  }

  const ask = async (i: 0 | 1, model: string, signal: AbortSignal) => {
    update(i, {
      text: '',
      status: 'streaming',
      error: undefined,
      usage: undefined,
      firstMs: undefined,
      totalMs: undefined,
    })
    const began = performance.now()
    try {
      const res = await call('responses', {
        method: 'POST',
        signal,
        body: body({
          model: preset ? `${model}@preset/${preset}` : model,
          input: prompt,
          stream: true,
          ...(instructions ? { instructions } : {}),
          ...(webSearch ? { tools: [{ type: 'openrouter:web_search' }] } : {}),
        }),
      })
      if (!res.ok) throw await refusal(res)
      let first = true
      await readEvents(res, (event, data) => {
        // The stream's end, as OpenRouter's ends it.
        if (data === '[DONE]') return
        const ev = JSON.parse(data) as {
          type?: string
          delta?: string
          response?: { usage?: Usage; error?: { message: string } | null }
        }
        const type = ev.type ?? event
        if (type === 'response.output_text.delta' && ev.delta) {
          if (first) {
            first = false
            update(i, { firstMs: Math.round(performance.now() - began) })
          }
          setColumns((cs) => {
            const next: [Column, Column] = [{ ...cs[0] }, { ...cs[1] }]
            next[i] = { ...next[i], text: next[i].text + ev.delta }
            return next
          })
        } else if (type === 'response.completed' || type === 'response.incomplete') {
          update(i, { usage: ev.response?.usage })
        } else if (type === 'response.failed' || type === 'error') {
          throw new Error(ev.response?.error?.message ?? 'the model failed')
        }
      })
      update(i, { status: 'done', totalMs: Math.round(performance.now() - began) })
    } catch (err) {
      if (signal.aborted) update(i, { status: 'done', totalMs: Math.round(performance.now() - began) })
      else update(i, { status: 'failed', error: (err as Error).message })
    }
  }

  const save = async (e: FormEvent) => {
    e.preventDefault()
    const left = columns[0]
    await run({
      done: `Saved as the preset ${slug}: use it as model "${left.model}@preset/${slug}", or "@preset/${slug}".`,
      act: () =>
        api(`presets/${encodeURIComponent(slug)}/responses`, {
          method: 'POST',
          body: body({
            model: left.model,
            ...(instructions ? { instructions } : {}),
            ...(webSearch ? { tools: [{ type: 'openrouter:web_search' }] } : {}),
          }),
        }),
    })
  }

  const streaming = columns.some((c) => c.status === 'streaming')
  return (
    <section aria-labelledby="playground-title">
      <h1 id="playground-title">Playground</h1>
      <datalist id="pg-models">
        {(models.data?.data ?? []).map((m) => (
          <option key={m.id} value={m.id} />
        ))}
      </datalist>
      <form onSubmit={send} aria-label="Ask the models" className="playground">
        <div className="columns">
          {([0, 1] as const).map((i) => (
            <label key={i}>
              {i === 0 ? 'Model' : 'Second model (optional)'}{' '}
              <input
                list="pg-models"
                value={columns[i].model}
                onChange={(e) => update(i, { model: e.target.value })}
                required={i === 0}
                maxLength={256}
              />
            </label>
          ))}
        </div>
        <label>
          Instructions{' '}
          <textarea value={instructions} onChange={(e) => setInstructions(e.target.value)} maxLength={20_000} />
        </label>
        <label>
          Prompt <textarea value={prompt} onChange={(e) => setPrompt(e.target.value)} required maxLength={100_000} />
        </label>
        <div className="filters">
          <label>
            Preset{' '}
            <select value={preset} onChange={(e) => setPreset(e.target.value)}>
              <option value="">none</option>
              {(presets.data?.data ?? []).map((p) => (
                <option key={p.slug} value={p.slug}>
                  {p.name || p.slug}
                </option>
              ))}
            </select>
          </label>
          <label className="inline">
            <input type="checkbox" checked={webSearch} onChange={(e) => setWebSearch(e.target.checked)} /> Web search
          </label>
          <button type="submit" disabled={streaming}>
            Send
          </button>
          {streaming && (
            <button type="button" className="danger" onClick={() => stop.current?.abort()}>
              Stop
            </button>
          )}
        </div>
      </form>
      <div className="columns">
        {columns
          .filter((c, i) => i === 0 || c.model)
          .map((c, i) => (
            <article
              key={i}
              aria-label={`Answer of ${c.model || 'the first model'}`}
              aria-busy={c.status === 'streaming'}
            >
              <h2>{c.model || 'Model'}</h2>
              {c.status === 'failed' ? (
                <p role="alert">{c.error}</p>
              ) : (
                <p className="pre answer">
                  {c.text || (c.status === 'idle' ? 'The answer appears here as it comes.' : '')}
                </p>
              )}
              {(c.status === 'done' || c.usage) && (
                <p className="muted stats">
                  {c.usage?.input_tokens ?? 0} in · {c.usage?.output_tokens ?? 0} out
                  {typeof c.usage?.cost === 'number' ? ` · $${c.usage.cost.toFixed(6)}` : ''}
                  {c.firstMs !== undefined ? ` · first token ${c.firstMs} ms` : ''}
                  {c.totalMs !== undefined ? ` · ${c.totalMs} ms` : ''}
                </p>
              )}
            </article>
          ))}
      </div>
      <form className="filters" onSubmit={save} aria-label="Save as a preset">
        <label>
          Preset slug{' '}
          <input
            value={slug}
            onChange={(e) => setSlug(e.target.value)}
            required
            pattern="[a-z0-9]([a-z0-9._-]*[a-z0-9])?"
            maxLength={64}
          />
        </label>
        <button type="submit" disabled={busy || !columns[0].model}>
          Save the first model and instructions as a preset
        </button>
      </form>
      {line}
    </section>
  )
}

export default Playground
