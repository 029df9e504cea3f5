import { afterAll, beforeAll, expect, it } from 'vitest'
import { chromium, type Browser, type Page } from 'playwright-core'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import { chromiumPath, describeNeeding, useTestTenant } from '@roster/testing'
import { buildTestApp, simEndpoint, simModel } from './helpers.js'
import { axeViolations } from './console-helpers.js'

// Every page of the console, as each kind of session sees it, in light and dark, on a desktop and on
// a phone: axe's WCAG 2 A and AA rules find nothing (issue 59's finish). And the console used by
// keyboard alone: the pages reached by Tab and Enter, focus always visible, a change made and undone.
const env = useTestTenant()
const OPERATOR_TOKEN = 'operator-token-for-the-a11y-test-0123456789'
let app: Awaited<ReturnType<typeof buildTestApp>>
let sim: Simulator
let browser: Browser
let origin: string

beforeAll(async () => {
  sim = await startSimulator({ replyTokens: 6 })
  app = await buildTestApp(
    env.t.db,
    { OPERATOR_TOKEN },
    { models: [simModel('sim/chat', [simEndpoint(sim.url, 'openai-chat')])] },
  )
  origin = await app.listen({ port: 0, host: '127.0.0.1' })
  // Something on each page: an intern, a guardrail, a budget, a call (and so its audit events).
  const as = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' })
  const send = (key: string, method: string, path: string, body: unknown) =>
    fetch(`${origin}/api/v1/${path}`, { method, headers: as(key), body: JSON.stringify(body) })
  await send(env.tenant.keys.user, 'POST', 'interns', { name: 'shown' })
  await send(env.tenant.keys.management, 'POST', 'guardrails', { name: 'careful', limit_usd: 5 })
  await send(env.tenant.keys.management, 'PUT', `workspaces/${env.tenant.workspaceId}/budgets/monthly`, {
    limit_usd: 50,
  })
  await send(env.tenant.keys.user, 'POST', 'responses', { model: 'sim/chat', input: 'hello' })
  // The account's admin (so another member may be made one and back).
  await env.t.db.user.update({
    where: { id: env.tenant.userId },
    data: { role: 'org:admin', email: 'admin@example.com' },
  })
})
afterAll(async () => {
  await browser?.close()
  await app?.closeAll()
  await sim?.close()
})

/** Each kind of session, and the pages its header offers. */
const SESSIONS = [
  { who: 'user key', key: () => env.tenant.keys.user, home: 'Interns' },
  { who: 'management key', key: () => env.tenant.keys.management, home: 'API keys' },
  { who: 'operator', key: () => OPERATOR_TOKEN, home: 'Fleet' },
]

async function signIn(page: Page, key: string, home: string) {
  await page.goto(`${origin}/console/`)
  await page.getByLabel('API key').fill(key)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('heading', { name: home, level: 1 }).waitFor()
}

await describeNeeding(['chromium'], 'the console’s every page', () => {
  beforeAll(async () => {
    browser = await chromium.launch({
      executablePath: chromiumPath(),
      args: ['--headless', '--no-sandbox', '--disable-gpu'],
    })
  })

  // One test per session and screen: each reads some twenty pages twice (light, dark) with axe, a
  // minute's work on a loaded two-core machine.
  for (const { who, key, home } of SESSIONS)
    for (const viewport of [
      { name: 'desktop', width: 1280, height: 800 },
      { name: 'phone', width: 390, height: 844 },
    ])
      it(`passes axe on every page of a ${who}'s session on a ${viewport.name}, light and dark`, async () => {
        const found: string[] = []
        const context = await browser.newContext({
          bypassCSP: true,
          viewport: { width: viewport.width, height: viewport.height },
        })
        const page = await context.newPage()
        await signIn(page, key(), home)
        const pages = await page.getByRole('navigation', { name: 'Pages' }).getByRole('link').allTextContents()
        expect(pages.length).toBeGreaterThan(0)
        for (const name of pages) {
          await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name, exact: true }).click()
          await page.getByRole('heading', { level: 1 }).first().waitFor()
          // Whatever the page reads, read (no "Loading…" left).
          await page.waitForFunction(() => !document.querySelector('[aria-busy="true"]'), undefined, {
            timeout: 10_000,
          })
          for (const colorScheme of ['light', 'dark'] as const) {
            await page.emulateMedia({ colorScheme })
            for (const v of await axeViolations(page)) found.push(`${name} (${colorScheme}, ${viewport.width}px): ${v}`)
          }
          await page.emulateMedia({ colorScheme: 'light' })
        }
        await context.close()
        expect(found).toEqual([])
      }, 120_000)

  it('is usable by keyboard alone: pages reached with Tab and Enter, focus visible, a change made and undone', async () => {
    const page = await (await browser.newContext()).newPage()
    await page.goto(`${origin}/console/`)
    await page.getByLabel('API key').waitFor()
    // Sign in without the mouse: the key's field is reached by Tab.
    await page.keyboard.press('Tab')
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('key')
    await page.keyboard.type(env.tenant.keys.management)
    await page.keyboard.press('Enter')
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor()
    // Tab to the Governance link; its focus ring shows.
    let reached = false
    for (let i = 0; i < 30 && !reached; i++) {
      await page.keyboard.press('Tab')
      reached = await page.evaluate(() => document.activeElement?.textContent === 'Governance')
    }
    expect(reached).toBe(true)
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle)
    expect(outline).toBe('solid')
    await page.keyboard.press('Enter')
    await page.getByRole('heading', { name: 'Governance', level: 1 }).waitFor()
    // A member added by keyboard alone.
    await page.getByRole('form', { name: 'Add a member' }).getByLabel('E-mail').focus()
    await page.keyboard.type('kim@example.com')
    await page.keyboard.press('Enter')
    await page.getByText('kim@example.com added').waitFor()
    // Her role changed with the keyboard (a select takes arrow keys), then undone.
    await page.getByLabel('Role of kim@example.com').focus()
    await page.getByLabel('Role of kim@example.com').selectOption('org:admin')
    await page.getByText('kim@example.com is now an admin.').waitFor()
    let onUndo = false
    for (let i = 0; i < 10 && !onUndo; i++) {
      await page.keyboard.press('Shift+Tab')
      onUndo = await page.evaluate(() => document.activeElement?.textContent === 'Undo')
    }
    expect(onUndo).toBe(true)
    await page.keyboard.press('Enter')
    await page.getByText('Undone.').waitFor()
    const kim = await env.t.db.user.findFirstOrThrow({ where: { email: 'kim@example.com' } })
    expect(kim.role).toBe('org:member')
    await page.close()
  })
})
