import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort, makeTenant, useTestTenant } from '@roster/testing'
import { pruneConsoleSessions } from '@roster/shared/repositories'
import { buildTestApp } from './helpers.js'

// Signing in to the web console (issue 47): an API key exchanged once for a server-side session in
// an HttpOnly, SameSite=Strict cookie; a change made with it needs the console's header and its
// origin; an Authorization header still wins; signing out, an expired session or a disabled key
// ends it; a session makes model calls (the playground) only from the console itself.
const env = useTestTenant()
let app: Awaited<ReturnType<typeof buildTestApp>>
let origin: string
let base: string

beforeAll(async () => {
  const port = await freePort()
  app = await buildTestApp(env.t.db, { CONSOLE_SESSION_TTL_S: '60' })
  await app.listen({ port, host: '127.0.0.1' })
  origin = `http://127.0.0.1:${port}`
  base = `${origin}/api/v1`
})
afterAll(async () => {
  await app?.closeAll()
})

const consoleHeaders = () => ({ 'x-roster-console': '1', origin, 'content-type': 'application/json' })

async function signIn(key: string) {
  const res = await fetch(`${base}/console/session`, {
    method: 'POST',
    headers: consoleHeaders(),
    body: JSON.stringify({ key }),
  })
  return res
}
const cookieOf = (res: Response) => res.headers.get('set-cookie')!.split(';')[0]!

describe('a console session', () => {
  it('is made from a key once, in an HttpOnly SameSite=Strict cookie that holds no key', async () => {
    const key = env.tenant.keys.user
    const res = await signIn(key)
    expect(res.status).toBe(201)
    const set = res.headers.get('set-cookie')!
    expect(set).toMatch(/^roster_session=[A-Za-z0-9_-]{43}; Max-Age=60; Path=\/; HttpOnly; SameSite=Strict$/)
    expect(set).not.toContain(key)
    const body = (await res.json()) as Record<string, unknown>
    expect(body).toEqual({
      kind: 'user',
      workspace_id: env.tenant.workspaceId,
      // Its name, for the page's header.
      workspace_name: (await env.t.db.workspace.findUniqueOrThrow({ where: { id: env.tenant.workspaceId } })).name,
      expires_at: expect.any(String),
      // This API serves no model: no default for interns.
      intern_default_model: null,
      // A key's session, not a person's (single sign-on).
      member: null,
    })
    expect(JSON.stringify(body)).not.toContain(key)
    // The database keeps the id's digest, never the id or the key.
    const id = cookieOf(res).split('=')[1]!
    const rows = await env.t.db.consoleSession.findMany()
    expect(JSON.stringify(rows)).not.toContain(id)
    expect(JSON.stringify(rows)).not.toContain(key)
    // The session reads as the key: the member's interns.
    const list = await fetch(`${base}/interns`, { headers: { cookie: cookieOf(res) } })
    expect(list.status).toBe(200)
    const who = await fetch(`${base}/console/session`, { headers: { cookie: cookieOf(res) } })
    expect(await who.json()).toMatchObject({ kind: 'user', workspace_id: env.tenant.workspaceId })
  })

  it('refuses a wrong key, and a sign-in from another site', async () => {
    expect((await signIn('sk-or-v1-nope')).status).toBe(401)
    const crossSite = await fetch(`${base}/console/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'https://evil.example', 'x-roster-console': '1' },
      body: JSON.stringify({ key: env.tenant.keys.user }),
    })
    expect(crossSite.status).toBe(403)
    expect(crossSite.headers.get('set-cookie')).toBeNull()
  })

  it('changes nothing for a forged cross-site request: the header and the origin are both needed', async () => {
    const cookie = cookieOf(await signIn(env.tenant.keys.user))
    const before = await env.t.db.intern.count()
    const create = (headers: Record<string, string>) =>
      fetch(`${base}/interns`, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ name: `web-${Date.now() % 100_000}` }),
      })
    // A form post from another site: no header.
    const form = await create({ origin: 'https://evil.example' })
    expect(form.status).toBe(403)
    expect(((await form.json()) as any).error.metadata.reason).toBe('cross_site_refused')
    // The header but another origin, or no origin at all.
    expect((await create({ 'x-roster-console': '1', origin: 'https://evil.example' })).status).toBe(403)
    expect((await create({ 'x-roster-console': '1' })).status).toBe(403)
    expect(await env.t.db.intern.count()).toBe(before)
    // From the console itself: made.
    const made = await create({ 'x-roster-console': '1', origin })
    expect(made.status, await made.clone().text()).toBe(201)
  })

  it('gives way to an Authorization header, and makes model calls only from the console', async () => {
    const cookie = cookieOf(await signIn(env.tenant.keys.user))
    const other = await fetch(`${base}/keys`, {
      headers: { cookie, authorization: `Bearer ${env.tenant.keys.management}` },
    })
    expect(other.status).toBe(200)
    // The same route with the session alone: a user key may not manage keys.
    expect((await fetch(`${base}/keys`, { headers: { cookie } })).status).not.toBe(200)
    // From the console, as the session's key (this API serves no model: the model is unknown, not the caller).
    const model = await fetch(`${base}/responses`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json', 'x-roster-console': '1', origin },
      body: JSON.stringify({ model: 'openai/gpt-4o', input: 'hi' }),
    })
    expect(model.status).not.toBe(401)
    expect(model.status).not.toBe(403)
    // From anywhere else (a form on another site can send neither the header nor the origin): refused.
    for (const headers of [
      { cookie, 'content-type': 'application/json', origin } as Record<string, string>,
      { cookie, 'content-type': 'application/json', 'x-roster-console': '1', origin: 'https://evil.example' },
    ]) {
      const forged = await fetch(`${base}/responses`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ model: 'openai/gpt-4o', input: 'hi' }),
      })
      expect(forged.status).toBe(403)
    }
  })

  it('ends when signed out, when it expires, and when its key is disabled', async () => {
    const first = cookieOf(await signIn(env.tenant.keys.user))
    const out = await fetch(`${base}/console/session`, {
      method: 'DELETE',
      headers: { cookie: first, 'x-roster-console': '1', origin },
    })
    expect(out.status).toBe(204)
    expect(out.headers.get('set-cookie')).toMatch(/^roster_session=; Max-Age=0/)
    expect((await fetch(`${base}/interns`, { headers: { cookie: first } })).status).toBe(401)

    const second = cookieOf(await signIn(env.tenant.keys.user))
    await env.t.db.consoleSession.updateMany({
      where: { revokedAt: null },
      data: { expiresAt: new Date(Date.now() - 1000) },
    })
    app.deps.authenticate.forgetWorkspace(env.tenant.workspaceId)
    expect((await fetch(`${base}/console/session`, { headers: { cookie: second } })).status).toBe(401)
    expect((await fetch(`${base}/interns`, { headers: { cookie: second } })).status).toBe(401)
    // The worker's minute sweep forgets sessions ended more than a day ago, and only those.
    await env.t.db.consoleSession.updateMany({
      where: { revokedAt: null, expiresAt: { lt: new Date() } },
      data: { expiresAt: new Date(Date.now() - 2 * 86_400_000) },
    })
    const live = await env.t.db.consoleSession.count({ where: { expiresAt: { gt: new Date() } } })
    expect(await pruneConsoleSessions(env.t.db)).toBeGreaterThan(0)
    expect(await env.t.db.consoleSession.count({ where: { expiresAt: { lt: new Date() } } })).toBe(0)
    expect(await env.t.db.consoleSession.count()).toBe(live)

    // A key disabled ends the sessions signed in with it (they act as the key is now).
    const other = await makeTenant(env.t.db)
    const third = cookieOf(await signIn(other.keys.organization))
    expect((await fetch(`${base}/interns`, { headers: { cookie: third } })).status).toBe(200)
    await env.t.db.apiKey.updateMany({
      where: { workspaceId: other.workspaceId, kind: 'organization' },
      data: { disabled: true },
    })
    app.deps.authenticate.forgetWorkspace(other.workspaceId)
    expect((await fetch(`${base}/interns`, { headers: { cookie: third } })).status).toBe(401)
  })
})
