import { useState, type FormEvent } from 'react'
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import type { BackgroundTurn, McpServer, Schedule, Trigger } from '@roster/protocol'
import { api } from '../api'
import { TableScroll } from '../listed'
import { href } from '../router'

// An intern's standing work on its page (docs/interns.md, "Work no one types"): its schedules (add,
// run now, switch off and on, remove), its webhook triggers (add: the secret shown once; a new
// secret; remove), the turns both fired, with how each went (refreshed while any still goes), the
// MCP servers its tools come from, with the tools its host found on each, and its skills.

const when = (iso: string | null, none = '—') =>
  iso ? <time dateTime={iso}>{new Date(iso).toLocaleString()}</time> : <span className="muted">{none}</span>

export function InternWork({ id }: { id: string }) {
  const client = useQueryClient()
  const changed = () => client.invalidateQueries({ queryKey: ['work', id] })
  const schedules = useQuery({
    queryKey: ['work', id, 'schedules'],
    queryFn: () => api<{ data: Schedule[] }>(`interns/${id}/schedules`),
  })
  const triggers = useQuery({
    queryKey: ['work', id, 'triggers'],
    queryFn: () => api<{ data: Trigger[] }>(`interns/${id}/triggers`),
  })
  const turns = useQuery({
    queryKey: ['work', id, 'turns'],
    queryFn: () => api<{ data: BackgroundTurn[] }>(`interns/${id}/turns?limit=20`),
    refetchInterval: (q) =>
      q.state.data?.data.some((t) => ['queued', 'running', 'waiting'].includes(t.state)) ? 3_000 : 30_000,
  })
  const mcp = useQuery({
    queryKey: ['work', id, 'mcp'],
    queryFn: () => api<{ data: McpServer[] }>(`interns/${id}/mcp-servers`),
  })
  const skills = useQuery({
    queryKey: ['work', id, 'skills'],
    queryFn: () =>
      api<{ data: { name: string; description: string }[]; problems: { folder: string; problem: string }[] }>(
        `interns/${id}/skills`,
      ),
    retry: false,
  })
  const act = useMutation({
    mutationFn: ({ path, method, body }: { path: string; method: string; body?: unknown }) =>
      api<unknown>(`interns/${id}/${path}`, { method, ...(body ? { body: JSON.stringify(body) } : {}) }),
    onSettled: changed,
  })
  return (
    <>
      <h2>Schedules</h2>
      {act.isError && <p role="alert">{act.error.message}</p>}
      {schedules.isError ? (
        <p role="alert">{schedules.error.message}</p>
      ) : !schedules.data ? (
        <p aria-busy="true">Loading schedules…</p>
      ) : schedules.data.data.length === 0 ? (
        <p>No schedules: give the intern a standing job below.</p>
      ) : (
        <TableScroll label="Schedules">
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">When</th>
                <th scope="col">Next</th>
                <th scope="col">Last</th>
                <th scope="col">Prompt</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {schedules.data.data.map((s) => (
                <tr key={s.id}>
                  <td>{s.name}</td>
                  <td>
                    <code>{s.cron}</code> {s.timezone}
                    <span className="muted">
                      {' '}
                      · {s.approval_mode} · missed: {s.missed === 'skip' ? 'skipped' : 'run once'}
                      {s.slack_channel && ` · reports in Slack ${s.slack_channel}`}
                    </span>
                  </td>
                  <td>{when(s.next_fire_at, 'off')}</td>
                  <td>{when(s.last_fire_at, 'not yet')}</td>
                  <td className="pre">{s.prompt.slice(0, 200)}</td>
                  <td className="actions">
                    <button type="button" onClick={() => act.mutate({ path: `schedules/${s.id}/run`, method: 'POST' })}>
                      Run {s.name} now
                    </button>
                    <OnOffRemove
                      name={s.name}
                      enabled={s.enabled}
                      path={`schedules/${s.id}`}
                      removing={`Remove the schedule ${s.name}? Its turns stay listed.`}
                      act={act.mutate}
                    />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableScroll>
      )}
      <NewSchedule id={id} onMade={changed} />

      <h2>Webhook triggers</h2>
      {triggers.isError ? (
        <p role="alert">{triggers.error.message}</p>
      ) : !triggers.data ? (
        <p aria-busy="true">Loading triggers…</p>
      ) : triggers.data.data.length === 0 ? (
        <p>No webhook triggers: add one below, and give its URL and secret to the system that sends.</p>
      ) : (
        <TableScroll label="Webhook triggers">
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">URL</th>
                <th scope="col">Prompt</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {triggers.data.data.map((t) => (
                <tr key={t.id}>
                  <td>
                    {t.name}
                    {!t.enabled && <span className="muted"> (off)</span>}
                    {t.slack_channel && <span className="muted"> · reports in Slack {t.slack_channel}</span>}
                  </td>
                  <td>
                    <code>{t.url}</code>
                  </td>
                  <td className="pre">{t.prompt.slice(0, 200)}</td>
                  <td className="actions">
                    <OnOffRemove
                      name={t.name}
                      enabled={t.enabled}
                      path={`triggers/${t.id}`}
                      removing={`Remove the trigger ${t.name}? Its URL takes nothing more.`}
                      act={act.mutate}
                    />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableScroll>
      )}
      <NewTrigger id={id} onMade={changed} />

      <h2>MCP servers</h2>
      {mcp.isError ? (
        <p role="alert">{mcp.error.message}</p>
      ) : !mcp.data ? (
        <p aria-busy="true">Loading MCP servers…</p>
      ) : mcp.data.data.length === 0 ? (
        <p>No MCP servers: add one below, and its tools are the intern's from its next turn.</p>
      ) : (
        <TableScroll label="MCP servers">
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">URL</th>
                <th scope="col">Tools</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {mcp.data.data.map((m) => (
                <tr key={m.id}>
                  <td>
                    {m.name}
                    {!m.enabled && <span className="muted"> (off)</span>}
                  </td>
                  <td>
                    <code>{m.url}</code>
                  </td>
                  <td>
                    {m.tools === null ? (
                      <span className="muted">found at the intern's next turn</span>
                    ) : m.tools.length === 0 ? (
                      <span className="muted">none</span>
                    ) : (
                      m.tools.map((t) => t.name).join(', ')
                    )}
                    {m.tools_error && <p className="muted">{m.tools_error}</p>}
                  </td>
                  <td className="actions">
                    <OnOffRemove
                      name={m.name}
                      enabled={m.enabled}
                      path={`mcp-servers/${m.id}`}
                      removing={`Remove the MCP server ${m.name}? Its tools are gone from the next turn.`}
                      act={act.mutate}
                    />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableScroll>
      )}
      <NewMcpServer id={id} onMade={changed} />

      <h2>Skills</h2>
      {skills.isError ? (
        <p role="status">{skills.error.message}</p>
      ) : !skills.data ? (
        <p aria-busy="true">Loading skills…</p>
      ) : (
        <>
          {skills.data.data.length === 0 ? (
            <p>No skills: add one below, or the intern writes its own under skills/ in its workspace.</p>
          ) : (
            <TableScroll label="Skills">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Description</th>
                    <th scope="col">Actions</th>
                  </tr>
                </thead>
                <tbody>
                  {skills.data.data.map((k) => (
                    <tr key={k.name}>
                      <td>{k.name}</td>
                      <td>{k.description}</td>
                      <td className="actions">
                        <button
                          type="button"
                          className="danger"
                          onClick={() => {
                            if (confirm(`Remove the skill ${k.name} from the intern's workspace?`))
                              act.mutate({ path: `skills/${k.name}`, method: 'DELETE' })
                          }}
                        >
                          Remove {k.name}
                        </button>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableScroll>
          )}
          {skills.data.problems.map((p) => (
            <p key={p.folder} className="muted">
              skills/{p.folder} is not offered: {p.problem}
            </p>
          ))}
        </>
      )}
      <NewSkill id={id} onMade={changed} />

      <h2>Turns no one typed</h2>
      {turns.isError ? (
        <p role="alert">{turns.error.message}</p>
      ) : !turns.data ? (
        <p aria-busy="true">Loading turns…</p>
      ) : turns.data.data.length === 0 ? (
        <p>None yet: a schedule's fire or a webhook's delivery shows here.</p>
      ) : (
        <TableScroll label="Turns no one typed">
          <table>
            <thead>
              <tr>
                <th scope="col">From</th>
                <th scope="col">State</th>
                <th scope="col">Due</th>
                <th scope="col">Ended</th>
                <th scope="col">What came of it</th>
              </tr>
            </thead>
            <tbody>
              {turns.data.data.map((t) => (
                <tr key={t.id}>
                  <td>
                    <a href={href(['interns', id, 'chat'], { session: t.session_id })}>{t.source}</a>
                  </td>
                  <td>
                    {t.state === 'waiting' ? <a href={href(['inbox'])}>waiting for an answer</a> : t.state}
                    {t.slack_report && <div className="muted">Slack: {t.slack_report}</div>}
                  </td>
                  <td>{when(t.scheduled_for ?? t.created_at)}</td>
                  <td>{when(t.ended_at)}</td>
                  <td className="pre">{(t.reason ?? t.output ?? '').slice(0, 300)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableScroll>
      )}
    </>
  )
}

function NewSchedule({ id, onMade }: { id: string; onMade: () => void }) {
  const [name, setName] = useState('')
  const [cron, setCron] = useState('0 9 * * 1-5')
  const [timezone, setTimezone] = useState(() => Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC')
  const [prompt, setPrompt] = useState('')
  const [selfDrive, setSelfDrive] = useState(false)
  const [skip, setSkip] = useState(false)
  const [slackChannel, setSlackChannel] = useState('')
  const make = useMutation({
    mutationFn: () =>
      api<Schedule>(`interns/${id}/schedules`, {
        method: 'POST',
        body: JSON.stringify({
          name,
          cron,
          timezone,
          prompt,
          approval_mode: selfDrive ? 'self-drive' : 'manual',
          missed: skip ? 'skip' : 'run_once',
          slack_channel: slackChannel || null,
        }),
      }),
    onSuccess: () => {
      setName('')
      setPrompt('')
      onMade()
    },
  })
  const submit = (e: FormEvent) => {
    e.preventDefault()
    make.mutate()
  }
  return (
    <form className="create" onSubmit={submit} aria-label="New schedule">
      <label htmlFor="schedule-name">Name</label>
      <input id="schedule-name" value={name} onChange={(e) => setName(e.target.value)} required maxLength={64} />
      <label htmlFor="schedule-cron">Cron (minute hour day month weekday)</label>
      <input id="schedule-cron" value={cron} onChange={(e) => setCron(e.target.value)} required maxLength={200} />
      <label htmlFor="schedule-zone">Time zone</label>
      <input
        id="schedule-zone"
        value={timezone}
        onChange={(e) => setTimezone(e.target.value)}
        required
        maxLength={64}
      />
      <label htmlFor="schedule-prompt">Prompt</label>
      <textarea id="schedule-prompt" value={prompt} onChange={(e) => setPrompt(e.target.value)} required rows={3} />
      <label className="inline">
        <input type="checkbox" checked={selfDrive} onChange={(e) => setSelfDrive(e.target.checked)} /> Self-drive
        (nothing asks first)
      </label>
      <label className="inline">
        <input type="checkbox" checked={skip} onChange={(e) => setSkip(e.target.checked)} /> Skip fires missed while
        Roster was down
      </label>
      <SlackChannelField id="schedule-slack" value={slackChannel} onChange={setSlackChannel} />
      <button type="submit" disabled={make.isPending}>
        Add schedule
      </button>
      {make.isError && <p role="alert">{make.error.message}</p>}
      {make.data && (
        <p role="status">Added: it fires next {new Date(make.data.next_fire_at ?? '').toLocaleString()}.</p>
      )}
    </form>
  )
}

/** Where a schedule's or trigger's turns report in Slack (the intern's own Slack app): optional. */
function SlackChannelField({ id, value, onChange }: { id: string; value: string; onChange: (v: string) => void }) {
  return (
    <>
      <label htmlFor={id}>Report in Slack (a conversation id of the intern's app, e.g. C0123ABCD; optional)</label>
      <input id={id} value={value} onChange={(e) => onChange(e.target.value)} pattern="[CDG][A-Z0-9]{2,31}" />
    </>
  )
}

function NewTrigger({ id, onMade }: { id: string; onMade: () => void }) {
  const [name, setName] = useState('')
  const [prompt, setPrompt] = useState('')
  const [slackChannel, setSlackChannel] = useState('')
  const make = useMutation({
    mutationFn: () =>
      api<Trigger>(`interns/${id}/triggers`, {
        method: 'POST',
        body: JSON.stringify({ name, prompt, slack_channel: slackChannel || null }),
      }),
    onSuccess: () => {
      setName('')
      setPrompt('')
      onMade()
    },
  })
  const submit = (e: FormEvent) => {
    e.preventDefault()
    make.mutate()
  }
  return (
    <form className="create" onSubmit={submit} aria-label="New webhook trigger">
      <label htmlFor="trigger-name">Name</label>
      <input id="trigger-name" value={name} onChange={(e) => setName(e.target.value)} required maxLength={64} />
      <label htmlFor="trigger-prompt">What to do with a delivery</label>
      <textarea id="trigger-prompt" value={prompt} onChange={(e) => setPrompt(e.target.value)} required rows={3} />
      <SlackChannelField id="trigger-slack" value={slackChannel} onChange={setSlackChannel} />
      <button type="submit" disabled={make.isPending}>
        Add webhook trigger
      </button>
      {make.isError && <p role="alert">{make.error.message}</p>}
      {make.data?.secret && (
        <div className="secret" role="status">
          <p>
            Deliveries go to <code>{make.data.url}</code>, signed with this secret, shown this once: copy it now.
          </p>
          <code>{make.data.secret}</code>
        </div>
      )}
    </form>
  )
}

function NewMcpServer({ id, onMade }: { id: string; onMade: () => void }) {
  const [name, setName] = useState('')
  const [url, setUrl] = useState('')
  const [secret, setSecret] = useState('')
  const make = useMutation({
    mutationFn: () =>
      api<McpServer>(`interns/${id}/mcp-servers`, {
        method: 'POST',
        body: JSON.stringify({
          name,
          url,
          headers: secret ? { Authorization: `Bearer {{secret:${secret}}}` } : {},
        }),
      }),
    onSuccess: () => {
      setName('')
      setUrl('')
      setSecret('')
      onMade()
    },
  })
  const submit = (e: FormEvent) => {
    e.preventDefault()
    make.mutate()
  }
  return (
    <form className="create" onSubmit={submit} aria-label="New MCP server">
      <label htmlFor="mcp-name">Name</label>
      <input id="mcp-name" value={name} onChange={(e) => setName(e.target.value)} required maxLength={32} />
      <label htmlFor="mcp-url">URL (Streamable HTTP)</label>
      <input id="mcp-url" type="url" value={url} onChange={(e) => setUrl(e.target.value)} required />
      <label htmlFor="mcp-secret">Bearer token from the vault (the secret's name, bound to the server's host)</label>
      <input id="mcp-secret" value={secret} onChange={(e) => setSecret(e.target.value)} pattern="[a-z][a-z0-9_]*" />
      <button type="submit" disabled={make.isPending}>
        Add MCP server
      </button>
      {make.isError && <p role="alert">{make.error.message}</p>}
    </form>
  )
}

function NewSkill({ id, onMade }: { id: string; onMade: () => void }) {
  const [name, setName] = useState('')
  const [skillMd, setSkillMd] = useState('')
  const make = useMutation({
    mutationFn: () =>
      api<{ name: string }>(`interns/${id}/skills/${encodeURIComponent(name)}`, {
        method: 'PUT',
        body: JSON.stringify({ files: [{ path: 'SKILL.md', content: skillMd }] }),
      }),
    onSuccess: () => {
      setName('')
      setSkillMd('')
      onMade()
    },
  })
  const submit = (e: FormEvent) => {
    e.preventDefault()
    make.mutate()
  }
  return (
    <form className="create" onSubmit={submit} aria-label="New skill">
      <label htmlFor="skill-name">Name</label>
      <input id="skill-name" value={name} onChange={(e) => setName(e.target.value)} required maxLength={64} />
      <label htmlFor="skill-md">SKILL.md (front matter with name and description, then instructions)</label>
      <textarea
        id="skill-md"
        value={skillMd}
        onChange={(e) => setSkillMd(e.target.value)}
        required
        rows={6}
        placeholder={'---\nname: my-skill\ndescription: What it does and when to use it\n---\nInstructions…'}
      />
      <button type="submit" disabled={make.isPending}>
        Add skill
      </button>
      {make.isError && <p role="alert">{make.error.message}</p>}
    </form>
  )
}

/** Switch one of an intern's standing things off or on, or remove it (after asking). */
function OnOffRemove({
  name,
  enabled,
  path,
  removing,
  act,
}: {
  name: string
  enabled: boolean
  path: string
  removing: string
  act: (change: { path: string; method: string; body?: unknown }) => void
}) {
  return (
    <>
      <button type="button" onClick={() => act({ path, method: 'PATCH', body: { enabled: !enabled } })}>
        {enabled ? `Switch ${name} off` : `Switch ${name} on`}
      </button>
      <button
        type="button"
        className="danger"
        onClick={() => {
          if (confirm(removing)) act({ path, method: 'DELETE' })
        }}
      >
        Remove {name}
      </button>
    </>
  )
}
