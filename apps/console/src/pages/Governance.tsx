import { useState, type FormEvent } from 'react'
import { useQuery } from '@tanstack/react-query'
import { api } from '../api'
import { body, useChanges, type Change } from '../changes'
import { href } from '../router'
import { Listed } from '../listed'
import { Choose, memberName, membersOutside, modelList, ResetOptions, useMembers, type Member } from '../choices'

interface Workspace {
  id: string
  name: string
  slug: string
  is_default?: boolean
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

// Governance (a management key, or an admin signed in as themselves): the account's members,
// workspaces (each opening its members and budgets), guardrails, provider keys (masked: the API
// never returns a value) and observability destinations, each made, changed and removed here
// through the same API any client uses, each change in the audit log. Destructive changes ask
// first; what can be put back offers an Undo.
export function Governance() {
  const workspaces = useQuery({ queryKey: ['workspaces'], queryFn: () => api<{ data: Workspace[] }>('workspaces') })
  const names = new Map((workspaces.data?.data ?? []).map((w) => [w.id, w.name]))
  return (
    <section aria-labelledby="governance-title">
      <h1 id="governance-title">Governance</h1>
      <p>
        Every change here is in the <a href={href(['audit'])}>audit log</a>. Check a request against the guardrails with
        the <a href={href(['dry-run'])}>dry run</a>.
      </p>
      <ModelChoices />
      <Members />
      <Workspaces workspaces={workspaces} />
      <Guardrails names={names} />
      <ProviderKeys />
      <Destinations />
    </section>
  )
}

function Members() {
  const members = useMembers()
  const { run, line, busy } = useChanges([['org-members']])
  const [email, setEmail] = useState('')
  const [role, setRole] = useState<Member['role']>('org:member')
  const patch = (m: Member, change: Partial<Pick<Member, 'role' | 'disabled'>>) =>
    api(`organization/members/${m.id}`, { method: 'PATCH', body: body(change) })
  const add = async (e: FormEvent) => {
    e.preventDefault()
    const ok = await run({
      done: `${email} added: they sign in with single sign-on as this e-mail.`,
      act: () => api('organization/members', { method: 'POST', body: body({ email, role }) }),
    })
    if (ok) setEmail('')
  }
  return (
    <>
      <h2>Members</h2>
      <form className="filters" onSubmit={add} aria-label="Add a member">
        <label>
          E-mail{' '}
          <input type="email" value={email} onChange={(e) => setEmail(e.target.value)} required maxLength={254} />
        </label>
        <label>
          Role{' '}
          <select value={role} onChange={(e) => setRole(e.target.value as Member['role'])}>
            <option value="org:member">member</option>
            <option value="org:admin">admin</option>
          </select>
        </label>
        <button type="submit" disabled={busy}>
          Add member
        </button>
      </form>
      {line}
      <Listed
        title=""
        label="Members"
        query={members}
        empty="No members yet: add one by e-mail."
        head={['Member', 'E-mail', 'Role', 'State', 'Actions']}
        row={(m) => [
          memberName(m),
          m.email,
          <select
            aria-label={`Role of ${memberName(m)}`}
            value={m.role}
            disabled={busy}
            onChange={(e) => {
              const next = e.target.value as Member['role']
              void run({
                done: `${memberName(m)} is now ${next === 'org:admin' ? 'an admin' : 'a member'}.`,
                act: () => patch(m, { role: next }),
                undo: () => patch(m, { role: m.role }),
              })
            }}
          >
            <option value="org:member">member</option>
            <option value="org:admin">admin</option>
          </select>,
          m.disabled ? 'disabled' : 'active',
          <button
            type="button"
            className={m.disabled ? undefined : 'danger'}
            disabled={busy}
            onClick={() =>
              void run(
                m.disabled
                  ? {
                      done: `${memberName(m)} enabled.`,
                      act: () => patch(m, { disabled: false }),
                      undo: () => patch(m, { disabled: true }),
                    }
                  : {
                      confirm: `Disable ${memberName(m)}? They are signed out and cannot sign in until enabled again.`,
                      done: `${memberName(m)} disabled and signed out.`,
                      act: () => patch(m, { disabled: true }),
                      undo: () => patch(m, { disabled: false }),
                    },
              )
            }
          >
            {m.disabled ? `Enable ${memberName(m)}` : `Disable ${memberName(m)}`}
          </button>,
        ]}
      />
    </>
  )
}

function Workspaces({
  workspaces,
}: {
  workspaces: { data?: { data: Workspace[] }; isError: boolean; error: Error | null }
}) {
  const { run, line, busy } = useChanges([['workspaces']])
  const [name, setName] = useState('')
  const slug = name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 64)
  const create = async (e: FormEvent) => {
    e.preventDefault()
    if (
      await run({
        done: `Workspace ${name} made.`,
        act: () => api('workspaces', { method: 'POST', body: body({ name, slug }) }),
      })
    )
      setName('')
  }
  return (
    <>
      <h2>Workspaces</h2>
      <form className="filters" onSubmit={create} aria-label="Make a workspace">
        <label>
          Name <input value={name} onChange={(e) => setName(e.target.value)} required maxLength={200} />
        </label>
        <span className="muted">{slug ? `slug ${slug}` : ''}</span>
        <button type="submit" disabled={busy || !slug}>
          Make workspace
        </button>
      </form>
      {line}
      <Listed
        title=""
        label="Workspaces"
        query={workspaces}
        empty="No workspaces: make one above."
        head={['Name', 'Slug', 'Default model', 'Actions']}
        row={(w) => [
          <a href={href(['governance', 'workspaces', w.id])}>{w.name}</a>,
          w.slug,
          w.default_text_model ?? 'none',
          <span className="actions">
            <Edit
              what={w.name}
              fields={[
                { name: 'name', label: 'Name', value: w.name, required: true },
                {
                  name: 'default_text_model',
                  label: 'Default model',
                  value: w.default_text_model ?? '',
                  list: 'gov-models',
                },
              ]}
              save={(v) => {
                const change = { name: v.name, default_text_model: v.default_text_model || null }
                const back = { name: w.name, default_text_model: w.default_text_model }
                return run({
                  done: `Workspace ${v.name} saved.`,
                  act: () => api(`workspaces/${w.id}`, { method: 'PATCH', body: body(change) }),
                  undo: () => api(`workspaces/${w.id}`, { method: 'PATCH', body: body(back) }),
                })
              }}
              busy={busy}
            />
            <button
              type="button"
              className="danger"
              disabled={busy}
              onClick={() =>
                void run({
                  confirm: `Delete the workspace ${w.name}? Its interns, budgets and guardrails go with it; this cannot be undone.`,
                  done: `Workspace ${w.name} deleted.`,
                  act: () => api(`workspaces/${w.id}`, { method: 'DELETE' }),
                })
              }
            >
              Delete {w.name}
            </button>
          </span>,
        ]}
      />
    </>
  )
}

function Guardrails({ names }: { names: Map<string, string> }) {
  const guardrails = useQuery({ queryKey: ['guardrails'], queryFn: () => api<{ data: Guardrail[] }>('guardrails') })
  const { run, line, busy } = useChanges([['guardrails']])
  const [form, setForm] = useState({ name: '', limit: '', reset: '', models: '' })
  const create = async (e: FormEvent) => {
    e.preventDefault()
    const models = modelList(form.models)
    const ok = await run({
      done: `Guardrail ${form.name} made: assign it to keys or members for it to apply.`,
      act: () =>
        api('guardrails', {
          method: 'POST',
          body: body({
            name: form.name,
            ...(form.limit ? { limit_usd: Number(form.limit), reset_interval: form.reset || null } : {}),
            ...(models.length ? { allowed_models: models } : {}),
          }),
        }),
    })
    if (ok) setForm({ name: '', limit: '', reset: '', models: '' })
  }
  return (
    <>
      <h2>Guardrails</h2>
      <form className="filters" onSubmit={create} aria-label="Make a guardrail">
        <label>
          Name{' '}
          <input
            value={form.name}
            onChange={(e) => setForm({ ...form, name: e.target.value })}
            required
            maxLength={200}
          />
        </label>
        <label>
          Spend limit (USD){' '}
          <input
            type="number"
            min="0.000001"
            step="any"
            value={form.limit}
            onChange={(e) => setForm({ ...form, limit: e.target.value })}
          />
        </label>
        <label>
          Resets{' '}
          <select value={form.reset} onChange={(e) => setForm({ ...form, reset: e.target.value })}>
            <ResetOptions />
          </select>
        </label>
        <label>
          Models allowed (comma-separated; empty: any){' '}
          <input value={form.models} onChange={(e) => setForm({ ...form, models: e.target.value })} maxLength={4000} />
        </label>
        <button type="submit" disabled={busy}>
          Make guardrail
        </button>
      </form>
      {line}
      <Listed
        title=""
        label="Guardrails"
        query={guardrails}
        empty="No guardrails: every key may use every model and provider, within its own limit."
        head={['Name', 'Workspace', 'Limit', 'Models allowed', 'Actions']}
        row={(g) => [
          g.name,
          g.workspace_id ? (names.get(g.workspace_id) ?? g.workspace_id) : 'the account',
          money(g.limit_usd, g.reset_interval),
          g.allowed_models?.join(', ') ?? 'any',
          <span className="actions">
            <GuardrailDetail guardrail={g} run={run} busy={busy} />
            <button
              type="button"
              className="danger"
              disabled={busy}
              onClick={() =>
                void run({
                  confirm: `Delete the guardrail ${g.name}? The keys and members it applies to are no longer bound by it.`,
                  done: `Guardrail ${g.name} deleted.`,
                  act: () => api(`guardrails/${g.id}`, { method: 'DELETE' }),
                })
              }
            >
              Delete {g.name}
            </button>
          </span>,
        ]}
      />
    </>
  )
}

function ProviderKeys() {
  const byok = useQuery({ queryKey: ['byok'], queryFn: () => api<{ data: ProviderKey[] }>('byok') })
  const providers = useQuery({
    queryKey: ['providers'],
    queryFn: () => api<{ data: { slug: string; name: string }[] }>('providers'),
  })
  const { run, line, busy } = useChanges([['byok']])
  const [form, setForm] = useState({ provider: '', key: '', name: '' })
  const patch = (k: ProviderKey, disabled: boolean) =>
    api(`byok/${k.id}`, { method: 'PATCH', body: body({ disabled }) })
  const called = (k: ProviderKey) => k.name || `${k.provider} ${k.label}`
  const create = async (e: FormEvent) => {
    e.preventDefault()
    const sent = form
    // The secret leaves the page (its field, and so the DOM) as soon as it is sent, whatever comes back.
    setForm({ ...form, key: '' })
    const ok = await run({
      done: `Key for ${sent.provider} added: it is sealed, and never shown again.`,
      act: () =>
        api('byok', {
          method: 'POST',
          body: body({ provider: sent.provider, key: sent.key, ...(sent.name ? { name: sent.name } : {}) }),
        }),
    })
    if (ok) setForm({ provider: '', key: '', name: '' })
  }
  return (
    <>
      <h2>Provider keys</h2>
      <form className="filters" onSubmit={create} aria-label="Add a provider key">
        <label>
          Provider{' '}
          <select value={form.provider} onChange={(e) => setForm({ ...form, provider: e.target.value })} required>
            <option value="">choose…</option>
            {(providers.data?.data ?? []).map((p) => (
              <option key={p.slug} value={p.slug}>
                {p.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Key{' '}
          <input
            type="password"
            autoComplete="off"
            value={form.key}
            onChange={(e) => setForm({ ...form, key: e.target.value })}
            required
            maxLength={8192}
          />
        </label>
        <label>
          Name <input value={form.name} onChange={(e) => setForm({ ...form, name: e.target.value })} maxLength={200} />
        </label>
        <button type="submit" disabled={busy}>
          Add provider key
        </button>
      </form>
      {line}
      <Listed
        title=""
        label="Provider keys"
        query={byok}
        empty="No provider keys: calls are paid with the account's credits."
        head={['Provider', 'Name', 'Key', 'State', 'Actions']}
        row={(k) => [
          k.provider,
          k.name ?? '',
          <code>{k.label}</code>,
          k.disabled ? 'disabled' : 'in use',
          <span className="actions">
            <Edit
              what={called(k)}
              fields={[
                { name: 'name', label: 'Name', value: k.name ?? '' },
                { name: 'key', label: 'New key (rotate; empty: keep)', value: '', secret: true },
              ]}
              save={(v) =>
                run({
                  done: v.key ? `${called(k)} rotated: calls use the new key from now on.` : `${called(k)} saved.`,
                  act: () =>
                    api(`byok/${k.id}`, {
                      method: 'PATCH',
                      body: body({ name: v.name || null, ...(v.key ? { key: v.key } : {}) }),
                    }),
                })
              }
              busy={busy}
            />
            <button
              type="button"
              disabled={busy}
              className={k.disabled ? undefined : 'danger'}
              onClick={() =>
                void run({
                  done: `${called(k)} ${k.disabled ? 'enabled' : 'disabled'}.`,
                  act: () => patch(k, !k.disabled),
                  undo: () => patch(k, k.disabled),
                })
              }
            >
              {k.disabled ? `Enable ${called(k)}` : `Disable ${called(k)}`}
            </button>
            <button
              type="button"
              className="danger"
              disabled={busy}
              onClick={() =>
                void run({
                  confirm: `Delete ${called(k)}? Its value is gone for good (disable it instead to keep it).`,
                  done: `${called(k)} deleted.`,
                  act: () => api(`byok/${k.id}`, { method: 'DELETE' }),
                })
              }
            >
              Delete {called(k)}
            </button>
          </span>,
        ]}
      />
    </>
  )
}

function Destinations() {
  const destinations = useQuery({
    queryKey: ['destinations'],
    queryFn: () => api<{ data: Destination[] }>('observability/destinations'),
  })
  const { run, line, busy } = useChanges([['destinations']])
  const [form, setForm] = useState({ name: '', type: 'webhook', url: '', authorization: '' })
  const patch = (d: Destination, enabled: boolean) =>
    api(`observability/destinations/${d.id}`, { method: 'PATCH', body: body({ enabled }) })
  const create = async (e: FormEvent) => {
    e.preventDefault()
    const headers = form.authorization ? { authorization: form.authorization } : undefined
    const config =
      form.type === 'webhook'
        ? { url: form.url, ...(headers ? { headers } : {}) }
        : { endpoint: form.url, ...(headers ? { headers } : {}) }
    const sent = form
    // The authorization header's value leaves the page as soon as it is sent.
    setForm({ ...form, authorization: '' })
    const ok = await run({
      done: `Destination ${sent.name} added: generations are sent to it from now on.`,
      act: () =>
        api('observability/destinations', { method: 'POST', body: body({ name: sent.name, type: sent.type, config }) }),
    })
    if (ok) setForm({ name: '', type: 'webhook', url: '', authorization: '' })
  }
  return (
    <>
      <h2>Observability destinations</h2>
      <form className="filters" onSubmit={create} aria-label="Add a destination">
        <label>
          Name{' '}
          <input
            value={form.name}
            onChange={(e) => setForm({ ...form, name: e.target.value })}
            required
            maxLength={200}
          />
        </label>
        <label>
          Type{' '}
          <select value={form.type} onChange={(e) => setForm({ ...form, type: e.target.value })}>
            <option value="webhook">webhook</option>
            <option value="otel-collector">OpenTelemetry collector</option>
          </select>
        </label>
        <label>
          URL <input type="url" value={form.url} onChange={(e) => setForm({ ...form, url: e.target.value })} required />
        </label>
        <label>
          Authorization header{' '}
          <input
            type="password"
            autoComplete="off"
            value={form.authorization}
            onChange={(e) => setForm({ ...form, authorization: e.target.value })}
          />
        </label>
        <button type="submit" disabled={busy}>
          Add destination
        </button>
      </form>
      {line}
      <Listed
        title=""
        label="Observability destinations"
        query={destinations}
        empty="No destinations: generations are kept here only."
        head={['Name', 'Type', 'Deliveries', 'Actions']}
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
          <span className="actions">
            <Edit
              what={d.name}
              fields={[{ name: 'name', label: 'Name', value: d.name, required: true }]}
              save={(v) =>
                run({
                  done: `Destination ${v.name} saved.`,
                  act: () =>
                    api(`observability/destinations/${d.id}`, { method: 'PATCH', body: body({ name: v.name }) }),
                  undo: () =>
                    api(`observability/destinations/${d.id}`, { method: 'PATCH', body: body({ name: d.name }) }),
                })
              }
              busy={busy}
            />
            <button
              type="button"
              disabled={busy}
              className={d.enabled ? 'danger' : undefined}
              onClick={() =>
                void run({
                  done: `${d.name} ${d.enabled ? 'disabled' : 'enabled'}.`,
                  act: () => patch(d, !d.enabled),
                  undo: () => patch(d, d.enabled),
                })
              }
            >
              {d.enabled ? `Disable ${d.name}` : `Enable ${d.name}`}
            </button>
            <button
              type="button"
              className="danger"
              disabled={busy}
              onClick={() =>
                void run({
                  confirm: `Delete the destination ${d.name}? Nothing more is sent to it.`,
                  done: `Destination ${d.name} deleted.`,
                  act: () => api(`observability/destinations/${d.id}`, { method: 'DELETE' }),
                })
              }
            >
              Delete {d.name}
            </button>
          </span>,
        ]}
      />
    </>
  )
}

interface WorkspaceMember {
  user_id: string
  role: string
  created_at: string
}
interface Budget {
  limit_usd: number
  /** null: a lifetime budget. */
  reset_interval: string | null
}
const intervalOf = (b: Budget) => b.reset_interval ?? 'lifetime'

/** A workspace: its budgets and its members, each changed here. */
export function WorkspacePage({ id }: { id: string }) {
  const workspace = useQuery({
    queryKey: ['workspace', id],
    queryFn: () => api<{ data: Workspace }>(`workspaces/${id}`),
  })
  const members = useQuery({
    queryKey: ['members', id],
    queryFn: () => api<{ data: WorkspaceMember[] }>(`workspaces/${id}/members?limit=100`),
  })
  const budgets = useQuery({
    queryKey: ['budgets', id],
    queryFn: () => api<{ data: Budget[] }>(`workspaces/${id}/budgets`),
  })
  const everyone = useMembers()
  const { run, line, busy } = useChanges([
    ['budgets', id],
    ['members', id],
  ])
  const [budget, setBudget] = useState({ interval: 'monthly', limit: '' })
  const who = new Map((everyone.data?.data ?? []).map((m) => [m.id, m]))
  const putBudget = (interval: string, limit_usd: number) =>
    api(`workspaces/${id}/budgets/${interval}`, { method: 'PUT', body: body({ limit_usd }) })
  const setOne = async (e: FormEvent) => {
    e.preventDefault()
    const before = budgets.data?.data.find((b) => intervalOf(b) === budget.interval)
    const ok = await run({
      done: `The ${budget.interval} budget is $${budget.limit}.`,
      act: () => putBudget(budget.interval, Number(budget.limit)),
      undo: before
        ? () => putBudget(intervalOf(before), before.limit_usd)
        : () => api(`workspaces/${id}/budgets/${budget.interval}`, { method: 'DELETE' }),
    })
    if (ok) setBudget({ ...budget, limit: '' })
  }
  const title = workspace.data?.data.name ?? 'Workspace'
  return (
    <section aria-labelledby="workspace-title">
      <p>
        <a href={href(['governance'])}>Governance</a>
      </p>
      <h1 id="workspace-title">{title}</h1>
      {line}
      <h2>Budgets</h2>
      <form className="filters" onSubmit={setOne} aria-label="Set a budget">
        <label>
          Interval{' '}
          <select value={budget.interval} onChange={(e) => setBudget({ ...budget, interval: e.target.value })}>
            <option value="daily">daily</option>
            <option value="weekly">weekly</option>
            <option value="monthly">monthly</option>
            <option value="lifetime">lifetime</option>
          </select>
        </label>
        <label>
          Limit (USD){' '}
          <input
            type="number"
            min="0.000001"
            step="any"
            value={budget.limit}
            onChange={(e) => setBudget({ ...budget, limit: e.target.value })}
            required
          />
        </label>
        <button type="submit" disabled={busy}>
          Set budget
        </button>
      </form>
      <Listed
        title=""
        label="Budgets"
        query={budgets}
        empty="No budgets: the workspace spends without a cap."
        head={['Interval', 'Limit', 'Actions']}
        row={(b) => [
          intervalOf(b),
          `$${b.limit_usd}`,
          <button
            type="button"
            className="danger"
            disabled={busy}
            onClick={() =>
              void run({
                confirm: `Remove the ${intervalOf(b)} budget of $${b.limit_usd}? The workspace then spends without it.`,
                done: `The ${intervalOf(b)} budget is removed.`,
                act: () => api(`workspaces/${id}/budgets/${intervalOf(b)}`, { method: 'DELETE' }),
                undo: () => putBudget(intervalOf(b), b.limit_usd),
              })
            }
          >
            Remove the {intervalOf(b)} budget
          </button>,
        ]}
      />
      <h2>Members</h2>
      <Choose
        label="Add a member to the workspace"
        field="Member"
        options={membersOutside(everyone.data?.data, members.data?.data)}
        action="Add to workspace"
        act={(user) =>
          run({
            done: `${who.get(user)?.email ?? user} added to the workspace.`,
            act: () => api(`workspaces/${id}/members/add`, { method: 'POST', body: body({ user_ids: [user] }) }),
            undo: () => api(`workspaces/${id}/members/remove`, { method: 'POST', body: body({ user_ids: [user] }) }),
          })
        }
        busy={busy}
      />
      <Listed
        title=""
        label="Workspace members"
        query={members}
        empty="No members besides the account's admins: add one above."
        head={['Member', 'Role', 'Since', 'Actions']}
        row={(m) => {
          const person = who.get(m.user_id)
          const name = person ? memberName(person) : m.user_id
          return [
            person ? name : <code>{m.user_id}</code>,
            m.role,
            new Date(m.created_at).toLocaleDateString(),
            <button
              type="button"
              className="danger"
              disabled={busy}
              onClick={() =>
                void run({
                  confirm: `Remove ${name} from ${title}?`,
                  done: `${name} removed from the workspace.`,
                  act: () =>
                    api(`workspaces/${id}/members/remove`, { method: 'POST', body: body({ user_ids: [m.user_id] }) }),
                  undo: () =>
                    api(`workspaces/${id}/members/add`, { method: 'POST', body: body({ user_ids: [m.user_id] }) }),
                })
              }
            >
              Remove {name}
            </button>,
          ]
        }}
      />
    </section>
  )
}

/** The catalogue's models, offered by every model field of the page (a datalist: `list="gov-models"`). */
function ModelChoices() {
  const models = useQuery({ queryKey: ['models'], queryFn: () => api<{ data: { id: string }[] }>('models') })
  return (
    <datalist id="gov-models">
      {(models.data?.data ?? []).map((m) => (
        <option key={m.id} value={m.id} />
      ))}
    </datalist>
  )
}

interface Field {
  name: string
  label: string
  value: string
  required?: boolean
  /** Typed once and never shown again (a key). */
  secret?: boolean
  /** A datalist's id the field offers choices from. */
  list?: string
}

/** A row's settings changed in place: a form that opens under "Change …" and saves through `save`. */
function Edit({
  what,
  fields,
  save,
  busy,
}: {
  what: string
  fields: Field[]
  save: (values: Record<string, string>) => Promise<boolean>
  busy: boolean
}) {
  const initial = () => Object.fromEntries(fields.map((f) => [f.name, f.value]))
  const [values, setValues] = useState(initial)
  const [open, setOpen] = useState(false)
  const submit = async (e: FormEvent) => {
    e.preventDefault()
    const sent = values
    // A secret leaves the page (its field, and so the DOM) as soon as it is sent, whatever comes back.
    setValues((v) =>
      Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fields.find((f) => f.name === k)?.secret ? '' : x])),
    )
    if (await save(sent)) setOpen(false)
  }
  return (
    <details open={open} onToggle={(e) => setOpen((e.target as HTMLDetailsElement).open)}>
      <summary>Change {what}</summary>
      <form className="create" onSubmit={submit} aria-label={`Change ${what}`}>
        {fields.map((f) => (
          <label key={f.name} className="field">
            {f.label}{' '}
            <input
              value={values[f.name] ?? ''}
              onChange={(e) => setValues({ ...values, [f.name]: e.target.value })}
              required={f.required}
              maxLength={f.secret ? 8192 : 200}
              list={f.list}
              {...(f.secret ? { type: 'password', autoComplete: 'off' } : {})}
            />
          </label>
        ))}
        <button type="submit" disabled={busy}>
          Save {what}
        </button>
      </form>
    </details>
  )
}

interface KeyAssignment {
  key_hash: string
  key_name: string
  key_label: string
}
interface MemberAssignment {
  user_id: string
}

/**
 * A guardrail changed in place (name, spend limit, models) and given to the keys and members it
 * binds (a new guardrail binds no one until it is), each assignment removable.
 */
function GuardrailDetail({
  guardrail: g,
  run,
  busy,
}: {
  guardrail: Guardrail
  run: (change: Change) => Promise<boolean>
  busy: boolean
}) {
  const [open, setOpen] = useState(false)
  const keys = useQuery({
    queryKey: ['guardrail-keys', g.id],
    queryFn: () => api<{ data: KeyAssignment[] }>(`guardrails/${g.id}/assignments/keys?limit=100`),
    enabled: open,
  })
  const members = useQuery({
    queryKey: ['guardrail-members', g.id],
    queryFn: () => api<{ data: MemberAssignment[] }>(`guardrails/${g.id}/assignments/members?limit=100`),
    enabled: open,
  })
  const everyone = useMembers(open)
  const userKeys = useQuery({
    queryKey: ['keys', 'assignable'],
    queryFn: () => api<{ data: { hash: string; name: string; label: string }[] }>('keys'),
    enabled: open,
  })
  const [form, setForm] = useState({
    name: g.name,
    limit: g.limit_usd === null ? '' : String(g.limit_usd),
    reset: g.reset_interval ?? '',
    models: g.allowed_models?.join(', ') ?? '',
  })
  const who = new Map((everyone.data?.data ?? []).map((m) => [m.id, memberName(m)]))
  const refresh = async (change: Change) => {
    const ok = await run(change)
    await Promise.all([keys.refetch(), members.refetch()])
    return ok
  }
  const save = (e: FormEvent) => {
    e.preventDefault()
    const models = modelList(form.models)
    const back = {
      name: g.name,
      limit_usd: g.limit_usd,
      reset_interval: g.reset_interval,
      allowed_models: g.allowed_models,
    }
    void run({
      done: `Guardrail ${form.name} saved.`,
      act: () =>
        api(`guardrails/${g.id}`, {
          method: 'PATCH',
          body: body({
            name: form.name,
            limit_usd: form.limit ? Number(form.limit) : null,
            reset_interval: form.limit && form.reset ? form.reset : null,
            allowed_models: models.length ? models : null,
          }),
        }),
      undo: () => api(`guardrails/${g.id}`, { method: 'PATCH', body: body(back) }),
    })
  }
  const assignMember = (id: string, on: boolean) =>
    api(`guardrails/${g.id}/assignments/members${on ? '' : '/remove'}`, {
      method: 'POST',
      body: body({ member_user_ids: [id] }),
    })
  const assignKey = (hash: string, on: boolean) =>
    api(`guardrails/${g.id}/assignments/keys${on ? '' : '/remove'}`, {
      method: 'POST',
      body: body({ key_hashes: [hash] }),
    })
  return (
    <details onToggle={(e) => setOpen((e.target as HTMLDetailsElement).open)}>
      <summary>Change {g.name}</summary>
      <form className="create" onSubmit={save} aria-label={`Change ${g.name}`}>
        <label className="field">
          Name{' '}
          <input
            value={form.name}
            onChange={(e) => setForm({ ...form, name: e.target.value })}
            required
            maxLength={200}
          />
        </label>
        <label className="field">
          Spend limit (USD; empty: none){' '}
          <input
            type="number"
            min="0.000001"
            step="any"
            value={form.limit}
            onChange={(e) => setForm({ ...form, limit: e.target.value })}
          />
        </label>
        <label className="field">
          Resets{' '}
          <select value={form.reset} onChange={(e) => setForm({ ...form, reset: e.target.value })}>
            <ResetOptions />
          </select>
        </label>
        <label className="field">
          Models allowed (comma-separated; empty: any){' '}
          <input value={form.models} onChange={(e) => setForm({ ...form, models: e.target.value })} maxLength={4000} />
        </label>
        <button type="submit" disabled={busy}>
          Save {g.name}
        </button>
      </form>
      <h3>Binds these members</h3>
      <ul>
        {(members.data?.data ?? []).map((a) => (
          <li key={a.user_id}>
            {who.get(a.user_id) ?? a.user_id}{' '}
            <button
              type="button"
              className="danger"
              disabled={busy}
              onClick={() =>
                void refresh({
                  done: `${g.name} no longer binds ${who.get(a.user_id) ?? a.user_id}.`,
                  act: () => assignMember(a.user_id, false),
                  undo: () => assignMember(a.user_id, true),
                })
              }
            >
              Unassign {who.get(a.user_id) ?? a.user_id}
            </button>
          </li>
        ))}
      </ul>
      <Choose
        label={`Assign ${g.name} to a member`}
        field="Member"
        options={membersOutside(everyone.data?.data, members.data?.data)}
        action="Assign to the member"
        act={(member) =>
          refresh({
            done: `${g.name} binds ${who.get(member) ?? member} from now on.`,
            act: () => assignMember(member, true),
            undo: () => assignMember(member, false),
          })
        }
        busy={busy}
      />
      <h3>Binds these keys</h3>
      <ul>
        {(keys.data?.data ?? []).map((a) => (
          <li key={a.key_hash}>
            {a.key_name || a.key_label}{' '}
            <button
              type="button"
              className="danger"
              disabled={busy}
              onClick={() =>
                void refresh({
                  done: `${g.name} no longer binds ${a.key_name || a.key_label}.`,
                  act: () => assignKey(a.key_hash, false),
                  undo: () => assignKey(a.key_hash, true),
                })
              }
            >
              Unassign {a.key_name || a.key_label}
            </button>
          </li>
        ))}
      </ul>
      <Choose
        label={`Assign ${g.name} to a key`}
        field="Key"
        options={(userKeys.data?.data ?? [])
          .filter((k) => !keys.data?.data.some((a) => a.key_hash === k.hash))
          .map((k) => ({ value: k.hash, text: k.name || k.label }))}
        action="Assign to the key"
        act={(key) =>
          refresh({
            done: `${g.name} binds the key from now on.`,
            act: () => assignKey(key, true),
            undo: () => assignKey(key, false),
          })
        }
        busy={busy}
      />
    </details>
  )
}
