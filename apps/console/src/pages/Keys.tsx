import { useState, type FormEvent } from 'react'
import { TableScroll } from '../listed'
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { api } from '../api'
import { ResetOptions } from '../choices'
import { href, replaceQuery, useTypedFilter, type Route } from '../router'

interface Key {
  hash: string
  /** user, organization or management (asked for with kind=all). */
  kind: 'user' | 'organization' | 'management'
  name: string
  label: string
  disabled: boolean
  limit: number | null
  limit_remaining: number | null
  limit_reset: string | null
  usage: number
  usage_monthly: number
  expires_at: string | null
  /** When it last authenticated a request (to the minute; null: never). */
  last_used_at: string | null
  created_at: string
}

const PAGE = 100 // GET /keys answers pages of 100

/** Dollars with enough places to read: whole above $100, four places above a cent, two significant digits below. */
function usd(n: number): string {
  if (n === 0) return '$0'
  if (n >= 100) return `$${n.toFixed(0)}`
  if (n >= 0.01) return `$${n.toFixed(4)}`
  return `$${n.toFixed(Math.min(12, 1 - Math.floor(Math.log10(n))))}`
}

/** What a key is called on the page: its name, else (the bootstrap's keys have none) its label. */
const called = (k: { name: string; label: string }) => k.name || `key ${k.label}`

// A workspace's keys (a management key's page): searched and paged on the server, so a workspace
// with 100,000 keys opens as fast as one with ten; create (the secret shown once), disable, enable.
export function Keys({ route }: { route: Route }) {
  const client = useQueryClient()
  const { value: q, typed, setTyped } = useTypedFilter(route, 'q', { offset: undefined })
  const offset = Number(route.query.get('offset') ?? 0) || 0
  const withDisabled = route.query.get('disabled') !== 'hide'
  const keys = useQuery({
    queryKey: ['keys', q, offset, withDisabled],
    queryFn: () => {
      // Every kind a workspace holds (an admin sees them all); only user keys are changed here.
      const params = new URLSearchParams({
        include_disabled: String(withDisabled),
        offset: String(offset),
        kind: 'all',
      })
      if (q) params.set('q', q)
      return api<{ data: Key[] }>(`keys?${params}`)
    },
    placeholderData: keepPreviousData,
  })
  const change = useMutation({
    mutationFn: ({ hash, disabled }: { hash: string; disabled: boolean }) =>
      api<unknown>(`keys/${hash}`, { method: 'PATCH', body: JSON.stringify({ disabled }) }),
    onSettled: () => client.invalidateQueries({ queryKey: ['keys'] }),
  })
  const remove = useMutation({
    mutationFn: (hash: string) => api<unknown>(`keys/${hash}`, { method: 'DELETE' }),
    onSettled: () => client.invalidateQueries({ queryKey: ['keys'] }),
  })
  const rows = keys.data?.data ?? []
  return (
    <section aria-labelledby="keys-title">
      <h1 id="keys-title">API keys</h1>
      <CreateKey onCreated={() => client.invalidateQueries({ queryKey: ['keys'] })} />
      <div className="filters">
        <label>
          Search by name or label{' '}
          <input type="search" value={typed} onChange={(e) => setTyped(e.target.value)} maxLength={100} />
        </label>
        <label className="inline">
          <input
            type="checkbox"
            checked={withDisabled}
            onChange={(e) =>
              replaceQuery(route, { disabled: e.target.checked ? undefined : 'hide', offset: undefined })
            }
          />{' '}
          Show disabled keys
        </label>
      </div>
      {change.isError && <p role="alert">{change.error.message}</p>}
      {remove.isError && <p role="alert">{remove.error.message}</p>}
      {keys.isPending ? (
        <p aria-busy="true">Loading keys…</p>
      ) : keys.isError ? (
        <p role="alert">{keys.error.message}</p>
      ) : rows.length === 0 ? (
        <p>
          {q ? `No key’s name or label holds “${q}”.` : 'No keys yet: create one above (its secret is shown once).'}
        </p>
      ) : (
        <TableScroll label="API keys">
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Kind</th>
                <th scope="col">Label</th>
                <th scope="col">Expires</th>
                <th scope="col">Last used</th>
                <th scope="col">Limit</th>
                <th scope="col">Left</th>
                <th scope="col">Spent (month)</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((k) => (
                <tr key={k.hash}>
                  <td>{k.name || <span className="muted">unnamed</span>}</td>
                  <td>{k.kind}</td>
                  <td>
                    <code>{k.label}</code>
                  </td>
                  <td>
                    {k.expires_at ? (
                      <time dateTime={k.expires_at}>{new Date(k.expires_at).toLocaleDateString()}</time>
                    ) : (
                      'never'
                    )}
                  </td>
                  <td>
                    {k.last_used_at ? (
                      <time dateTime={k.last_used_at}>{new Date(k.last_used_at).toLocaleString()}</time>
                    ) : (
                      <span className="muted">not yet</span>
                    )}
                  </td>
                  <td>{k.limit === null ? 'none' : `${usd(k.limit)}${k.limit_reset ? ` ${k.limit_reset}` : ''}`}</td>
                  <td>
                    {k.kind === 'user' ? (
                      <KeyLimits
                        hash={k.hash}
                        name={called(k)}
                        own={k.limit_remaining}
                        limit={k.limit}
                        reset={k.limit_reset}
                      />
                    ) : (
                      <span className="muted">—</span>
                    )}
                  </td>
                  <td>{usd(k.usage_monthly)}</td>
                  <td className="actions">
                    {k.kind === 'user' ? (
                      <>
                        <a href={href(['dry-run'], { key: k.hash })}>Dry run as {called(k)}</a>
                        <button
                          type="button"
                          className={k.disabled ? undefined : 'danger'}
                          onClick={() => change.mutate({ hash: k.hash, disabled: !k.disabled })}
                        >
                          {k.disabled ? `Enable ${called(k)}` : `Disable ${called(k)}`}
                        </button>
                        <button
                          type="button"
                          className="danger"
                          onClick={() => {
                            if (
                              confirm(`Delete ${called(k)}? Its calls are refused from now on; this cannot be undone.`)
                            )
                              remove.mutate(k.hash)
                          }}
                        >
                          Delete {called(k)}
                        </button>
                      </>
                    ) : (
                      <span className="muted">managed with the admin CLI</span>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableScroll>
      )}
      <nav className="pager" aria-label="Pages of keys">
        {offset > 0 && (
          <button
            type="button"
            onClick={() => replaceQuery(route, { offset: String(Math.max(0, offset - PAGE)) || undefined })}
          >
            Previous keys
          </button>
        )}
        {rows.length === PAGE && (
          <button type="button" onClick={() => replaceQuery(route, { offset: String(offset + PAGE) })}>
            Next keys
          </button>
        )}
      </nav>
    </section>
  )
}

interface Standing {
  of: string
  name: string | null
  limit_usd: number
  reset: string | null
  remaining_usd: number
  binds: boolean
}

const LIMIT_NAMES: Record<string, string> = {
  key: 'its own limit',
  guardrail: 'guardrail',
  member: 'guardrail, per member',
  workspace: 'the workspace’s budget',
  account: 'the account’s credits',
}

/**
 * What is left of the key's own limit; opened, every limit it counts against and the one that binds
 * (one call), and its own limit and reset to change.
 */
function KeyLimits({
  hash,
  name,
  own,
  limit,
  reset,
}: {
  hash: string
  name: string
  own: number | null
  limit: number | null
  reset: string | null
}) {
  const [open, setOpen] = useState(false)
  const limits = useQuery({
    queryKey: ['key-limits', hash],
    queryFn: () => api<{ data: Standing[] }>(`keys/${hash}/limits`),
    enabled: open,
  })
  return (
    <details onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>
        {own === null ? 'no own limit' : usd(own)}
        <span className="visually-hidden"> (every limit of {name})</span>
      </summary>
      {limits.isError ? (
        <p role="alert">{limits.error.message}</p>
      ) : !limits.data ? (
        open && <p aria-busy="true">Reading…</p>
      ) : limits.data.data.length === 0 ? (
        <p>No limit applies.</p>
      ) : (
        <ul className="limits">
          {limits.data.data.map((l, n) => (
            <li key={n} className={l.binds ? 'binds' : undefined}>
              {LIMIT_NAMES[l.of] ?? l.of}
              {l.name ? ` “${l.name}”` : ''}: {usd(l.remaining_usd)} left of {usd(l.limit_usd)}
              {l.reset ? ` ${l.reset}` : ''}
              {l.binds && <strong> (binds)</strong>}
            </li>
          ))}
        </ul>
      )}
      {open && <EditLimit hash={hash} name={name} limit={limit} reset={reset} />}
    </details>
  )
}

/** A key's own limit and when it resets, changed (an empty limit: none). */
function EditLimit({
  hash,
  name,
  limit,
  reset,
}: {
  hash: string
  name: string
  limit: number | null
  reset: string | null
}) {
  const client = useQueryClient()
  const [amount, setAmount] = useState(limit === null ? '' : String(limit))
  const [every, setEvery] = useState(reset ?? '')
  const save = useMutation({
    mutationFn: () =>
      api<unknown>(`keys/${hash}`, {
        method: 'PATCH',
        body: JSON.stringify({ limit: amount === '' ? null : Number(amount), limit_reset: every || null }),
      }),
    onSuccess: () =>
      Promise.all([
        client.invalidateQueries({ queryKey: ['keys'] }),
        client.invalidateQueries({ queryKey: ['key-limits', hash] }),
      ]),
  })
  const submit = (e: FormEvent) => {
    e.preventDefault()
    save.mutate()
  }
  return (
    <form className="edit-limit" onSubmit={submit} aria-label={`Limit of ${name}`}>
      <label>
        Own limit (USD, empty: none){' '}
        <input type="number" min="0" step="any" value={amount} onChange={(e) => setAmount(e.target.value)} />
      </label>
      <label>
        Resets{' '}
        <select value={every} onChange={(e) => setEvery(e.target.value)}>
          <ResetOptions />
        </select>
      </label>
      <button type="submit" disabled={save.isPending}>
        Save the limit of {name}
      </button>
      {save.isError && <p role="alert">{save.error.message}</p>}
      {save.isSuccess && <p role="status">Saved.</p>}
    </form>
  )
}

function CreateKey({ onCreated }: { onCreated: () => void }) {
  const [name, setName] = useState('')
  const [limit, setLimit] = useState('')
  const [reset, setReset] = useState('')
  const create = useMutation({
    mutationFn: () =>
      api<{ key: string }>('keys', {
        method: 'POST',
        body: JSON.stringify({
          name,
          ...(limit ? { limit: Number(limit) } : {}),
          ...(reset ? { limit_reset: reset } : {}),
        }),
      }),
    onSuccess: () => {
      setName('')
      setLimit('')
      setReset('')
      onCreated()
    },
  })
  const submit = (e: FormEvent) => {
    e.preventDefault()
    create.mutate()
  }
  return (
    <form className="create" onSubmit={submit} aria-label="New key">
      <label htmlFor="key-name">Name</label>
      <input id="key-name" value={name} onChange={(e) => setName(e.target.value)} required maxLength={100} />
      <label htmlFor="key-limit">Limit (USD)</label>
      <input id="key-limit" type="number" min="0" step="any" value={limit} onChange={(e) => setLimit(e.target.value)} />
      <label htmlFor="key-reset">Resets</label>
      <select id="key-reset" value={reset} onChange={(e) => setReset(e.target.value)}>
        <ResetOptions />
      </select>
      <button type="submit" disabled={create.isPending}>
        Create key
      </button>
      {create.isError && <p role="alert">{create.error.message}</p>}
      {create.data && (
        <div className="secret" role="status">
          <p>The new key, shown this once: copy it now.</p>
          <code>{create.data.key}</code>
        </div>
      )}
    </form>
  )
}
