import { afterAll, beforeAll, expect, it } from 'vitest'
import { createServer, request, type Server } from 'node:http'
import { chromium, type Browser, type Page } from 'playwright-core'
import { chromiumPath, describeNeeding, freePort, makeTenant, useTestTenant, waitFor } from '@roster/testing'
import { buildTestApp } from './helpers.js'
import { axeViolations } from './console-helpers.js'

// The web console in a real browser (Debian's Chromium through playwright-core), served by the API
// from its build under /console/: static files cached as they should be, behind a Content Security
// Policy; signing in with a key (which then lives nowhere in the page), the member's interns shown
// as text (markup in a server's text stays inert), signing out; and the same under a proxy's path
// prefix.
const env = useTestTenant()
let app: Awaited<ReturnType<typeof buildTestApp>>
let browser: Browser
let origin: string
let proxy: Server
let proxied: string

beforeAll(async () => {
  const port = await freePort()
  app = await buildTestApp(env.t.db, {})
  await app.listen({ port, host: '127.0.0.1' })
  origin = `http://127.0.0.1:${port}`
  // A reverse proxy that serves Roster under /roster/ (the prefix stripped, the Host kept).
  proxy = createServer((req, res) => {
    if (!req.url?.startsWith('/roster/')) return res.writeHead(404).end()
    const upstream = request(
      { host: '127.0.0.1', port, path: req.url.slice('/roster'.length), method: req.method, headers: req.headers },
      (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers)
        r.pipe(res)
      },
    )
    req.pipe(upstream)
  })
  const proxyPort = await freePort()
  await new Promise<void>((r) => proxy.listen(proxyPort, '127.0.0.1', r))
  proxied = `http://127.0.0.1:${proxyPort}/roster`
})
afterAll(async () => {
  await browser?.close()
  proxy?.closeAllConnections()
  await new Promise((r) => proxy?.close(r))
  await app?.closeAll()
})

it('serves the console with its caching, compression and Content Security Policy', async () => {
  const redirect = await fetch(`${origin}/console`, { redirect: 'manual' })
  expect(redirect.status).toBe(308)
  await redirect.arrayBuffer()
  const index = await fetch(`${origin}/console/`, { headers: { 'accept-encoding': 'br' } })
  expect(index.status).toBe(200)
  expect(index.headers.get('cache-control')).toBe('no-cache')
  expect(index.headers.get('content-security-policy')).toContain("script-src 'self'")
  const html = await index.text()
  const script = /src="\.\/(assets\/[^"]+\.js)"/.exec(html)![1]!
  const asset = await fetch(`${origin}/console/${script}`, { headers: { 'accept-encoding': 'br, gzip' } })
  expect(asset.status).toBe(200)
  expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
  expect(asset.headers.get('content-encoding')).toBe('br')
  await asset.arrayBuffer() // read to its end: an unread body holds its connection open past the test
  // The initial bundle stays within 200 KB gzipped.
  const gz = await fetch(`${origin}/console/${script}`, { headers: { 'accept-encoding': 'gzip' } })
  expect(gz.headers.get('content-encoding')).toBe('gzip')
  // (fetch decompresses the body; the length sent is the compressed one's)
  expect(Number(gz.headers.get('content-length'))).toBeGreaterThan(1000)
  expect(Number(gz.headers.get('content-length'))).toBeLessThan(200 * 1024)
  await gz.arrayBuffer()
})

async function signIn(page: Page, url: string, key: string) {
  await page.goto(`${url}/console/`)
  await page.getByLabel('API key').fill(key)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('heading', { name: 'Interns' }).waitFor()
}

await describeNeeding(['chromium'], 'the web console in a browser', () => {
  beforeAll(async () => {
    browser = await chromium.launch({
      executablePath: chromiumPath(),
      args: ['--headless', '--no-sandbox', '--disable-gpu'],
    })
  })

  it('signs in with a key it then forgets, shows the interns as text, and signs out', async () => {
    const made = await fetch(`${origin}/api/v1/interns`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'shown-in-console' }),
    })
    const id = ((await made.json()) as { id: string }).id
    const markup = '<script>window.pwned=1</script><img src=x onerror="window.pwned=2">'
    await env.t.db.intern.update({ where: { id }, data: { lastFailureMessage: markup } })

    // CSP bypassed for the test's own script (axe) only; the console's pages run under it.
    const page = await (await browser.newContext({ bypassCSP: true })).newPage()
    const errors: string[] = []
    page.on('pageerror', (e) => errors.push(e.message))
    await page.goto(`${origin}/console/`)
    await page.getByLabel('API key').fill('sk-or-v1-not-a-key')
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('alert').getByText('That key is not valid.').waitFor()

    await signIn(page, origin, env.tenant.keys.user)
    const row = page.getByRole('row', { name: /shown-in-console/ })
    await row.waitFor()
    expect(await row.textContent()).toContain(markup)
    expect(await page.evaluate(() => (window as { pwned?: number }).pwned)).toBeUndefined()
    // The key lives nowhere the page can read: not in a cookie script sees, not in storage, not in the DOM.
    const readable = await page.evaluate(() =>
      JSON.stringify([document.cookie, { ...localStorage }, { ...sessionStorage }, document.documentElement.outerHTML]),
    )
    expect(readable).not.toContain(env.tenant.keys.user)
    expect(await page.evaluate(() => document.cookie)).toBe('')
    const cookies = await page.context().cookies()
    expect(cookies.find((c) => c.name === 'roster_session')).toMatchObject({ httpOnly: true, sameSite: 'Strict' })

    // Accessible, as axe checks it (WCAG A and AA rules).
    expect(await axeViolations(page)).toEqual([])

    // Create and start one from the console; delete it after confirming.
    await page.getByLabel('Name', { exact: true }).fill('made-in-console')
    await page.getByRole('button', { name: 'Create and start' }).click()
    await page.getByRole('row', { name: /made-in-console/ }).waitFor()
    const created = await env.t.db.intern.findFirstOrThrow({ where: { name: 'made-in-console' } })
    expect(created.status).toBe('queued')
    page.once('dialog', (d) => void d.accept())
    await page.getByRole('button', { name: 'Delete made-in-console' }).click()
    await waitFor(async () => (await env.t.db.intern.findUnique({ where: { id: created.id } }))?.status !== 'queued', {
      what: 'the delete to be taken',
    })

    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.getByLabel('API key').waitFor()
    expect((await page.context().cookies()).some((c) => c.name === 'roster_session')).toBe(false)
    expect(errors).toEqual([])
    await page.close()
  })

  it("names each page in its title and the workspace by its name, answers the browser's icon, and keeps dark mode's buttons readable", async () => {
    await env.t.db.workspace.update({ where: { id: env.tenant.workspaceId }, data: { name: 'Platform team' } })
    const context = await browser.newContext({ bypassCSP: true, colorScheme: 'dark' })
    const page = await context.newPage()
    const missing: string[] = []
    page.on('response', (r) => r.status() === 404 && missing.push(r.url()))
    await signIn(page, origin, env.tenant.keys.user)
    expect(await page.title()).toBe('Interns · Roster')
    expect(await page.locator('header').textContent()).toContain('user key · Platform team')
    await page.getByRole('link', { name: 'Generations' }).click()
    await page.getByRole('heading', { name: 'Generations', level: 1 }).waitFor()
    expect(await page.title()).toBe('Generations · Roster')
    // The icon the page names, and the one browsers ask the site's root for.
    const icon = await fetch(`${origin}/favicon.ico`)
    expect(icon.status).toBe(200)
    expect(icon.headers.get('content-type')).toMatch(/^image\/svg\+xml/)
    await icon.arrayBuffer()
    expect(missing).toEqual([])
    // A management key's page, in dark mode: its keys (the nameless ones called by their label) and red buttons, axe-clean.
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.getByLabel('API key').fill(env.tenant.keys.management)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('link', { name: 'API keys' }).click()
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor()
    expect(await page.title()).toBe('API keys · Roster')
    const buttons = await page.getByRole('button', { name: /^(Disable|Enable) / }).allTextContents()
    expect(buttons.length).toBeGreaterThan(0)
    for (const name of buttons) expect(name).toMatch(/^(Disable|Enable) \S/)
    expect(await axeViolations(page)).toEqual([])
    await context.close()
  })

  it('goes back to signing in when its session has expired, saying so', async () => {
    const page = await browser.newPage()
    await signIn(page, origin, env.tenant.keys.user)
    await env.t.db.consoleSession.updateMany({
      where: { revokedAt: null, expiresAt: { gt: new Date() } },
      data: { expiresAt: new Date(Date.now() - 1000) },
    })
    // The next call the page makes is refused: the page says why and asks for a key again. (The
    // list's own refresh may make that call first, and the link is gone before it is clicked.)
    const ended = page.getByRole('status').getByText('Your session has ended: sign in again.')
    await Promise.race([
      page
        .getByRole('link', { name: 'Generations' })
        .click()
        .catch(() => {}),
      ended.waitFor(),
    ])
    await ended.waitFor()
    await page.getByLabel('API key').waitFor()
    await signIn(page, origin, env.tenant.keys.user)
    await page.close()
  })

  it('scrolls a list of 10,000 interns with a few dozen rows in the page, reading pages as it nears their end', async () => {
    const many = await makeTenant(env.t.db)
    const base = Date.now()
    await env.t.db.intern.createMany({
      data: Array.from({ length: 10_000 }, (_, i) => ({
        workspaceId: many.workspaceId,
        creatorUserId: many.userId,
        name: `bulk-${String(i).padStart(5, '0')}`,
        status: 'stopped' as const,
        createdAt: new Date(base - i * 1000),
      })),
    })
    const page = await browser.newPage({ viewport: { width: 1000, height: 800 } })
    await signIn(page, origin, many.keys.user)
    await page.getByRole('link', { name: 'bulk-00000' }).waitFor()
    const rendered = () => page.locator('tbody tr[data-index]').count()
    expect(await rendered()).toBeLessThan(60)
    // Scrolled to the end again and again: more pages come, the page keeps a few dozen rows.
    const lastShown = () =>
      page.evaluate(() =>
        Math.max(
          ...[...document.querySelectorAll('tbody tr[data-index]')].map((r) => Number(r.getAttribute('data-index'))),
        ),
      )
    let last = await lastShown()
    for (let scrolls = 0; scrolls < 6; scrolls++) {
      // Scrolled to the end until rows past those shown come (a page read meanwhile lengthens the list).
      await waitFor(
        async () => {
          await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight))
          return (await lastShown()) > last + 20
        },
        { what: 'the next page of interns', intervalMs: 20 },
      )
      last = await lastShown()
      expect(await rendered()).toBeLessThan(60)
    }
    expect(last).toBeGreaterThan(250)
    // The last row rendered is the intern of its place (read again each time: a page that arrives
    // meanwhile may move the rendered window).
    await waitFor(
      async () =>
        page.getByRole('link', { name: `bulk-${String(await lastShown()).padStart(5, '0')}`, exact: true }).isVisible(),
      { what: 'the last row shown, named by its place', intervalMs: 50 },
    )
    // The top is where it was.
    await page.evaluate(() => window.scrollTo(0, 0))
    await page.getByRole('link', { name: 'bulk-00000' }).waitFor()
    await page.close()
  })

  it('works under a proxy’s path prefix', async () => {
    const page = await browser.newPage()
    await signIn(page, proxied, env.tenant.keys.user)
    await page.getByRole('row', { name: /shown-in-console/ }).waitFor()
    await page.close()
  })
})
