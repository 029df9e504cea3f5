import { useState } from 'react'
import { TableScroll } from '../listed'
import { useQuery, useQueryClient } from '@tanstack/react-query'
import { api, type Intern as InternT, type Session } from '../api'
import { href } from '../router'
import { InternActions, Status, useInternAction, useInternStream } from './Interns'
import { InternWork } from './InternWork'

interface SessionSummary {
  id: string
  title: string
  items: number
  updated_at: string
}
interface Secret {
  name: string
  hosts: string[] | null
  scope: string
}

// One intern: what it is (live), its sessions (each opens in the chat), its standing work
// (schedules, webhook triggers, the turns they fired), and the names of the vault secrets its
// requests receive with the hosts each is bound to (values never leave the vault).
export function Intern({ id }: { id: string }) {
  const client = useQueryClient()
  // The intern itself comes from its event stream (its first event is the intern as it is); only
  // a stream that could not open is asked again over GET, for the reason.
  const [live, setLive] = useState<InternT | 'deleted'>()
  const [streamFailed, setStreamFailed] = useState(false)
  useInternStream(
    id,
    (changed) => setLive('deleted' in changed ? 'deleted' : changed),
    () => setStreamFailed(true),
  )
  const why = useQuery({
    queryKey: ['intern', id],
    queryFn: () => api<InternT>(`interns/${id}`),
    enabled: streamFailed && live === undefined,
  })
  const sessions = useQuery({
    queryKey: ['sessions', id],
    queryFn: () => api<{ data: SessionSummary[] }>(`interns/${id}/sessions`),
  })
  const secrets = useQuery({
    queryKey: ['secrets', id],
    queryFn: () => api<{ data: Secret[] }>(`vault/interns/${id}/effective-secrets`),
  })
  const act = useInternAction(() => client.invalidateQueries({ queryKey: ['sessions', id] }))
  if (live === 'deleted') return <p role="status">This intern was deleted.</p>
  if (live === undefined) {
    if (why.isError) return <p role="alert">{why.error.message}</p>
    return <p aria-busy="true">Loading the intern…</p>
  }
  const i = live
  return (
    <section aria-labelledby="intern-title">
      <p>
        <a href={href(['interns'])}>Interns</a>
      </p>
      <h1 id="intern-title">{i.name}</h1>
      <dl className="facts">
        <dt>Status</dt>
        <dd>
          <Status intern={i} />
        </dd>
        {i.last_failure_message && (
          <>
            <dt>Last failure</dt>
            <dd>{i.last_failure_message}</dd>
          </>
        )}
        <dt>Model</dt>
        <dd>{i.model ?? <DefaultModel />}</dd>
        <dt>Hostname</dt>
        <dd>{i.hostname ?? 'none yet'}</dd>
        <dt>Created</dt>
        <dd>{new Date(i.created_at).toLocaleString()}</dd>
        {i.instructions && (
          <>
            <dt>Instructions</dt>
            <dd className="pre">{i.instructions}</dd>
          </>
        )}
      </dl>
      <div className="actions">
        <InternActions intern={i} act={act.mutate} />
      </div>
      {act.isError && <p role="alert">{act.error.message}</p>}

      <h2>Sessions</h2>
      {sessions.isError ? (
        <p role="alert">{sessions.error.message}</p>
      ) : !sessions.data ? (
        <p aria-busy="true">Loading sessions…</p>
      ) : sessions.data.data.length === 0 ? (
        <p>No sessions yet: open the chat to start one.</p>
      ) : (
        <ul className="sessions">
          {sessions.data.data.map((s) => (
            <li key={s.id}>
              <a href={href(['interns', id, 'chat'], { session: s.id })}>{s.title || s.id}</a>{' '}
              <span className="muted">
                {s.items} items · {new Date(s.updated_at).toLocaleString()}
              </span>
            </li>
          ))}
        </ul>
      )}

      <InternWork id={id} />

      <h2>Vault secrets</h2>
      {secrets.isError ? (
        <p role="alert">{secrets.error.message}</p>
      ) : !secrets.data ? (
        <p aria-busy="true">Loading secrets…</p>
      ) : secrets.data.data.length === 0 ? (
        <p>
          No secrets reach this intern: store one in its vault (PUT /vault/interns/{'{id}'}/secrets/{'{name}'},
          docs/vault.md).
        </p>
      ) : (
        <TableScroll label="Secrets">
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Bound hosts</th>
                <th scope="col">From</th>
              </tr>
            </thead>
            <tbody>
              {secrets.data.data.map((s) => (
                <tr key={s.name}>
                  <td>{s.name}</td>
                  <td>{s.hosts?.join(', ') ?? 'none (store it again to bind hosts)'}</td>
                  <td>{s.scope}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableScroll>
      )}
    </section>
  )
}

/** What an intern without a model of its own runs: the server's default for interns (the session names it). */
function DefaultModel() {
  const session = useQueryClient().getQueryData<Session>(['session'])
  const model = session?.intern_default_model
  return <>{model ? `${model} (the default for interns)` : 'none: this server serves no model'}</>
}
