import { useState, type FormEvent } from 'react'
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { api, ApiError, type Intern, type Session } from './api'

// The console's shell: sign in with an API key (exchanged for a session cookie, then forgotten),
// the interns the key can see, and signing out. Every text from the server is rendered as text.

export function App() {
  const session = useQuery({
    queryKey: ['session'],
    queryFn: () => api<Session>('console/session'),
    retry: false,
  })
  if (session.isPending) return <main aria-busy="true" />
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
  const interns = useQuery({
    queryKey: ['interns'],
    queryFn: () => api<{ data: Intern[] }>('interns'),
  })
  if (interns.isPending) return <p aria-busy="true">Loading interns…</p>
  if (interns.isError) return <p role="alert">{interns.error.message}</p>
  return (
    <section aria-labelledby="interns-title">
      <h2 id="interns-title">Interns</h2>
      {interns.data.data.length === 0 ? (
        <p>No interns yet.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Status</th>
              <th scope="col">Last failure</th>
            </tr>
          </thead>
          <tbody>
            {interns.data.data.map((i) => (
              <tr key={i.id}>
                <td>{i.name}</td>
                <td>{i.status}</td>
                <td>{i.last_failure_message ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  )
}
