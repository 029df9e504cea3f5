import { useState, type FormEvent } from 'react'
import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { api, ApiError, type Intern, type Session } from './api'

// The console's shell: sign in with an API key (exchanged for a session cookie, then forgotten),
// the interns the key can see, and signing out. Every text from the server is rendered as text.

export function App() {
  const session = useQuery({
    queryKey: ['session'],
    queryFn: () => api<Session>('console/session'),
    retry: false,
  })
  if (session.isPending)
    return (
      <main aria-busy="true">
        <p>Checking whether you are signed in…</p>
      </main>
    )
  if (session.isError) return <SignIn />
  return <Signed session={session.data} />
}

function SignIn() {
  const client = useQueryClient()
  const [key, setKey] = useState('')
  const signIn = useMutation({
    mutationFn: (k: string) => api<Session>('console/session', { method: 'POST', body: JSON.stringify({ key: k }) }),
    onSuccess: (s) => {
      setKey('')
      client.setQueryData(['session'], s)
    },
  })
  const submit = (e: FormEvent) => {
    e.preventDefault()
    signIn.mutate(key)
  }
  return (
    <main className="sign-in">
      <h1>Roster</h1>
      <form onSubmit={submit}>
        <label htmlFor="key">API key</label>
        <input
          id="key"
          type="password"
          autoComplete="off"
          value={key}
          onChange={(e) => setKey(e.target.value)}
          required
        />
        <button type="submit" disabled={signIn.isPending}>
          Sign in
        </button>
        {signIn.isError && (
          <p role="alert">
            {signIn.error instanceof ApiError && signIn.error.status === 401
              ? 'That key is not valid.'
              : signIn.error.message}
          </p>
        )}
      </form>
    </main>
  )
}

function Signed({ session }: { session: Session }) {
  const client = useQueryClient()
  const signOut = useMutation({
    mutationFn: () => api<void>('console/session', { method: 'DELETE' }),
    onSettled: () => client.clear(),
  })
  return (
    <>
      <header>
        <strong>Roster</strong>
        <span>
          {session.kind} key · workspace {session.workspace_id}
        </span>
        <button type="button" onClick={() => signOut.mutate(undefined, { onSuccess: () => location.reload() })}>
          Sign out
        </button>
      </header>
      <main>
        <Interns />
      </main>
    </>
  )
}

function Interns() {
  const client = useQueryClient()
  // Pages of 50, newest first, with the API's cursor; live enough without polling faster than 5 s.
  const interns = useInfiniteQuery({
    queryKey: ['interns'],
    queryFn: ({ pageParam }) =>
      api<{ data: Intern[]; next_cursor?: string | null }>(
        `interns?limit=50${pageParam ? `&cursor=${encodeURIComponent(pageParam)}` : ''}`,
      ),
    initialPageParam: '',
    getNextPageParam: (last) => last.next_cursor ?? undefined,
    refetchInterval: 5_000,
  })
  const changed = () => client.invalidateQueries({ queryKey: ['interns'] })
  const act = useMutation({
    mutationFn: ({ id, action }: { id: string; action: 'provision' | 'suspend' | 'delete' }) =>
      action === 'delete'
        ? api<unknown>(`interns/${id}`, { method: 'DELETE', body: '{}' })
        : api<unknown>(`interns/${id}/${action}`, { method: 'POST', body: '{}' }),
    onSettled: changed,
  })
  if (interns.isPending) return <p aria-busy="true">Loading interns…</p>
  if (interns.isError) return <p role="alert">{interns.error.message}</p>
  const rows = interns.data.pages.flatMap((p) => p.data)
  return (
    <section aria-labelledby="interns-title">
      <h2 id="interns-title">Interns</h2>
      <CreateIntern onCreated={changed} />
      {act.isError && <p role="alert">{act.error.message}</p>}
      {rows.length === 0 ? (
        <p>No interns yet.</p>
      ) : (
        <div className="table-scroll">
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Status</th>
                <th scope="col">Last failure</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((i) => (
                <tr key={i.id}>
                  <td>{i.name}</td>
                  <td>{i.status}</td>
                  <td>{i.last_failure_message ?? ''}</td>
                  <td className="actions">
                    {(i.status === 'stopped' || i.status === 'failed') && (
                      <button type="button" onClick={() => act.mutate({ id: i.id, action: 'provision' })}>
                        {i.status === 'stopped' ? `Start ${i.name}` : `Retry ${i.name}`}
                      </button>
                    )}
                    {i.status === 'running' && (
                      <button type="button" onClick={() => act.mutate({ id: i.id, action: 'suspend' })}>
                        Suspend {i.name}
                      </button>
                    )}
                    {i.status !== 'destroying' && (
                      <button
                        type="button"
                        className="danger"
                        onClick={() => {
                          if (window.confirm(`Delete ${i.name}? Its workspace is archived, its vault deleted.`))
                            act.mutate({ id: i.id, action: 'delete' })
                        }}
                      >
                        Delete {i.name}
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {interns.hasNextPage && (
        <button type="button" onClick={() => interns.fetchNextPage()} disabled={interns.isFetchingNextPage}>
          More interns
        </button>
      )}
    </section>
  )
}

function CreateIntern({ onCreated }: { onCreated: () => void }) {
  const [name, setName] = useState('')
  const [instructions, setInstructions] = useState('')
  const create = useMutation({
    mutationFn: () =>
      api<Intern>('interns', {
        method: 'POST',
        body: JSON.stringify({ name, provision: true, ...(instructions ? { instructions } : {}) }),
      }),
    onSuccess: () => {
      setName('')
      setInstructions('')
      onCreated()
    },
  })
  const submit = (e: FormEvent) => {
    e.preventDefault()
    create.mutate()
  }
  return (
    <form className="create" onSubmit={submit} aria-label="New intern">
      <label htmlFor="new-name">Name</label>
      <input id="new-name" value={name} onChange={(e) => setName(e.target.value)} required maxLength={17} />
      <label htmlFor="new-instructions">Instructions</label>
      <textarea id="new-instructions" value={instructions} onChange={(e) => setInstructions(e.target.value)} />
      <button type="submit" disabled={create.isPending}>
        Create and start
      </button>
      {create.isError && <p role="alert">{create.error.message}</p>}
    </form>
  )
}
