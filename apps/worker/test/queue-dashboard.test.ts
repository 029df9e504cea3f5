import { afterAll, beforeAll, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { chromium, type Browser } from 'playwright-core'
import {
  apiClient,
  chromiumPath,
  describeNeeding,
  freePort,
  startStack,
  waitFor,
  type Stack,
  useTestTenant,
} from '@roster/testing'

// The queue dashboard (bull-board) on the worker's operator surface, in a real browser (Debian's
// Chromium driven by playwright-core; .ci/run installs it): refused without the operator's
// credential; with it, the page shows the interns queue and its jobs.

const env = useTestTenant()
let stack: Stack
let browser: Browser
let dashboard = ''
const token = randomBytes(24).toString('hex')

beforeAll(async () => {
  const port = await freePort()
  dashboard = `http://127.0.0.1:${port}`
  stack = await startStack({
    databaseUrl: env.t.url,
    workerEnv: { OPERATOR_PORT: String(port), OPERATOR_TOKEN: token },
  })
  browser = await chromium.launch({
    executablePath: chromiumPath(),
    args: ['--headless', '--no-sandbox', '--disable-gpu'],
  })
})
afterAll(async () => {
  await browser?.close()
  await stack?.stop()
})

await describeNeeding(['chromium'], 'the queue dashboard in a browser', () => {
  it('is refused without the operator credential, and with a wrong one', async () => {
    expect((await fetch(`${dashboard}/queues`)).status).toBe(401)
    expect((await fetch(`${dashboard}/queues/api/queues`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(
      401,
    )
    const basicWrong = `Basic ${Buffer.from('operator:nope').toString('base64')}`
    expect((await fetch(`${dashboard}/queues`, { headers: { authorization: basicWrong } })).status).toBe(401)
    // The API's keys are not the operator's.
    expect(
      (await fetch(`${dashboard}/queues`, { headers: { authorization: `Bearer ${env.tenant.keys.user}` } })).status,
    ).toBe(401)
  })

  it("shows the provisioning queue and its jobs in a browser, after the operator's login", async () => {
    const api = apiClient(stack.apiUrl, env.tenant.keys.user)
    const ids = await Promise.all(
      [0, 1, 2].map(async (i) => (await api.createIntern({ name: `shown-${i}`, provision: true })).body.id as string),
    )
    await waitFor(async () => (await env.t.db.intern.count({ where: { id: { in: ids }, status: 'running' } })) === 3, {
      timeoutMs: 30_000,
      what: 'the interns to run',
    })

    const context = await browser.newContext({ httpCredentials: { username: 'operator', password: token } })
    try {
      const page = await context.newPage()
      const response = await page.goto(`${dashboard}/queues`)
      expect(response?.status()).toBe(200)
      await page.getByText('interns', { exact: true }).first().waitFor({ timeout: 15_000 })
      // The queue's page lists its completed provisioning jobs.
      await page.goto(`${dashboard}/queues/queue/interns?status=completed`)
      await page
        .getByText(/intern\.provision/)
        .first()
        .waitFor({ timeout: 15_000 })
      const text = await page.locator('body').innerText()
      expect(text).toMatch(/completed/i)
      for (const id of ids) expect(text).toContain(id)
    } finally {
      await context.close()
    }
  })
})
