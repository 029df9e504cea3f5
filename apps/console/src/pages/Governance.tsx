import { useQuery } from '@tanstack/react-query'
import { api } from '../api'
import { href } from '../router'
import { Listed } from '../listed'

interface Workspace {
  id: string
  name: string
  slug: string
  default_text_model: string | null
}
interface Guardrail {
  id: string
  name: string
  workspace_id: string | null
  limit_usd: number | null
  reset_interval: string | null
  allowed_models: string[] | null
}
interface ProviderKey {
  id: string
  provider: string
  name: string | null
  label: string
  disabled: boolean
}
interface Destination {
  id: string
  name: string
  type: string
  enabled: boolean
  delivery: { failures: number; last_error: string | null; last_delivered_at: string | null }
}

const money = (usd: number | null, interval: string | null) =>
  usd === null ? 'none' : `$${usd}${interval ? ` ${interval}` : ''}`

// Governance, for a management key: the account's workspaces (each opening its members and
// budgets), its guardrails, its provider keys (masked: the API never returns a value) and its
// observability destinations with how their deliveries go. Four reads, each a list.
export function Governance() {
  const workspaces = useQuery({ queryKey: ['workspaces'], queryFn: () => api<{ data: Workspace[] }>('workspaces') })
  const guardrails = useQuery({ queryKey: ['guardrails'], queryFn: () => api<{ data: Guardrail[] }>('guardrails') })
  const byok = useQuery({ queryKey: ['byok'], queryFn: () => api<{ data: ProviderKey[] }>('byok') })
  const destinations = useQuery({
    queryKey: ['destinations'],
    queryFn: () => api<{ data: Destination[] }>('observability/destinations'),
  })
  const names = new Map((workspaces.data?.data ?? []).map((w) => [w.id, w.name]))
  return (
    <section aria-labelledby="governance-title">
      <h1 id="governance-title">Governance</h1>
      <p>
        Check a request against the guardrails with the <a href={href(['dry-run'])}>dry run</a>.
      </p>
      <Listed
        title="Workspaces"
        query={workspaces}
        empty="No workspaces."
        head={['Name', 'Slug', 'Default model']}
        row={(w) => [
          <a href={href(['governance', 'workspaces', w.id])}>{w.name}</a>,
          w.slug,
          w.default_text_model ?? 'none',
        ]}
      />
      <Listed
        title="Guardrails"
        query={guardrails}
        empty="No guardrails."
        head={['Name', 'Workspace', 'Limit', 'Models allowed']}
        row={(g) => [
          g.name,
          g.workspace_id ? (names.get(g.workspace_id) ?? g.workspace_id) : 'the account',
          money(g.limit_usd, g.reset_interval),
          g.allowed_models?.join(', ') ?? 'any',
        ]}
      />
      <Listed
        title="Provider keys"
        query={byok}
        empty="No provider keys: calls are paid with the account's credits."
        head={['Provider', 'Name', 'Key', 'State']}
        row={(k) => [k.provider, k.name ?? '', <code>{k.label}</code>, k.disabled ? 'disabled' : 'in use']}
      />
      <Listed
        title="Observability destinations"
        query={destinations}
        empty="No destinations."
        head={['Name', 'Type', 'Deliveries']}
        row={(d) => [
          d.name,
          d.type,
          !d.enabled ? (
            'disabled'
          ) : d.delivery.failures > 0 ? (
            <span className="failing">
              failing ({d.delivery.failures} in a row): {d.delivery.last_error}
            </span>
          ) : d.delivery.last_delivered_at ? (
            `healthy, last ${new Date(d.delivery.last_delivered_at).toLocaleString()}`
          ) : (
            'healthy, nothing sent yet'
          ),
        ]}
      />
    </section>
  )
}

interface Member {
  user_id: string
  role: string
  created_at: string
}
interface Budget {
  limit_usd: number
  reset_interval: string | null
}

/** A workspace: its members and its budgets. */
export function WorkspacePage({ id }: { id: string }) {
  const members = useQuery({
    queryKey: ['members', id],
    queryFn: () => api<{ data: Member[] }>(`workspaces/${id}/members`),
  })
  const budgets = useQuery({
    queryKey: ['budgets', id],
    queryFn: () => api<{ data: Budget[] }>(`workspaces/${id}/budgets`),
  })
  return (
    <section aria-labelledby="workspace-title">
      <p>
        <a href={href(['governance'])}>Governance</a>
      </p>
      <h1 id="workspace-title">Workspace</h1>
      <Listed
        title="Budgets"
        query={budgets}
        empty="No budgets: the workspace spends without a cap."
        head={['Limit', 'Resets']}
        row={(b) => [`$${b.limit_usd}`, b.reset_interval ?? 'never']}
      />
      <Listed
        title="Members"
        query={members}
        empty="No members."
        head={['Member', 'Role', 'Since']}
        row={(m) => [<code>{m.user_id}</code>, m.role, new Date(m.created_at).toLocaleDateString()]}
      />
    </section>
  )
}
