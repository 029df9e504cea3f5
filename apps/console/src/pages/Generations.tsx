import { useState, type FormEvent } from 'react'
import { TableScroll } from '../listed'
import { useInfiniteQuery } from '@tanstack/react-query'
import { api, ApiError } from '../api'
import { Disclosure } from '../disclosure'
import { replaceQuery, type Route } from '../router'

interface Generation {
  id: string
  created_at: string
  model: string
  provider_name: string | null
  api_key_number: number | null
  api_key_name: string | null
  /** The id its client got (`chatcmpl-…` for a Chat Completions call, `msg_…` for a Messages one). */
  client_id: string
  session_id: string | null
  tokens_prompt: number
  tokens_completion: number
  total_cost: number
  latency: number | null
  finish_reason: string | null
  provider_responses: { status: number; provider_name: string; latency: number }[]
}
type Page = { data: Generation[]; has_more: boolean; next_cursor?: string }

const FILTERS = ['id', 'session_id', 'key', 'model', 'from', 'to', 'status'] as const

// Generations searched on the server (GET /generations): by id, session, key or model, within a
// time range (a spend bar opens its own), newest first in pages of 50 with the API's cursor; each
// with its cost, tokens and the provider attempts it took.
export function Generations({ route }: { route: Route }) {
  const filters = Object.fromEntries(FILTERS.map((f) => [f, route.query.get(f) ?? ''])) as Record<
    (typeof FILTERS)[number],
    string
  >
  const [form, setForm] = useState(filters)
  const list = useInfiniteQuery({
    queryKey: ['generations', filters],
    queryFn: ({ pageParam }) => {
      const params = new URLSearchParams(Object.entries(filters).filter(([, v]) => v))
      if (pageParam) params.set('cursor', pageParam)
      return api<Page>(`generations?${params}`)
    },
    initialPageParam: '',
    getNextPageParam: (last) => last.next_cursor,
  })
  const search = (e: FormEvent) => {
    e.preventDefault()
    replaceQuery(route, Object.fromEntries(FILTERS.map((f) => [f, form[f].trim() || undefined])))
  }
  const rows = list.data?.pages.flatMap((p) => p.data) ?? []
  const field = (name: (typeof FILTERS)[number], label: string) => (
    <label>
      {label}{' '}
      <input value={form[name]} onChange={(e) => setForm({ ...form, [name]: e.target.value })} maxLength={256} />
    </label>
  )
  return (
    <section aria-labelledby="generations-title">
      <h1 id="generations-title">Generations</h1>
      <form className="filters" onSubmit={search} aria-label="Search generations">
        {field('id', 'Generation id')}
        {field('session_id', 'Session')}
        {field('key', 'Key (number or hash)')}
        {field('model', 'Model')}
        <label className="inline">
          <input
            type="checkbox"
            checked={form.status === 'error'}
            onChange={(e) => setForm({ ...form, status: e.target.checked ? 'error' : '' })}
          />{' '}
          Failed calls only
        </label>
        <button type="submit">Search</button>
      </form>
      {(filters.from || filters.to) && (
        <p>
          Between {filters.from ? new Date(filters.from).toLocaleString() : 'the start'} and{' '}
          {filters.to ? new Date(filters.to).toLocaleString() : 'now'}.{' '}
          <button type="button" onClick={() => replaceQuery(route, { from: undefined, to: undefined })}>
            Any time
          </button>
        </p>
      )}
      {list.isPending ? (
        <p aria-busy="true">Loading generations…</p>
      ) : list.isError ? (
        <p role="alert">{list.error.message}</p>
      ) : rows.length === 0 ? (
        <p>
          {Object.values(filters).some(Boolean)
            ? 'No generations match: widen the search, or clear a filter.'
            : 'No generations yet: they appear here as soon as a key makes a model call.'}
        </p>
      ) : (
        <TableScroll label="Generations">
          <table>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Model</th>
                <th scope="col">Key</th>
                <th scope="col">Tokens (in / out)</th>
                <th scope="col">Cost</th>
                <th scope="col">Bodies and attempts</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((g) => (
                <tr key={g.id}>
                  <td>
                    <time dateTime={g.created_at}>{new Date(g.created_at).toLocaleString()}</time>
                    <br />
                    <code>{g.client_id}</code>
                  </td>
                  <td>
                    {g.model}
                    {g.provider_name && <span className="muted"> at {g.provider_name}</span>}
                  </td>
                  <td>
                    {g.api_key_name || (g.api_key_number !== null ? `key ${g.api_key_number}` : '')}
                    {g.finish_reason === 'error' && <span className="failing"> failed</span>}
                  </td>
                  <td>
                    {g.tokens_prompt} / {g.tokens_completion}
                  </td>
                  <td>${g.total_cost.toFixed(6)}</td>
                  <td>
                    <Bodies id={g.id} />
                    <details>
                      <summary>{g.provider_responses.length}</summary>
                      <ul>
                        {g.provider_responses.map((a, n) => (
                          <li key={n}>
                            {a.provider_name}: {a.status} in {a.latency} ms
                          </li>
                        ))}
                      </ul>
                    </details>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableScroll>
      )}
      {list.hasNextPage && (
        <button type="button" onClick={() => list.fetchNextPage()} disabled={list.isFetchingNextPage}>
          More generations
        </button>
      )}
    </section>
  )
}

/**
 * A generation's request and response, where its workspace keeps them (private logging), asked for
 * when opened; where it keeps none, the page says so.
 */
function Bodies({ id }: { id: string }) {
  return (
    <Disclosure
      summary="Request and response"
      queryKey={['generation-content', id]}
      load={() =>
        api<{ data: { input: unknown; output: unknown; error: unknown } }>(
          `generation/content?id=${encodeURIComponent(id)}`,
        )
      }
      failed={(err) => (
        <p className="muted">
          {err instanceof ApiError && err.status === 404
            ? 'Not kept: the workspace keeps no request bodies (private logging is off), or they are past their retention.'
            : err.message}
        </p>
      )}
      show={({ data }) => (
        <>
          <pre>{JSON.stringify(data.input, null, 2)}</pre>
          <pre>{JSON.stringify(data.output, null, 2)}</pre>
          {data.error ? <pre>{JSON.stringify(data.error, null, 2)}</pre> : null}
        </>
      )}
    />
  )
}
