import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { api } from '../api'
import { Listed } from '../listed'
import type { FleetView } from '@roster/protocol'

/** How often the page reads the fleet again: never more often than every 5 s. */
const REFRESH_MS = 5_000

const when = (iso: string | null) => (iso ? new Date(iso).toLocaleString() : 'never')

// The operators' page (signed in with OPERATOR_TOKEN): the runtime hosts with their state, interns
// and free room, each live one drainable; the queues' depths, linking to the queue dashboard; and the
// observability destinations failing across every account. One read, again every 5 s.
export function Fleet() {
  const client = useQueryClient()
  const fleet = useQuery({
    queryKey: ['fleet'],
    queryFn: () => api<FleetView>('operator/fleet'),
    refetchInterval: REFRESH_MS,
  })
  const drain = useMutation({
    mutationFn: (id: string) =>
      api<{ host: string; state: string }>(`operator/runtime-hosts/${encodeURIComponent(id)}/drain`, {
        method: 'POST',
      }),
    onSettled: () => client.invalidateQueries({ queryKey: ['fleet'] }),
  })
  /** One list of the read, as Listed shows a list (absent while loading, or for queues Redis did not give). */
  const part = <T,>(pick: (f: FleetView) => T[] | null) => {
    const items = fleet.data && pick(fleet.data)
    return { data: items ? { data: items } : undefined, isError: fleet.isError, error: fleet.error }
  }
  const queues = fleet.data?.queues
  return (
    <section aria-labelledby="fleet-title">
      <h1 id="fleet-title">Fleet</h1>
      {drain.isError && <p role="alert">{drain.error.message}</p>}
      {drain.isSuccess && <p role="status">{drain.data.host} is draining: its interns move to the other hosts.</p>}
      <Listed
        title="Runtime hosts"
        query={part((f) => f.hosts)}
        empty="No runtime host has joined the fleet: start one (npm start runs one; docs/fleet.md)."
        head={['Host', 'State', 'Interns', 'Free room', 'Last heartbeat', '']}
        row={(h) => [
          <>
            {h.id}
            <br />
            <code>{h.address}</code>
          </>,
          <span className={h.state === 'dead' ? 'failing' : undefined}>{h.state}</span>,
          `${h.interns} of ${h.capacity}`,
          String(h.free),
          when(h.last_heartbeat_at),
          h.state === 'live' ? (
            <button
              type="button"
              disabled={drain.isPending}
              onClick={() => {
                if (window.confirm(`Drain ${h.id}? It takes no new interns, and its interns move to the other hosts.`))
                  drain.mutate(h.id)
              }}
            >
              Drain {h.id}
            </button>
          ) : null,
        ]}
      />
      {fleet.data && queues === null ? (
        <>
          <h2>Queues</h2>
          <p role="alert">The queues could not be read (is Redis up?).</p>
        </>
      ) : (
        <Listed
          title="Queues"
          query={part((f) => f.queues)}
          empty="No queues."
          head={['Queue', 'Waiting', 'Active', 'Delayed', 'Failed', 'Completed']}
          row={(q) => [
            q.name,
            String(q.jobs.waiting + q.jobs.prioritized),
            String(q.jobs.active),
            String(q.jobs.delayed),
            <span className={q.jobs.failed ? 'failing' : undefined}>{q.jobs.failed}</span>,
            String(q.jobs.completed),
          ]}
        />
      )}
      {fleet.data?.dashboard_url && (
        <p>
          Each job, with retry and clean: <a href={fleet.data.dashboard_url}>the queue dashboard</a>.
        </p>
      )}
      <Listed
        title="Failing observability destinations"
        query={part((f) => f.failing_destinations)}
        empty="No destination is failing."
        head={['Destination', 'Account', 'Failures in a row', 'Last error', 'Last delivered']}
        row={(d) => [
          `${d.name ?? d.id} (${d.type}${d.enabled ? '' : ', disabled'})`,
          <code>{d.account_id}</code>,
          <span className="failing">{d.failures}</span>,
          d.last_error ?? '',
          when(d.last_delivered_at),
        ]}
      />
    </section>
  )
}
