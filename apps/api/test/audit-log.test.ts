import { afterAll, beforeAll, expect, it } from 'vitest'
import { runAdminCaptured } from '@roster/cli'
import { pruneAuditEvents } from '@roster/shared/repositories'
import { useTestTenant } from '@roster/testing'
import { AUDITED } from '../src/audit/audited-operations.js'
import { buildTestApp, simEndpoint, simModel } from './helpers.js'

// The audit log (issue 59, docs/audit.md): every governance change through the API, the console
// or the admin CLI lands as who, what, before and after (secrets masked), when and from where; a
// refused change lands nowhere; only the account's managers read it; the database refuses an
// edit; the worker's retention deletes only what is older than it keeps.
const env = useTestTenant()
let app: Awaited<ReturnType<typeof buildTestApp>>
let base: string
let origin: string

beforeAll(async () => {
  app = await buildTestApp(
    env.t.db,
    {},
    { models: [simModel('sim/chat', [simEndpoint('http://127.0.0.1:9', 'openai-chat')])] },
  )
  origin = await app.listen({ port: 0, host: '127.0.0.1' })
  base = `${origin}/api/v1`
})
afterAll(async () => {
  await app?.closeAll()
})

const headers = (body?: unknown) => ({
  authorization: `Bearer ${env.tenant.keys.management}`,
  ...(body === undefined ? {} : { 'content-type': 'application/json' }),
})
async function send(method: string, path: string, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: headers(body),
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: res.status, body: (await res.json().catch(() => null)) as any }
}
type Event = {
  action: string
  actor: { type: string; id: string | null; label: string }
  via: string
  target: { type: string; id: string | null }
  before: any
  after: any
  request: any
  ip: string | null
}
const events = async (query: string) => (await send('GET', `/audit-log?${query}`)).body.data as Event[]

it('names only operations the API serves', async () => {
  const spec = (await (await fetch(`${base}/openapi.json`)).json()) as {
    paths: Record<string, Record<string, { operationId?: string }>>
  }
  const served = new Set(Object.values(spec.paths).flatMap((ops) => Object.values(ops).map((o) => o.operationId)))
  expect(Object.keys(AUDITED).filter((op) => !served.has(op))).toEqual([])
})

it('records a key’s life with before and after, its secret nowhere', async () => {
  const made = await send('POST', '/keys', { name: 'audited', limit: 5 })
  expect(made.status, JSON.stringify(made.body)).toBe(201)
  const { hash } = made.body.data
  const patched = await send('PATCH', `/keys/${hash}`, { disabled: true, limit: 7 })
  expect(patched.status, JSON.stringify(patched.body)).toBe(200)
  expect((await send('DELETE', `/keys/${hash}`)).status).toBe(200)
  // Refused changes land nowhere.
  expect((await send('PATCH', `/keys/${'0'.repeat(64)}`, { name: 'x' })).status).toBe(404)
  expect((await send('POST', '/keys', { name: '' })).status).toBe(400)
  const log = await events(`target_id=${hash}`)
  expect(log.map((e) => e.action)).toEqual(['key.delete', 'key.update', 'key.create'])
  const [deleted, updated, created] = log as [Event, Event, Event]
  expect(created).toMatchObject({
    via: 'api',
    actor: { type: 'key', label: 'management key' },
    target: { type: 'key', id: hash },
    before: null,
    after: { name: 'audited', limit: 5, disabled: false },
    request: { name: 'audited', limit: 5 },
    ip: '127.0.0.1',
  })
  expect(updated).toMatchObject({ before: { disabled: false, limit: 5 }, after: { disabled: true, limit: 7 } })
  expect(deleted).toMatchObject({ before: { name: 'audited', disabled: true }, after: null })
  const stored = await env.t.db.$queryRaw<
    { t: string }[]
  >`SELECT string_agg(row_to_json(a)::text, '') AS t FROM audit_events a`
  expect(stored[0]!.t).not.toContain(made.body.key)
  expect(await env.t.db.auditEvent.count({ where: { action: { startsWith: 'key.' }, targetId: '0'.repeat(64) } })).toBe(
    0,
  )
})

it('records budgets, guardrails, provider keys, destinations and members, secrets masked', async () => {
  const ws = env.tenant.workspaceId
  expect((await send('PUT', `/workspaces/${ws}/budgets/daily`, { limit_usd: 3 })).status).toBe(200)
  expect((await send('PUT', `/workspaces/${ws}/budgets/daily`, { limit_usd: 4 })).status).toBe(200)
  const guardrail = await send('POST', '/guardrails', { name: 'careful', allowed_models: ['sim/chat'] })
  expect(guardrail.status).toBe(201)
  expect((await send('PATCH', `/guardrails/${guardrail.body.data.id}`, { name: 'more careful' })).status).toBe(200)
  const byok = await send('POST', '/byok', {
    provider: 'upstream-sim',
    key: 'sk-provider-secret-value-0123456789',
    name: 'ours',
  })
  expect(byok.status).toBe(201)
  const destination = await send('POST', '/observability/destinations', {
    name: 'hook',
    type: 'webhook',
    config: { url: 'https://hooks.example/x', headers: { authorization: 'Bearer receiver-secret-123' } },
  })
  expect(destination.status).toBe(201)
  const member = await send('POST', '/organization/members', { email: 'gina@example.com' })
  expect(member.status).toBe(201)
  expect(
    (
      await send('POST', `/guardrails/${guardrail.body.data.id}/assignments/members`, {
        member_user_ids: [member.body.data.id],
      })
    ).status,
  ).toBe(200)

  const budgets = await events('action=budget')
  expect(budgets.map((e) => [e.action, e.before?.limit_usd ?? null, e.after?.limit_usd])).toEqual([
    ['budget.set', 3, 4],
    ['budget.set', null, 3],
  ])
  expect((await events('action=guardrail')).map((e) => e.action)).toEqual([
    'guardrail.members_assign',
    'guardrail.update',
    'guardrail.create',
  ])
  const [assigned] = await events('action=guardrail.members_assign')
  expect(assigned!.before).toEqual([])
  expect(assigned!.request).toEqual({ member_user_ids: [member.body.data.id] })
  const [provider] = await events('action=provider_key')
  expect(provider!.request.key).toBe('••••6789')
  const [hook] = await events('action=destination')
  expect(hook!.request.config.headers).toEqual({ authorization: '••••' })
  const all = JSON.stringify(await events('limit=200'))
  expect(all).not.toContain('sk-provider-secret-value')
  expect(all).not.toContain('receiver-secret-123')
})

it('records a change made in the console as the console’s, and the admin CLI’s as the CLI’s', async () => {
  const signIn = await fetch(`${base}/console/session`, {
    method: 'POST',
    headers: { 'x-roster-console': '1', origin, 'content-type': 'application/json' },
    body: JSON.stringify({ key: env.tenant.keys.management }),
  })
  const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!
  const res = await fetch(`${base}/keys`, {
    method: 'POST',
    headers: { cookie, 'x-roster-console': '1', origin, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'from the page' }),
  })
  expect(res.status).toBe(201)
  const [inPage] = await events('action=key.create&limit=1')
  expect(inPage).toMatchObject({ via: 'console', after: { name: 'from the page' } })
  expect((await events('action=session'))[0]).toMatchObject({
    action: 'session.sign_in',
    via: 'console',
    after: { how: 'key' },
  })

  const cli = await runAdminCaptured(
    ['keys', 'create', '--workspace', env.tenant.workspaceId, '--name', 'from the cli', '--json'],
    {
      ...process.env,
      DATABASE_URL: env.t.url,
    },
  )
  expect(cli.code, cli.stderr).toBe(0)
  const made = JSON.parse(cli.stdout) as { data: { hash: string }; key: string }
  const [fromCli] = await events(`target_id=${made.data.hash}`)
  expect(fromCli).toMatchObject({
    via: 'cli',
    action: 'key.create',
    actor: { type: 'cli', id: null },
    after: { data: { name: 'from the cli' } },
  })
  expect(fromCli!.actor.label).toMatch(/@/)
  expect(JSON.stringify(fromCli)).not.toContain(made.key)
  const off = await runAdminCaptured(['user', 'disable', '--user', env.tenant.userId, '--json'], {
    ...process.env,
    DATABASE_URL: env.t.url,
  })
  expect(off.code, off.stderr).toBe(0)
  const [disabled] = await events(`target_id=${env.tenant.userId}`)
  expect(disabled).toMatchObject({
    action: 'member.update',
    via: 'cli',
    before: { disabled_at: null },
    after: { data: { disabled: true } },
  })
  await runAdminCaptured(['user', 'enable', '--user', env.tenant.userId], { ...process.env, DATABASE_URL: env.t.url })
})

it('filters by time and pages with a cursor; bad filters are refused', async () => {
  const first = await send('GET', '/audit-log?limit=2')
  expect(first.body.data).toHaveLength(2)
  expect(first.body.has_more).toBe(true)
  const next = await send('GET', `/audit-log?limit=2&cursor=${first.body.next_cursor}`)
  expect(next.body.data[0].id).not.toBe(first.body.data[1].id)
  expect(Date.parse(next.body.data[0].created_at)).toBeLessThanOrEqual(Date.parse(first.body.data[1].created_at))
  expect((await send('GET', `/audit-log?from=${new Date(Date.now() + 60_000).toISOString()}`)).body.data).toEqual([])
  for (const q of ['cursor=nope', 'action=DROP%20TABLE', 'from=yesterday', 'limit=0', 'unknown=1'])
    expect((await send('GET', `/audit-log?${q}`)).status, q).toBe(400)
})

it('keeps events for the retention period, deleting only older ones', async () => {
  const old = await env.t.db.auditEvent.create({
    data: {
      accountId: env.tenant.accountId,
      actorType: 'cli',
      actorLabel: 'old',
      via: 'cli',
      action: 'key.create',
      targetType: 'key',
      createdAt: new Date(Date.now() - 500 * 86_400_000),
    },
  })
  const before = await env.t.db.auditEvent.count()
  expect(await pruneAuditEvents(env.t.db, 400)).toBe(1)
  expect(await env.t.db.auditEvent.findUnique({ where: { id: old.id } })).toBeNull()
  expect(await env.t.db.auditEvent.count()).toBe(before - 1)
})
