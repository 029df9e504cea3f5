import { afterAll, beforeAll, expect, it } from 'vitest'
import { chromium, type Browser, type Page } from 'playwright-core'
import {
  chromiumPath,
  describeNeeding,
  freePort,
  generationRecord,
  startOidcIdp,
  useTestTenant,
  waitFor,
  type OidcIdp,
} from '@roster/testing'
import { createUser } from '@roster/shared'
import { insertGenerations } from '@roster/shared/repositories'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import type { GenerationDrain } from '../../worker/src/generation-drain.js'
import { buildTestApp, simEndpoint, simModel, startDrain } from './helpers.js'
import { axeViolations } from './console-helpers.js'

// Single sign-on to the console (issue 59): a real OpenID Connect issuer (oidc-provider, its own
// process) vouches for a person by e-mail; Roster signs in the member with that e-mail, as their role
// allows (an admin governs and reads the audit log, a member sees their own keys and spend), in one
// session. Refused: a stranger, a disabled member, an e-mail the issuer does not vouch for, a state
// the browser did not begin, a callback used twice. Every sign-in and member change is audited.
const env = useTestTenant()
let app: Awaited<ReturnType<typeof buildTestApp>>
let idp: OidcIdp
let sim: Simulator
let drain: GenerationDrain
const prefix = `{t-sso-${Date.now()}}`
let browser: Browser
let origin: string
const people: Record<string, string> = {}

beforeAll(async () => {
  const port = await freePort()
  origin = `http://127.0.0.1:${port}`
  sim = await startSimulator({ replyTokens: 12 })
  idp = await startOidcIdp({
    redirectUris: [`${origin}/api/v1/console/sso/callback`],
    unverified: ['eve@example.com'],
  })
  app = await buildTestApp(
    env.t.db,
    {
      OIDC_ISSUER: idp.issuer,
      OIDC_CLIENT_ID: idp.clientId,
      OIDC_CLIENT_SECRET: idp.clientSecret,
      OIDC_ALLOW_HTTP: 'true',
      OIDC_DISPLAY_NAME: 'Test IdP',
      QUEUE_PREFIX: prefix,
    },
    // Two models for the playground (and a provider to give a key for).
    {
      models: [
        simModel('sim/chat', [simEndpoint(sim.url, 'openai-chat')]),
        simModel('sim/claude', [simEndpoint(sim.url, 'anthropic-messages')]),
      ],
    },
  )
  await app.listen({ port, host: '127.0.0.1' })
  drain = startDrain(env.t.db, env.t.url, prefix)
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
  await drain?.stop()
  await app?.closeAll()
  await idp?.stop()
  await sim?.close()
})

const management = () => ({ authorization: `Bearer ${env.tenant.keys.management}`, 'content-type': 'application/json' })

it('says whether single sign-on is offered, and what it is called, before anyone signs in', async () => {
  const res = await fetch(`${origin}/api/v1/console/sso`)
  expect(await res.json()).toEqual({ enabled: true, name: 'Test IdP' })
})

/** Why a callback was refused, as the sign-in page will show it (a cookie of Roster's, never the address). */
const refusalOf = (res: Response) => {
  expect(res.headers.get('location')).toBe('../../../../console/')
  const cookie = res.headers.getSetCookie().find((c) => c.startsWith('roster_sso_error='))!
  expect(cookie).toMatch(/; Max-Age=60; Path=\/; SameSite=Lax$/)
  return decodeURIComponent(cookie.split(';')[0]!.slice('roster_sso_error='.length))
}

it('refuses a callback whose state this browser did not begin, and one used twice', async () => {
  // No cookie at all: a forged or tampered state.
  const forged = await fetch(`${origin}/api/v1/console/sso/callback?code=abc&state=forged`, { redirect: 'manual' })
  expect(forged.status).toBe(302)
  expect(refusalOf(forged)).toMatch(/^this sign-in was not begun in this browser/)
  expect(forged.headers.get('set-cookie')).not.toContain('roster_session=')
  // A flow begun, then its state changed on the way back.
  const start = await fetch(`${origin}/api/v1/console/sso/start`, { redirect: 'manual' })
  expect(start.status).toBe(302)
  const toIdp = new URL(start.headers.get('location')!)
  expect(toIdp.origin).toBe(idp.issuer)
  expect(toIdp.searchParams.get('code_challenge_method')).toBe('S256')
  const flowCookie = start.headers.get('set-cookie')!
  expect(flowCookie).toMatch(/roster_sso=[^;]+; Max-Age=600; Path=\/; HttpOnly; SameSite=Lax/)
  const cookie = flowCookie.split(';')[0]!
  const state = toIdp.searchParams.get('state')!
  const tampered = await fetch(`${origin}/api/v1/console/sso/callback?code=abc&state=${state}x`, {
    headers: { cookie },
    redirect: 'manual',
  })
  expect(refusalOf(tampered)).toMatch(/not begun in this browser/)
  // The right state with a code the issuer never gave: refused, and the flow is spent.
  const badCode = await fetch(`${origin}/api/v1/console/sso/callback?code=abc&state=${state}`, {
    headers: { cookie },
    redirect: 'manual',
  })
  expect(refusalOf(badCode)).toMatch(/could not be verified/)
  const again = await fetch(`${origin}/api/v1/console/sso/callback?code=abc&state=${state}`, {
    headers: { cookie },
    redirect: 'manual',
  })
  expect(refusalOf(again)).toMatch(/expired or was already used/)
  // Beginning sign-ins is bounded per address (each keeps a flow in Redis for ten minutes): on an
  // API of its own, so this test's browser is not held back.
  const other = await buildTestApp(env.t.db, {
    OIDC_ISSUER: idp.issuer,
    OIDC_CLIENT_ID: idp.clientId,
    OIDC_ALLOW_HTTP: 'true',
  })
  try {
    const otherOrigin = await other.listen({ port: 0, host: '127.0.0.1' })
    const statuses: number[] = []
    for (let i = 0; i < 35; i++)
      statuses.push((await fetch(`${otherOrigin}/api/v1/console/sso/start`, { redirect: 'manual' })).status)
    expect(statuses.slice(0, 30).every((s) => s === 302)).toBe(true)
    expect(statuses.slice(30)).toEqual([429, 429, 429, 429, 429])
  } finally {
    await other.closeAll()
  }
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

  it('lets an admin make every governance change in the page, each seen through the API and in the audit log', async () => {
    const page = await signInAs('alice@example.com')
    page.on('dialog', (d) => void d.accept())
    const get = async (path: string) =>
      ((await (await fetch(`${origin}/api/v1/${path}`, { headers: management() })).json()) as { data: any }).data
    await page.getByRole('link', { name: 'Governance', exact: true }).click()
    await page.getByRole('heading', { name: 'Governance', level: 1 }).waitFor()

    // Members: added by e-mail, made an admin (and back with Undo), disabled after confirming.
    const addMember = page.getByRole('form', { name: 'Add a member' })
    await addMember.getByLabel('E-mail').fill('grace@example.com')
    await addMember.getByRole('button', { name: 'Add member' }).click()
    await page.getByRole('row', { name: /grace@example.com/ }).waitFor()
    const grace = ((await get('organization/members?limit=100')) as { id: string; email: string }[]).find(
      (m) => m.email === 'grace@example.com',
    )!
    await page.getByLabel('Role of grace@example.com').selectOption('org:admin')
    await page.getByText('grace@example.com is now an admin.').waitFor()
    expect((await get(`organization/members/${grace.id}`)).role).toBe('org:admin')
    await page.getByRole('button', { name: 'Undo' }).click()
    await page.getByText('Undone.').waitFor()
    expect((await get(`organization/members/${grace.id}`)).role).toBe('org:member')
    await page.getByRole('button', { name: 'Disable grace@example.com' }).click()
    await page.getByRole('button', { name: 'Enable grace@example.com' }).waitFor()
    expect((await get(`organization/members/${grace.id}`)).disabled).toBe(true)

    // A workspace, its budget (removed, then put back with Undo) and a member.
    const makeWorkspace = page.getByRole('form', { name: 'Make a workspace' })
    await makeWorkspace.getByLabel('Name').fill('Research Lab')
    await makeWorkspace.getByRole('button', { name: 'Make workspace' }).click()
    await page.getByRole('link', { name: 'Research Lab' }).click()
    await page.getByRole('heading', { name: 'Research Lab', level: 1 }).waitFor()
    const research = ((await get('workspaces')) as { id: string; slug: string }[]).find(
      (w) => w.slug === 'research-lab',
    )!
    expect(research).toBeDefined()
    const budget = page.getByRole('form', { name: 'Set a budget' })
    await budget.getByLabel('Limit (USD)').fill('25')
    await budget.getByRole('button', { name: 'Set budget' }).click()
    await page.getByRole('table', { name: 'Budgets' }).getByText('$25').waitFor()
    expect(await get(`workspaces/${research.id}/budgets`)).toEqual([
      expect.objectContaining({ limit_usd: 25, reset_interval: 'monthly' }),
    ])
    await page.getByRole('button', { name: 'Remove the monthly budget' }).click()
    await page.getByText('The monthly budget is removed.').waitFor()
    expect(await get(`workspaces/${research.id}/budgets`)).toEqual([])
    await page.getByRole('button', { name: 'Undo' }).click()
    await page.getByRole('table', { name: 'Budgets' }).getByText('$25').waitFor()
    expect(await get(`workspaces/${research.id}/budgets`)).toHaveLength(1)
    const addToWorkspace = page.getByRole('form', { name: 'Add a member to the workspace' })
    await addToWorkspace.getByLabel('Member').selectOption({ label: 'Alice@Example.com' })
    await addToWorkspace.getByRole('button', { name: 'Add to workspace' }).click()
    await page
      .getByRole('table', { name: 'Workspace members' })
      .getByRole('cell', { name: 'Alice@Example.com', exact: true })
      .waitFor()
    expect((await get(`workspaces/${research.id}/members`)).map((m: { user_id: string }) => m.user_id)).toContain(
      people.alice,
    )
    expect(await axeViolations(page)).toEqual([])

    // A guardrail, a provider key (its value never shown again) and a destination, each removed or disabled.
    await page.getByRole('link', { name: 'Governance' }).first().click()
    const makeGuardrail = page.getByRole('form', { name: 'Make a guardrail' })
    await makeGuardrail.getByLabel('Name').fill('careful')
    await makeGuardrail.getByLabel('Spend limit (USD)').fill('10')
    await makeGuardrail.getByLabel('Resets').selectOption('monthly')
    await makeGuardrail.getByLabel(/Models allowed/).fill('sim/chat')
    await makeGuardrail.getByRole('button', { name: 'Make guardrail' }).click()
    await page.getByRole('table', { name: 'Guardrails' }).getByText('$10 monthly').waitFor()
    expect(await get('guardrails')).toEqual([
      expect.objectContaining({
        name: 'careful',
        limit_usd: 10,
        reset_interval: 'monthly',
        allowed_models: ['sim/chat'],
      }),
    ])
    const addKey = page.getByRole('form', { name: 'Add a provider key' })
    await addKey.getByLabel('Provider').selectOption('upstream-sim')
    await addKey.getByLabel('Key').fill('sk-provider-typed-in-the-page-0123456789')
    await addKey.getByLabel('Name').fill('ours')
    await addKey.getByRole('button', { name: 'Add provider key' }).click()
    await page.getByRole('button', { name: 'Disable ours' }).click()
    await page.getByRole('button', { name: 'Enable ours' }).waitFor()
    expect(await get('byok')).toEqual([expect.objectContaining({ name: 'ours', disabled: true })])
    expect(await page.content()).not.toContain('sk-provider-typed-in-the-page')
    // The guardrail changed in place, and given to a member and a key (until then it binds no one).
    await page.getByText('Change careful').click()
    const change = page.getByRole('form', { name: 'Change careful' })
    await change.getByLabel(/Spend limit/).fill('12')
    await change.getByRole('button', { name: 'Save careful' }).click()
    await page.getByText('Guardrail careful saved.').waitFor()
    expect((await get('guardrails'))[0]).toMatchObject({ limit_usd: 12, reset_interval: 'monthly' })
    const toMember = page.getByRole('form', { name: 'Assign careful to a member' })
    await toMember.getByLabel('Member').selectOption({ label: 'bob@example.com' })
    await toMember.getByRole('button', { name: 'Assign to the member' }).click()
    await page.getByRole('button', { name: 'Unassign bob@example.com' }).waitFor()
    const toKey = page.getByRole('form', { name: 'Assign careful to a key' })
    // The tenant's own user key (not a person's console key: the playground below runs as Alice).
    const tenantKey = Buffer.from(
      (await env.t.db.apiKey.findFirstOrThrow({ where: { userId: env.tenant.userId, kind: 'user' } })).hash,
    ).toString('hex')
    await toKey.getByLabel('Key').selectOption(tenantKey)
    await toKey.getByRole('button', { name: 'Assign to the key' }).click()
    await page.getByText('careful binds the key from now on.').waitFor()
    const careful = (await get('guardrails'))[0].id as string
    expect((await get(`guardrails/${careful}/assignments/members`)).map((a: { user_id: string }) => a.user_id)).toEqual(
      [people.bob],
    )
    expect(await get(`guardrails/${careful}/assignments/keys`)).toHaveLength(1)
    // The provider key renamed and rotated (the new value never shown).
    await page.getByText('Change ours').click()
    const rotate = page.getByRole('form', { name: 'Change ours' })
    await rotate.getByLabel(/New key/).fill('sk-provider-rotated-in-the-page-9876543210')
    await rotate.getByRole('button', { name: 'Save ours' }).click()
    await page.getByText('ours rotated: calls use the new key from now on.').waitFor()
    expect(await page.content()).not.toContain('sk-provider-rotated-in-the-page')
    // A workspace renamed, its default model chosen from the catalogue; then Undo.
    await page.getByText('Change Research Lab').click()
    const rename = page.getByRole('form', { name: 'Change Research Lab' })
    await rename.getByLabel('Name').fill('Research')
    await rename.getByLabel('Default model').fill('sim/chat')
    await rename.getByRole('button', { name: 'Save Research Lab' }).click()
    await page.getByText('Workspace Research saved.').waitFor()
    expect(await get(`workspaces/${research.id}`)).toMatchObject({ name: 'Research', default_text_model: 'sim/chat' })
    await page
      .getByRole('status')
      .filter({ hasText: 'Workspace Research saved.' })
      .getByRole('button', { name: 'Undo' })
      .click()
    await page.getByText('Undone.').waitFor()
    expect(await get(`workspaces/${research.id}`)).toMatchObject({ name: 'Research Lab', default_text_model: null })
    expect(await axeViolations(page)).toEqual([])
    const addDestination = page.getByRole('form', { name: 'Add a destination' })
    await addDestination.getByLabel('Name').fill('hook')
    await addDestination.getByLabel('URL').fill('https://hooks.example/roster')
    await addDestination.getByLabel('Authorization header').fill('Bearer receiver-secret-123')
    await addDestination.getByRole('button', { name: 'Add destination' }).click()
    await page.getByRole('button', { name: 'Delete hook' }).click()
    await page.getByText('Destination hook deleted.').waitFor()
    expect(await get('observability/destinations')).toEqual([])
    await page.getByRole('button', { name: 'Delete careful' }).click()
    await page.getByText('Guardrail careful deleted.').waitFor()
    expect(await get('guardrails')).toEqual([])
    expect(await axeViolations(page)).toEqual([])

    // Every change is Alice's, through the console, in the audit log.
    const log = (await get('audit-log?limit=200')) as { action: string; via: string; actor: { label: string } }[]
    const hers = log.filter((e) => e.actor.label === 'Alice@Example.com' && e.via === 'console').map((e) => e.action)
    for (const action of [
      'member.create',
      'member.update',
      'workspace.create',
      'budget.set',
      'budget.delete',
      'workspace.members_add',
      'guardrail.create',
      'guardrail.update',
      'guardrail.members_assign',
      'guardrail.keys_assign',
      'guardrail.delete',
      'workspace.update',
      'provider_key.create',
      'provider_key.update',
      'destination.create',
      'destination.delete',
    ])
      expect(hers, action).toContain(action)
    expect(JSON.stringify(log)).not.toContain('receiver-secret-123')
    expect(JSON.stringify(log)).not.toContain('sk-provider-rotated-in-the-page')
    await page.close()
  })

  it('asks two models side by side in the playground, as the person, and saves the first as a preset', async () => {
    const page = await signInAs('alice@example.com')
    await page.getByRole('link', { name: 'Playground', exact: true }).click()
    const ask = page.getByRole('form', { name: 'Ask the models' })
    await ask.getByLabel('Model', { exact: true }).fill('sim/chat')
    await ask.getByLabel('Second model (optional)').fill('sim/claude')
    await ask.getByLabel('Instructions').fill('Answer briefly.')
    await ask.getByLabel('Prompt').fill('Say something.')
    await ask.getByRole('button', { name: 'Send' }).click()
    for (const model of ['sim/chat', 'sim/claude']) {
      const answer = page.getByRole('article', { name: `Answer of ${model}` })
      await answer.getByText(/ in · \d+ out · \$[\d.]+ · first token \d+ ms · \d+ ms/).waitFor()
      expect((await answer.locator('.answer').textContent())!.length).toBeGreaterThan(0)
    }
    // Both calls are the person's: their console key, their member.
    await waitFor(async () => (await env.t.db.generation.count({ where: { userId: people.alice } })) === 2, {
      what: 'the two calls to be recorded',
    })
    const calls = await env.t.db.generation.findMany({ where: { userId: people.alice } })
    expect(calls.map((g) => g.model).sort()).toEqual(['sim/chat', 'sim/claude'])
    expect(await axeViolations(page)).toEqual([])

    const save = page.getByRole('form', { name: 'Save as a preset' })
    await save.getByLabel('Preset slug').fill('brief')
    await save.getByRole('button', { name: /Save the first model/ }).click()
    await page.getByText(/Saved as the preset brief/).waitFor()
    const preset = (await (await fetch(`${origin}/api/v1/presets/brief`, { headers: management() })).json()) as {
      data: { designated_version: { config: { model: string }; system_prompt: string } }
    }
    expect(preset.data.designated_version).toMatchObject({
      config: { model: 'sim/chat' },
      system_prompt: 'Answer briefly.',
    })
    // The presets page lists it, with its version's settings.
    await page.getByRole('link', { name: 'Presets', exact: true }).click()
    const listed = page.getByRole('row', { name: /brief/ })
    await listed.getByText('Versions').click()
    await listed.getByText(/version 1 \(in use\): .*"model":"sim\/chat"/).waitFor()
    await page.close()
  })

  it('signs a member in to their own keys and spend, and no governance', async () => {
    const page = await signInAs('bob@example.com')
    await page.getByText('bob@example.com · member').waitFor()
    await page.getByRole('link', { name: 'My keys' }).waitFor()
    // Their own spend, and the account's credits it draws on.
    await page.getByRole('link', { name: 'My spend' }).click()
    await page.getByText(/The account’s credits: \$[\d.]+ used \(no limit granted\)/).waitFor()
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
    // Nobody else's: another member's key is not found, another workspace is refused, another
    // member's spend is not summed (their calls are filtered out whatever the query asks).
    const theirs = Buffer.from(
      (await env.t.db.apiKey.findFirstOrThrow({ where: { userId: env.tenant.userId, kind: 'user' } })).hash,
    ).toString('hex')
    // Alice has a call of her own, whatever ran before: a member's sum must leave it out.
    await insertGenerations(env.t.db, [
      generationRecord({
        id: `alice-${Date.now()}`,
        account_id: env.tenant.accountId,
        workspace_id: env.tenant.workspaceId,
        user_id: people.alice,
        cost_pico: '1000000',
      }),
    ])
    const elsewhere = await env.t.db.workspace.create({
      data: { accountId: env.tenant.accountId, slug: 'elsewhere', name: 'Elsewhere' },
    })
    const probes = await page.evaluate(
      async ({ theirs, elsewhere, alice }) => {
        const send = (method: string, path: string, body?: unknown) =>
          fetch(`/api/v1/${path}`, {
            method,
            headers: { 'content-type': 'application/json', 'x-roster-console': '1' },
            body: body === undefined ? undefined : JSON.stringify(body),
          }).then(async (r) => ({ status: r.status, body: await r.json().catch(() => null) }))
        return {
          patch: (await send('PATCH', `keys/${theirs}`, { disabled: true })).status,
          limits: (await send('GET', `keys/${theirs}/limits`)).status,
          elsewhere: (await send('POST', 'keys', { name: 'x', workspace_id: elsewhere })).status,
          forSomeoneElse: (await send('POST', 'keys', { name: 'x', creator_user_id: alice })).status,
          members: (await send('GET', 'organization/members')).status,
          spend: (
            await send('POST', 'analytics/query', {
              metrics: ['request_count'],
              filters: [{ field: 'user', operator: 'eq', value: alice }],
            })
          ).body,
          activity: (await send('GET', `activity?user_id=${alice}`)).status,
        }
      },
      { theirs, elsewhere: elsewhere.id, alice: people.alice },
    )
    expect(probes).toMatchObject({
      patch: 404,
      limits: 404,
      elsewhere: 403,
      forSomeoneElse: 403,
      members: 401,
      activity: 403,
    })
    // Nothing counted: none of the account's calls are this member's and another's at once.
    expect(probes.spend.data.data).toEqual([{ request_count: null }])

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
      // Shown once: the cookie that carried it is gone (a reload does not show it again).
      expect((await page.context().cookies()).some((c) => c.name === 'roster_sso_error')).toBe(false)
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
  // A disabled member's keys stop at once; enabled again, they work again.
  const asMember = () => fetch(`${origin}/api/v1/key`, { headers: { authorization: `Bearer ${env.tenant.keys.user}` } })
  expect((await asMember()).status).toBe(200)
  const member = (disabled: boolean) =>
    fetch(`${origin}/api/v1/organization/members/${env.tenant.userId}`, {
      method: 'PATCH',
      headers: management(),
      body: JSON.stringify({ disabled }),
    })
  expect((await member(true)).status).toBe(200)
  expect((await asMember()).status).toBe(401)
  expect((await member(false)).status).toBe(200)
  expect((await asMember()).status).toBe(200)
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
