import { useEffect, useMemo, useRef, useState, type FormEvent } from 'react'
import { TableScroll } from '../listed'
import { useWindowVirtualizer } from '@tanstack/react-virtual'
import { useInfiniteQuery, useMutation, useQuery, useQueryClient, type InfiniteData } from '@tanstack/react-query'
import { api, apiBase, type Intern } from '../api'
import { href, useTypedFilter, type Route } from '../router'

type Page = { data: Intern[]; has_more: boolean; next_cursor?: string }

/** At most this many rows are followed live (the API's limit for one stream). */
const FOLLOWED = 100

// The member's interns: searched on the server by name, newest first in pages of 50, each row's
// status and provisioning step streamed (one event stream for the rows shown), not polled.
export function Interns({ route }: { route: Route }) {
  const client = useQueryClient()
  const { value: q, typed, setTyped } = useTypedFilter(route, 'q')

  const key = ['interns', q]
  const interns = useInfiniteQuery({
    queryKey: key,
    queryFn: ({ pageParam }) => {
      const params = new URLSearchParams({ limit: '50' })
      if (q) params.set('q', q)
      if (pageParam) params.set('starting_after', pageParam)
      return api<Page>(`interns?${params}`)
    },
    initialPageParam: '',
    getNextPageParam: (last) => last.next_cursor,
    // Statuses stream; this only finds interns created elsewhere (on the first page alone: a
    // refetch of a long list would read every page it holds again).
    refetchInterval: (query) => ((query.state.data?.pages.length ?? 0) <= 1 ? 30_000 : false),
  })
  const rows = useMemo(() => interns.data?.pages.flatMap((p) => p.data) ?? [], [interns.data])
  // The rows on screen are followed (a list of thousands is never streamed whole).
  const [shown, setShown] = useState<[number, number]>([0, FOLLOWED])
  const followed = rows
    .slice(shown[0], Math.min(shown[1], shown[0] + FOLLOWED))
    .map((r) => r.id)
    .join(',')
  useInternStream(followed, (changed) =>
    client.setQueryData<InfiniteData<Page>>(key, (data) => data && replaceRow(data, changed)),
  )

  const changed = () => client.invalidateQueries({ queryKey: ['interns'] })
  const act = useInternAction(changed)
  return (
    <section aria-labelledby="interns-title">
      <h1 id="interns-title">Interns</h1>
      <CreateIntern onCreated={changed} />
      <label className="search">
        Search by name <input type="search" value={typed} onChange={(e) => setTyped(e.target.value)} maxLength={100} />
      </label>
      {act.isError && <p role="alert">{act.error.message}</p>}
      {interns.isPending ? (
        <p aria-busy="true">Loading interns…</p>
      ) : interns.isError ? (
        <p role="alert">{interns.error.message}</p>
      ) : rows.length === 0 ? (
        <p>
          {q
            ? `No intern’s name holds “${q}”.`
            : 'No interns yet: create one above; it is ready to chat once it is running.'}
        </p>
      ) : (
        <InternRows
          rows={rows}
          act={act.mutate}
          onShown={setShown}
          nearEnd={() => interns.hasNextPage && !interns.isFetchingNextPage && void interns.fetchNextPage()}
        />
      )}
      {interns.hasNextPage && (
        <button type="button" onClick={() => interns.fetchNextPage()} disabled={interns.isFetchingNextPage}>
          More interns
        </button>
      )}
    </section>
  )
}

/**
 * The rows as a table that renders only those near the screen (a list of 10,000 scrolls as one of
 * 50 does); nearing its end asks for the next page.
 */
function InternRows({
  rows,
  act,
  onShown,
  nearEnd,
}: {
  rows: Intern[]
  act: (a: { id: string; action: Action }) => void
  onShown: (range: [number, number]) => void
  nearEnd: () => void
}) {
  const body = useRef<HTMLTableSectionElement>(null)
  const list = useWindowVirtualizer({
    count: rows.length,
    estimateSize: () => 48,
    overscan: 10,
    scrollMargin: body.current?.offsetTop ?? 0,
  })
  const items = list.getVirtualItems()
  const first = items[0]?.index ?? 0
  const last = items.at(-1)?.index ?? 0
  useEffect(() => onShown([first, last + 1]), [first, last, onShown])
  const more = useRef(nearEnd)
  more.current = nearEnd
  useEffect(() => {
    if (last >= rows.length - 20) more.current()
  }, [last, rows.length])
  const before = items.length ? items[0]!.start - list.options.scrollMargin : 0
  const after = items.length ? list.getTotalSize() - items.at(-1)!.end : 0
  return (
    <TableScroll label="Interns">
      <table>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Status</th>
            <th scope="col">Last failure</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody ref={body}>
          {before > 0 && <tr aria-hidden="true" style={{ height: before }} />}
          {items.map((v) => {
            const i = rows[v.index]!
            return (
              <tr key={i.id} data-index={v.index} ref={list.measureElement}>
                <td>
                  <a href={href(['interns', i.id])}>{i.name}</a>
                </td>
                <td>
                  <Status intern={i} />
                </td>
                <td>{i.last_failure_message ?? ''}</td>
                <td className="actions">
                  <InternActions intern={i} act={act} />
                </td>
              </tr>
            )
          })}
          {after > 0 && <tr aria-hidden="true" style={{ height: after }} />}
        </tbody>
      </table>
    </TableScroll>
  )
}

export function Status({ intern }: { intern: Intern }) {
  const p = intern.progress
  return (
    <span className={`status status-${intern.status}`}>
      {intern.status}
      {p && intern.status === 'provisioning' && ` (step ${p.step_number} of ${p.total_steps}: ${p.step_label})`}
    </span>
  )
}

function replaceRow(data: InfiniteData<Page>, changed: Intern | { id: string; deleted: true }): InfiniteData<Page> {
  return {
    ...data,
    pages: data.pages.map((p) => ({
      ...p,
      data:
        'deleted' in changed
          ? p.data.filter((r) => r.id !== changed.id)
          : p.data.map((r) => (r.id === changed.id ? { ...r, ...changed } : r)),
    })),
  }
}

/** Follows the interns `ids` (comma-separated) on one event stream while they are shown. */
export function useInternStream(
  ids: string,
  onChange: (i: Intern | { id: string; deleted: true }) => void,
  /** The stream was refused (it is not tried again). */
  onRefused?: () => void,
) {
  // The stream follows the ids; the latest callback is used without opening it again.
  const latest = useRef(onChange)
  latest.current = onChange
  const onRefusedRef = useRef(onRefused)
  onRefusedRef.current = onRefused
  useEffect(() => {
    if (!ids) return
    const source = new EventSource(new URL(`interns/events?ids=${ids}`, apiBase), { withCredentials: true })
    source.addEventListener('intern', (e) => latest.current(JSON.parse((e as MessageEvent<string>).data) as Intern))
    source.addEventListener('deleted', (e) =>
      latest.current({ ...(JSON.parse((e as MessageEvent<string>).data) as { id: string }), deleted: true }),
    )
    // A stream that drops is reconnected by the browser; one refused outright is closed.
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) onRefusedRef.current?.()
    }
    return () => source.close()
  }, [ids])
}

type Action = 'provision' | 'suspend' | 'delete'

export function useInternAction(settled: () => void) {
  return useMutation({
    mutationFn: ({ id, action }: { id: string; action: Action }) =>
      action === 'delete'
        ? api<unknown>(`interns/${id}`, { method: 'DELETE', body: '{}' })
        : api<unknown>(`interns/${id}/${action}`, { method: 'POST', body: '{}' }),
    onSettled: settled,
  })
}

export function InternActions({
  intern: i,
  act,
}: {
  intern: Intern
  act: (a: { id: string; action: Action }) => void
}) {
  return (
    <>
      {(i.status === 'stopped' || i.status === 'failed') && (
        <button type="button" onClick={() => act({ id: i.id, action: 'provision' })}>
          {i.status === 'stopped' ? `Start ${i.name}` : `Retry ${i.name}`}
        </button>
      )}
      {i.status === 'running' && (
        <>
          <a className="button" href={href(['interns', i.id, 'chat'])}>
            Chat with {i.name}
          </a>
          <button type="button" onClick={() => act({ id: i.id, action: 'suspend' })}>
            Suspend {i.name}
          </button>
        </>
      )}
      {i.status !== 'destroying' && (
        <button
          type="button"
          className="danger"
          onClick={() => {
            if (window.confirm(`Delete ${i.name}? Its workspace is archived, its vault deleted.`))
              act({ id: i.id, action: 'delete' })
          }}
        >
          Delete {i.name}
        </button>
      )}
    </>
  )
}

function CreateIntern({ onCreated }: { onCreated: () => void }) {
  const [name, setName] = useState('')
  const [instructions, setInstructions] = useState('')
  const [model, setModel] = useState('')
  // The models served, offered as the field's choices and checked before anything is created.
  const served = useQuery({
    queryKey: ['models'],
    queryFn: () => api<{ data: { id: string }[] }>('models'),
    staleTime: 60_000,
  })
  // The model is set before provisioning starts (create, then the model, then provision), so the
  // first boot already runs it. The create succeeds whole or fails whole: a model not served is
  // refused before the intern is made, and an intern whose model was then refused is removed.
  const create = useMutation({
    mutationFn: async () => {
      if (model) {
        const ids = (served.data ?? (await api<{ data: { id: string }[] }>('models'))).data.map((m) => m.id)
        if (!ids.includes(model) && !ids.includes(model.replace(/:[^:/]*$/, '')))
          throw new Error(
            `${model} is not a model served here; choose one of: ${ids.slice(0, 12).join(', ')}${ids.length > 12 ? ', …' : ''}`,
          )
      }
      const intern = await api<Intern>('interns', {
        method: 'POST',
        body: JSON.stringify({ name, provision: !model, ...(instructions ? { instructions } : {}) }),
      })
      if (model) {
        try {
          await api<Intern>(`interns/${intern.id}`, { method: 'PATCH', body: JSON.stringify({ model }) })
        } catch (err) {
          await api<unknown>(`interns/${intern.id}`, { method: 'DELETE', body: '{}' }).catch(() => undefined)
          throw err
        }
        await api<unknown>(`interns/${intern.id}/provision`, { method: 'POST', body: '{}' })
      }
      return intern
    },
    onSuccess: () => {
      setName('')
      setInstructions('')
      setModel('')
    },
    onSettled: onCreated,
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
      <label htmlFor="new-model">Model</label>
      <input
        id="new-model"
        value={model}
        onChange={(e) => setModel(e.target.value)}
        placeholder="the default for interns"
        maxLength={256}
        list="served-models"
      />
      <datalist id="served-models">
        {served.data?.data.map((m) => (
          <option key={m.id} value={m.id} />
        ))}
      </datalist>
      <button type="submit" disabled={create.isPending}>
        Create and start
      </button>
      {create.isError && <p role="alert">{create.error.message}</p>}
    </form>
  )
}
