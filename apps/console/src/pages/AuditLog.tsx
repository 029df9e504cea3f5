import { useState, type FormEvent } from 'react'
import { TableScroll } from '../listed'
import { useInfiniteQuery } from '@tanstack/react-query'
import { api } from '../api'
import { replaceQuery, type Route } from '../router'

// The audit log (GET /audit-log): every governance change of the account, from the API, this
// console or the admin CLI, newest first with the API's cursor, filtered by action, target, who
// and time; each with what it was before and after (secrets masked by the server). Read-only:
// nothing in the API changes an event.

interface AuditEvent {
  id: string
  created_at: string
  actor: { type: string; id: string | null; label: string }
  via: string
  action: string
  target: { type: string; id: string | null }
  before: unknown
  after: unknown
  request: unknown
  ip: string | null
}
type Page = { data: AuditEvent[]; has_more: boolean; next_cursor?: string }

const FILTERS = ['action', 'target_type', 'target_id', 'actor_id', 'from', 'to'] as const
const FAMILIES = [
  'key',
  'workspace',
  'budget',
  'guardrail',
  'provider_key',
  'destination',
  'member',
  'session',
  'account',
]

export function AuditLog({ route }: { route: Route }) {
  const filters = Object.fromEntries(FILTERS.map((f) => [f, route.query.get(f) ?? ''])) as Record<
    (typeof FILTERS)[number],
    string
  >
  const [form, setForm] = useState(filters)
  const list = useInfiniteQuery({
    queryKey: ['audit', filters],
    queryFn: ({ pageParam }) => {
      const params = new URLSearchParams(Object.entries(filters).filter(([, v]) => v))
      if (pageParam) params.set('cursor', pageParam)
      return api<Page>(`audit-log?${params}`)
    },
    initialPageParam: '',
    getNextPageParam: (last) => last.next_cursor,
  })
  const search = (e: FormEvent) => {
    e.preventDefault()
    const iso = (v: string) => (v ? new Date(v).toISOString() : undefined)
    replaceQuery(route, {
      action: form.action || undefined,
      target_id: form.target_id.trim() || undefined,
      actor_id: form.actor_id.trim() || undefined,
      from: iso(form.from),
      to: iso(form.to),
    })
  }
  const rows = list.data?.pages.flatMap((p) => p.data) ?? []
  return (
    <section aria-labelledby="audit-title">
      <h1 id="audit-title">Audit log</h1>
      <p className="muted">
        Every change to keys, budgets, guardrails, provider keys, destinations, members and workspaces, and every
        sign-in: from the API, this console or the admin CLI. Kept as the operator's retention setting says; never
        edited.
      </p>
      <form className="filters" onSubmit={search} aria-label="Filter the audit log">
        <label>
          What{' '}
          <select value={form.action} onChange={(e) => setForm({ ...form, action: e.target.value })}>
            <option value="">everything</option>
            {FAMILIES.map((f) => (
              <option key={f} value={f}>
                {f.replace('_', ' ')}
              </option>
            ))}
          </select>
        </label>
        <label>
          Target id{' '}
          <input
            value={form.target_id}
            onChange={(e) => setForm({ ...form, target_id: e.target.value })}
            maxLength={200}
          />
        </label>
        <label>
          Who (a key's or member's id){' '}
          <input
            value={form.actor_id}
            onChange={(e) => setForm({ ...form, actor_id: e.target.value })}
            maxLength={64}
          />
        </label>
        <label>
          From{' '}
          <input
            type="datetime-local"
            value={local(form.from)}
            onChange={(e) => setForm({ ...form, from: e.target.value })}
          />
        </label>
        <label>
          To{' '}
          <input
            type="datetime-local"
            value={local(form.to)}
            onChange={(e) => setForm({ ...form, to: e.target.value })}
          />
        </label>
        <button type="submit">Filter</button>
      </form>
      {list.isPending ? (
        <p aria-busy="true">Loading the audit log…</p>
      ) : list.isError ? (
        <p role="alert">{list.error.message}</p>
      ) : rows.length === 0 ? (
        <p>
          {Object.values(filters).some(Boolean)
            ? 'No changes match: widen the filter.'
            : 'No governance changes yet: they appear here as keys, budgets or guardrails change.'}
        </p>
      ) : (
        <TableScroll label="Audit log">
          <table className="audit">
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Who</th>
                <th scope="col">What</th>
                <th scope="col">Change</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((e) => (
                <tr key={e.id}>
                  <td>
                    <time dateTime={e.created_at}>{new Date(e.created_at).toLocaleString()}</time>
                  </td>
                  <td>
                    {e.actor.label}
                    <span className="muted">
                      {' '}
                      ({e.actor.type}, via {e.via}
                      {e.ip ? ` from ${e.ip}` : ''})
                    </span>
                  </td>
                  <td>
                    <code>{e.action}</code>
                    {e.target.id && (
                      <>
                        <br />
                        <span className="muted">
                          {e.target.type} {e.target.id}
                        </span>
                      </>
                    )}
                  </td>
                  <td>
                    <ChangedFields before={e.before} after={e.after} />
                    <details>
                      <summary>Before and after</summary>
                      <dl>
                        <dt>Before</dt>
                        <dd>
                          <pre>{show(e.before)}</pre>
                        </dd>
                        <dt>After</dt>
                        <dd>
                          <pre>{show(e.after)}</pre>
                        </dd>
                        {e.request !== null && (
                          <>
                            <dt>Asked</dt>
                            <dd>
                              <pre>{show(e.request)}</pre>
                            </dd>
                          </>
                        )}
                      </dl>
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
          Older changes
        </button>
      )}
    </section>
  )
}

/** What changed, field by field (a create lists what it made, a delete what it removed). */
function ChangedFields({ before, after }: { before: unknown; after: unknown }) {
  const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v)
  if (!isObject(before) && !isObject(after)) return null
  const was = isObject(before) ? before : {}
  const now = isObject(after) ? after : {}
  const text = (v: unknown) => (v === undefined ? '—' : JSON.stringify(v))
  const fields = [...new Set([...Object.keys(was), ...Object.keys(now)])].filter(
    (k) => !['created_at', 'updated_at'].includes(k) && JSON.stringify(was[k]) !== JSON.stringify(now[k]),
  )
  if (fields.length === 0) return null
  return (
    <ul className="changes">
      {fields.slice(0, 5).map((k) => (
        <li key={k}>
          <code>{k}</code>:{' '}
          {isObject(before) && isObject(after)
            ? `${text(was[k])} → ${text(now[k])}`
            : text(isObject(after) ? now[k] : was[k])}
        </li>
      ))}
      {fields.length > 5 && <li className="muted">and {fields.length - 5} more</li>}
    </ul>
  )
}

const show = (v: unknown) => (v === null || v === undefined ? '(nothing)' : JSON.stringify(v, null, 2))

/** An ISO instant as a datetime-local input holds it (the browser's zone), or what was typed. */
function local(v: string) {
  if (!v || !v.endsWith('Z')) return v
  const d = new Date(v)
  return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16)
}

export default AuditLog
