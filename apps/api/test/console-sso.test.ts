import { afterAll, beforeAll, expect, it } from 'vitest'
import { chromium, type Browser, type Page } from 'playwright-core'
import { chromiumPath, describeNeeding, freePort, startOidcIdp, useTestTenant, type OidcIdp } from '@roster/testing'
import { createUser } from '@roster/shared'
import { buildTestApp } from './helpers.js'
import { axeViolations } from './console-helpers.js'

// Single sign-on to the console (issue 59): a real OpenID Connect issuer (oidc-provider, its own
// process) vouches for a person by e-mail; Roster signs in the member with that e-mail, as their role
// allows (an admin governs and reads the audit log, a member sees their own keys and spend), in one
// session. Refused: a stranger, a disabled member, an e-mail the issuer does not vouch for, a state
// the browser did not begin, a callback used twice. Every sign-in and member change is audited.
const env = useTestTenant()
let app: Awaited<ReturnType<typeof buildTestApp>>
let idp: OidcIdp
let browser: Browser
let origin: string
const people: Record<string, string> = {}

beforeAll(async () => {
  const port = await freePort()
  origin = `http://127.0.0.1:${port}`
  idp = await startOidcIdp({
    redirectUris: [`${origin}/api/v1/console/sso/callback`],
    unverified: ['eve@example.com'],
  })
  app = await buildTestApp(env.t.db, {
    OIDC_ISSUER: idp.issuer,
    OIDC_CLIENT_ID: idp.clientId,
    OIDC_CLIENT_SECRET: idp.clientSecret,
    OIDC_ALLOW_HTTP: 'true',
    OIDC_DISPLAY_NAME: 'Test IdP',
  })
  await app.listen({ port, host: '127.0.0.1' })
  const ws = env.tenant.workspaceId
  people.alice = (
    await createUser(env.t.db, { workspaceId: ws, email: 'Alice@Example.com', role: 'org:admin' })
  ).user_id
  people.bob = (await createUser(env.t.db, { workspaceId: ws, email: 'bob@example.com' })).user_id
  people.carol = (await createUser(env.t.db, { workspaceId: ws, email: 'carol@example.com' })).user_id
  people.eve = (await createUser(env.t.db, { workspaceId: ws, email: 'eve@example.com' })).user_id
  await env.t.db.user.update({ where: { id: people.carol }, data: { disabledAt: new Date() } })
})
afterAll(async () => {
  await browser?.close()
  await app?.closeAll()
  await idp?.stop()
})

const management = () => ({ authorization: `Bearer ${env.tenant.keys.management}`, 'content-type': 'application/json' })

it('says whether single sign-on is offered, and what it is called, before anyone signs in', async () => {
  const res = await fetch(`${origin}/api/v1/console/sso`)
  expect(await res.json()).toEqual({ enabled: true, name: 'Test IdP' })
})

it('refuses a callback whose state this browser did not begin, and one used twice', async () => {
  // No cookie at all: a forged or tampered state.
  const forged = await fetch(`${origin}/api/v1/console/sso/callback?code=abc&state=forged`, { redirect: 'manual' })
  expect(forged.status).toBe(302)
  expect(decodeURIComponent(forged.headers.get('location')!)).toMatch(
    /sso_error=this sign-in was not begun in this browser/,
  )
  expect(forged.headers.get('set-cookie')).not.toContain('roster_session=')
  // A flow begun, then its state changed on the way back.
  const start = await fetch(`${origin}/api/v1/console/sso/start`, { redirect: 'manual' })
  expect(start.status).toBe(302)
  const toIdp = new URL(start.headers.get('location')!)
  expect(toIdp.origin).toBe(idp.issuer)
  expect(toIdp.searchParams.get('code_challenge_method')).toBe('S256')
  const flowCookie = start.headers.get('set-cookie')!
  expect(flowCookie).toMatch(/roster_sso=[^;]+; Max-Age=600; Path=\/api\/v1\/console\/sso; HttpOnly; SameSite=Lax/)
  const cookie = flowCookie.split(';')[0]!
  const state = toIdp.searchParams.get('state')!
  const tampered = await fetch(`${origin}/api/v1/console/sso/callback?code=abc&state=${state}x`, {
    headers: { cookie },
    redirect: 'manual',
  })
  expect(decodeURIComponent(tampered.headers.get('location')!)).toMatch(/not begun in this browser/)
  // The right state with a code the issuer never gave: refused, and the flow is spent.
  const badCode = await fetch(`${origin}/api/v1/console/sso/callback?code=abc&state=${state}`, {
    headers: { cookie },
    redirect: 'manual',
  })
  expect(decodeURIComponent(badCode.headers.get('location')!)).toMatch(/could not be verified/)
  const again = await fetch(`${origin}/api/v1/console/sso/callback?code=abc&state=${state}`, {
    headers: { cookie },
    redirect: 'manual',
  })
  expect(decodeURIComponent(again.headers.get('location')!)).toMatch(/expired or was already used/)
})

describeNeeding(['chromium'], 'in Chromium, through the issuer’s own sign-in pages', () => {
  beforeAll(async () => {
    browser = await chromium.launch({
      executablePath: chromiumPath(),
      args: ['--headless', '--no-sandbox', '--disable-gpu'],
    })
  })

  /** Signs in through the issuer as `login`; the page ends back at the console. */
  async function signInAs(login: string): Promise<Page> {
    const page = await (await browser.newContext({ bypassCSP: true })).newPage()
    await page.goto(`${origin}/console/`)
    await page.getByRole('link', { name: 'Sign in with Test IdP' }).click()
    // oidc-provider's development login form, then its consent page.
    await page.locator('input[name="login"]').fill(login)
    await page.locator('input[name="password"]').fill('any')
    await page.locator('button[type="submit"]').click()
    const consent = page.locator('button[type="submit"]', { hasText: /continue/i })
    if (await consent.isVisible({ timeout: 5_000 }).catch(() => false)) await consent.click()
    await page.waitForURL(new RegExp(`^${origin}/console/`))
    return page
  }

  it('signs an admin in as themselves: every page their role allows, governance and the audit log among them', async () => {
    const page = await signInAs('alice@example.com')
    await page.getByText('Alice@Example.com · admin').waitFor()
    for (const name of ['Interns', 'API keys', 'Spend', 'Governance', 'Audit log'])
      await page.getByRole('link', { name, exact: true }).waitFor()
    // One session: the intern routes and the management routes alike.
    const reads = await page.evaluate(async () => {
      const get = (p: string) => fetch(`/api/v1/${p}`).then((r) => r.status)
      return {
        interns: await get('interns'),
        keys: await get('keys?kind=all'),
        workspaces: await get('workspaces'),
        audit: await get('audit-log'),
      }
    })
    expect(reads).toEqual({ interns: 200, keys: 200, workspaces: 200, audit: 200 })
    expect(await page.context().cookies()).toContainEqual(
      expect.objectContaining({ name: 'roster_session', httpOnly: true, sameSite: 'Strict' }),
    )
    // The sign-in is in the audit log, by whom and how.
    await page.getByRole('link', { name: 'Audit log', exact: true }).click()
    await page
      .getByRole('row', { name: /session\.sign_in/ })
      .first()
      .waitFor()
    expect(await axeViolations(page)).toEqual([])
    await page.close()
  })

  it('signs a member in to their own keys and spend, and no governance', async () => {
    const page = await signInAs('bob@example.com')
    await page.getByText('bob@example.com · member').waitFor()
    await page.getByRole('link', { name: 'My keys' }).waitFor()
    expect(await page.getByRole('link', { name: 'Governance' }).count()).toBe(0)
    const reads = await page.evaluate(async () => {
      const get = (p: string) => fetch(`/api/v1/${p}`).then(async (r) => ({ status: r.status, body: await r.json() }))
      return {
        keys: await get('keys?kind=all'),
        workspaces: (await get('workspaces')).status,
        audit: (await get('audit-log')).status,
        credits: (await get('credits')).status,
      }
    })
    expect(reads.workspaces).toBe(401)
    expect(reads.audit).toBe(401)
    expect(reads.credits).toBe(200)
    // Their keys only: the console key their sessions act as, none of the tenant's.
    expect(reads.keys.status).toBe(200)
    expect((reads.keys.body as { data: { name: string }[] }).data.map((k) => k.name)).toEqual([
      'console: bob@example.com',
    ])
    // A key made in the page is theirs.
    const made = await page.evaluate(async () =>
      fetch('/api/v1/keys', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-roster-console': '1' },
        body: JSON.stringify({ name: 'bob laptop' }),
      }).then((r) => r.status),
    )
    expect(made).toBe(201)
    const row = await env.t.db.apiKey.findFirstOrThrow({ where: { name: 'bob laptop' } })
    expect(row.userId).toBe(people.bob)

    // Disabled by an admin (through the API): their session ends at once.
    const off = await fetch(`${origin}/api/v1/organization/members/${people.bob}`, {
      method: 'PATCH',
      headers: management(),
      body: JSON.stringify({ disabled: true }),
    })
    expect(off.status).toBe(200)
    expect(await off.json()).toMatchObject({ data: { id: people.bob, disabled: true } })
    const after = await page.evaluate(() => fetch('/api/v1/interns').then((r) => r.status))
    expect(after).toBe(401)
    await page.close()
  })

  it('refuses a stranger, a disabled member and an e-mail the issuer does not vouch for, saying why', async () => {
    for (const [login, why] of [
      ['dave@example.com', 'dave@example.com is not a member here'],
      ['carol@example.com', 'carol@example.com is disabled here'],
      ['eve@example.com', 'does not say eve@example.com is verified'],
    ] as const) {
      const page = await signInAs(login)
      await page.getByRole('alert').getByText(why).waitFor()
      expect((await page.context().cookies()).some((c) => c.name === 'roster_session')).toBe(false)
      // The address no longer carries the refusal (a reload does not show it again).
      expect(page.url()).not.toContain('sso_error')
      await page.close()
    }
    const refused = await env.t.db.auditEvent.findMany({ where: { action: 'session.sign_in_refused' } })
    expect(refused.map((e) => e.actorId)).toEqual([people.carol])
  })
})

it('audits member changes with who, before and after, and keeps the last admin an admin', async () => {
  const res = await fetch(`${origin}/api/v1/organization/members/${people.alice}`, {
    method: 'PATCH',
    headers: management(),
    body: JSON.stringify({ role: 'org:member' }),
  })
  expect(res.status).toBe(409)
  expect(await res.json()).toMatchObject({ error: { metadata: { reason: 'last_admin' } } })
  const made = await fetch(`${origin}/api/v1/organization/members`, {
    method: 'POST',
    headers: management(),
    body: JSON.stringify({ email: 'frank@example.com', role: 'org:admin' }),
  })
  expect(made.status).toBe(201)
  const frank = ((await made.json()) as { data: { id: string } }).data.id
  const dup = await fetch(`${origin}/api/v1/organization/members`, {
    method: 'POST',
    headers: management(),
    body: JSON.stringify({ email: 'FRANK@example.com' }),
  })
  expect(dup.status).toBe(409)
  const demote = await fetch(`${origin}/api/v1/organization/members/${frank}`, {
    method: 'PATCH',
    headers: management(),
    body: JSON.stringify({ role: 'org:member' }),
  })
  expect(demote.status).toBe(200)
  const log = (await (
    await fetch(`${origin}/api/v1/audit-log?action=member&target_id=${frank}`, { headers: management() })
  ).json()) as {
    data: { action: string; actor: { type: string }; before: { role: string }; after: { role: string } }[]
  }
  expect(log.data).toEqual([
    expect.objectContaining({
      action: 'member.update',
      request: { role: 'org:member' },
      actor: expect.objectContaining({ type: 'key' }),
      before: expect.objectContaining({ role: 'org:admin' }),
      after: expect.objectContaining({ role: 'org:member' }),
    }),
    expect.objectContaining({
      action: 'member.create',
      before: null,
      after: expect.objectContaining({ role: 'org:admin' }),
    }),
  ])
  // The family filter takes an action exactly too; a non-manager reads none of it.
  const created = (await (
    await fetch(`${origin}/api/v1/audit-log?action=member.create`, { headers: management() })
  ).json()) as { data: { target: { id: string } }[] }
  expect(created.data.map((e) => e.target.id)).toEqual([frank])
  const user = await fetch(`${origin}/api/v1/audit-log`, {
    headers: { authorization: `Bearer ${env.tenant.keys.user}` },
  })
  expect(user.status).toBe(401)
  // Never edited: the database itself refuses.
  await expect(env.t.db.auditEvent.updateMany({ data: { action: 'x' } })).rejects.toThrow(/never changed/)
})
