import { afterAll, beforeAll, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { chromium, type Browser, type Page } from 'playwright-core'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import { simulatorCatalogue } from '@roster/gateway'
import { axeViolations } from './console-helpers.js'
import {
  catalogueFile,
  chromiumPath,
  describeNeeding,
  startStack,
  useTestTenant,
  waitFor,
  type Stack,
} from '@roster/testing'

// The console against a real stack (API, worker, runtime host, the model simulator behind the
// gateway) in a real browser: an intern created in the console reaches running as its status
// streams in; a chat whose turn asks permission is approved on its card, steered while it runs,
// stopped, and shown again after a reload; a management key creates a key, checks a request with
// the guardrail dry run, and disables the key, whose next call is refused; the operator signs in with
// OPERATOR_TOKEN and drains the stack's runtime host from the fleet page.
const env = useTestTenant()
const OPERATOR_TOKEN = randomBytes(24).toString('hex')
let sim: Simulator
let stack: Stack
let origin: string
let browser: Browser

beforeAll(async () => {
  sim = await startSimulator({ replyTokens: 4 })
  stack = await startStack({
    databaseUrl: env.t.url,
    env: {
      MODEL_CATALOGUE: catalogueFile(simulatorCatalogue(sim.url)),
      INTERN_DEFAULT_MODEL: 'roster-sim/chat',
      OPERATOR_TOKEN,
      OPERATOR_DASHBOARD_URL: 'http://127.0.0.1:3200/queues',
    },
  })
  origin = new URL(stack.apiUrl).origin
})
afterAll(async () => {
  await browser?.close()
  await stack?.stop()
  await sim?.close()
})

async function signIn(page: Page, key: string, heading: string) {
  await page.goto(`${origin}/console/`)
  await page.getByLabel('API key').fill(key)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('heading', { name: heading, level: 1 }).waitFor()
}

/**
 * Waits for a row a page shows once the ledger has the call (written within a second), reloading
 * until then: each load is given a second to ask and draw before the next (a reload that reads
 * the page before its answer came would never see the row).
 */
async function waitForRow(page: Page, row: ReturnType<Page['getByRole']>) {
  for (let tries = 0; tries < 10; tries++) {
    if (
      await row.waitFor({ timeout: 1_000 }).then(
        () => true,
        () => false,
      )
    )
      return
    await page.reload()
  }
  await row.waitFor()
}

/** Sends a message from the chat page's composer. */
async function say(page: Page, text: string) {
  await page.getByRole('textbox', { name: /Message|Steer the running turn/ }).fill(text)
  await page.getByRole('textbox', { name: /Message|Steer the running turn/ }).press('Enter')
}

await describeNeeding(['chromium', 'bubblewrap'], 'the web console on a real stack', () => {
  beforeAll(async () => {
    browser = await chromium.launch({
      executablePath: chromiumPath(),
      args: ['--headless', '--no-sandbox', '--disable-gpu'],
    })
  })

  it('creates an intern that reaches running as its status streams in, and chats with it: a permission approved on its card, steering, stop, the session after a reload, and a question answered from the inbox', async () => {
    const page = await (await browser.newContext({ bypassCSP: true })).newPage()
    const errors: string[] = []
    page.on('pageerror', (e) => errors.push(e.stack ?? e.message))
    const lists: string[] = []
    page.on('request', (r) => {
      if (/\/api\/v1\/interns(\?|$)/.test(r.url()) && r.method() === 'GET') lists.push(r.url())
    })
    await signIn(page, env.tenant.keys.user, 'Interns')

    await page.getByLabel('Name', { exact: true }).fill('flow')
    await page.getByRole('button', { name: 'Create and start' }).click()
    const row = page.getByRole('row', { name: /flow/ })
    await row.getByText('running', { exact: true }).waitFor({ timeout: 30_000 })
    // The way there was streamed: the list was read once for the page and once after the create.
    expect(lists.length).toBeLessThanOrEqual(2)

    await row.getByRole('link', { name: 'Chat with flow' }).click()
    await page.getByRole('heading', { name: 'Chat with flow' }).waitFor()
    // Markup in a message stays text.
    await say(
      page,
      '<script>window.pwned=1</script> Write it down.\n[sim] call shell {"command":"echo approved > proof.txt; cat proof.txt"}\n[sim] say Wrote **it**: {{result}}',
    )
    const card = page.getByRole('group', { name: 'Permission request' })
    await card.waitFor()
    await card.getByRole('button', { name: 'Allow once' }).click()
    await page.getByText(/Wrote it: .*approved/).waitFor()
    expect(await page.locator('.markdown strong', { hasText: 'it' }).count()).toBeGreaterThan(0)
    expect(await page.evaluate(() => (window as { pwned?: number }).pwned)).toBeUndefined()
    expect(await page.getByText('<script>window.pwned=1</script> Write it down.').count()).toBe(1)
    await card.getByText('Answered: Allow once').waitFor()
    expect(await axeViolations(page)).toEqual([])

    // Steering while a turn runs (self-driven: no permission asked), then a stopped turn.
    await page.getByRole('button', { name: 'Stop' }).waitFor({ state: 'detached' }) // the turn has ended
    await page.getByLabel('Ask before running commands').uncheck()
    await say(page, '[sim] call shell {"command":"sleep 2"}\n[sim] say Not steered.')
    // Steerable once the turn has started (its first chunk came).
    await page.getByRole('textbox', { name: 'Steer the running turn' }).waitFor()
    await say(page, '[sim] say Steered.')
    await page.getByText('Sent into the running turn.').waitFor()
    await page.getByText('Steered.', { exact: true }).waitFor()
    await page.getByRole('button', { name: 'Stop' }).waitFor({ state: 'detached' })
    await say(page, '[sim] call shell {"command":"sleep 30"}\n[sim] say Never.')
    await page.getByRole('button', { name: 'Stop' }).click()
    await page.getByText('Stopped: the run was cancelled.').waitFor()
    // The run ended on the host too: once the console has let the stop settle, the intern takes
    // the next message as a turn of its own (not steered into the cancelled one, not 409 busy).
    await page.getByRole('button', { name: 'Send' }).waitFor()
    await say(page, '[sim] say Back again.')
    await page.getByText('Back again.', { exact: true }).waitFor()

    // The session is in the URL: a reload shows its history, the approved command folded.
    const session = new URL(page.url().replace('#/', '')).searchParams.get('session')
    expect(session).toMatch(/^console-/)
    await page.reload()
    await page.getByText(/Wrote it: .*approved/).waitFor()
    await page.getByText('Used shell').first().waitFor()
    // Markup in a message is shown as the text it is, and never runs.
    expect(await page.getByText('<script>window.pwned=1</script> Write it down.').count()).toBe(1)
    expect(await page.evaluate(() => (window as { pwned?: number }).pwned)).toBeUndefined()

    // The intern's page lists the session.
    await page.getByRole('link', { name: 'flow', exact: true }).click()
    await page.getByRole('heading', { name: 'flow', level: 1 }).waitFor()
    await page.getByRole('link', { name: /Write it down/ }).waitFor()
    // No model of its own: the page names the one it runs.
    await page.getByText('roster-sim/chat (the default for interns)').waitFor()
    expect(await axeViolations(page)).toEqual([])

    // A question asked elsewhere (over the API) waits in the inbox, and is answered there.
    const internId = page.url().split('#/interns/')[1]!.split(/[/?]/)[0]!
    const paused = await fetch(`${stack.apiUrl}/interns/${internId}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        stream: true,
        approval_mode: 'manual',
        session_id: 'from-elsewhere',
        messages: [
          { role: 'user', content: '[sim] call shell {"command":"echo inbox"}\n[sim] say Inbox answered: {{result}}' },
        ],
      }),
    })
    const pausedText = await paused.text()
    expect(pausedText, pausedText).toContain('provide_input')
    await page.getByRole('link', { name: 'Questions' }).click()
    const waiting = page.getByRole('article', { name: 'Question from flow' })
    await waiting.getByRole('button', { name: 'Allow once' }).click()
    await waiting.getByText(/Inbox answered: .*inbox/).waitFor()
    // Answered here, its card stays; the page no longer says none wait above it, but that nothing else does.
    await page.getByText('Nothing else is waiting on an answer.').waitFor()
    expect(await page.getByText('No intern is waiting on an answer').count()).toBe(0)
    expect(await axeViolations(page)).toEqual([])
    expect(errors).toEqual([])
    await page.close()
  })

  it("shows the catalogue on its models page: each model's context, prices and capabilities, its providers and their health when opened", async () => {
    // A call, drained by the worker, counts towards its endpoint's health.
    const user = { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' }
    const made = await fetch(`${stack.apiUrl}/responses`, {
      method: 'POST',
      headers: user,
      body: JSON.stringify({ model: 'roster-sim/chat', input: 'hello' }),
    })
    expect(made.status).toBe(200)
    await waitFor(
      async () => {
        const read = (await (
          await fetch(`${stack.apiUrl}/models/roster-sim/chat/endpoints`, { headers: user })
        ).json()) as { data: { endpoints: { uptime_last_30m: number | null }[] } }
        return read.data.endpoints[0]?.uptime_last_30m === 100
      },
      { what: 'the endpoint health to count the call', timeoutMs: 30_000 },
    )
    const page = await (await browser.newContext({ bypassCSP: true })).newPage()
    await signIn(page, env.tenant.keys.user, 'Interns')
    await page.getByRole('link', { name: 'Models' }).click()
    await page.getByRole('heading', { name: 'Models', level: 1 }).waitFor()
    expect(await page.title()).toBe('Models · Roster')
    const row = page.getByRole('row', { name: /roster-sim\/chat/ })
    await row.waitFor()
    // The catalogue's price per token, as dollars per million.
    expect(await row.textContent()).toMatch(/\$\d/)
    await row.getByText('Providers').click()
    await row.getByText(/^upstream-sim \(openai-chat; default, priority\)/).waitFor()
    await row.getByText(/100% up \(30 min\), 100% \(day\), first token ≤ \d+ ms \(p50\)/).waitFor()
    await page.getByLabel('Search by id or name').fill('no-such-model')
    await page.getByText('No model’s id or name holds “no-such-model”.').waitFor()
    expect(await axeViolations(page)).toEqual([])
    await page.close()
  })

  it('creates an intern with a model whole or not at all: a model not served is refused before anything is made', async () => {
    const page = await (await browser.newContext({ bypassCSP: true })).newPage()
    await signIn(page, env.tenant.keys.user, 'Interns')
    await page.getByLabel('Name', { exact: true }).fill('typo')
    await page.getByLabel('Model', { exact: true }).fill('gpt-4o-mini')
    await page.getByRole('button', { name: 'Create and start' }).click()
    await page
      .getByRole('alert')
      .getByText(/gpt-4o-mini is not a model served here; choose one of: .*roster-sim\/chat/)
      .waitFor()
    const named = async (name: string) =>
      (
        (await (
          await fetch(`${stack.apiUrl}/interns?limit=100`, {
            headers: { authorization: `Bearer ${env.tenant.keys.user}` },
          })
        ).json()) as { data: { name: string; model: string | null; status: string }[] }
      ).data.find((i) => i.name === name)
    expect(await named('typo')).toBeUndefined()
    // The field offers the models served; one of them makes the intern, with its model, provisioning.
    expect(await page.locator('#served-models option[value="roster-sim/chat"]').count()).toBe(1)
    await page.getByLabel('Model', { exact: true }).fill('roster-sim/chat')
    await page.getByRole('button', { name: 'Create and start' }).click()
    await page.getByRole('row', { name: /typo/ }).waitFor()
    expect(await named('typo')).toMatchObject({ model: 'roster-sim/chat' })
    await page.close()
  })

  it('lets a management key create a key (shown once), dry-run a request as it, and disable it: its next call is refused', async () => {
    const page = await (await browser.newContext({ bypassCSP: true })).newPage()
    await signIn(page, env.tenant.keys.management, 'API keys')
    await page.getByLabel('Name', { exact: true }).fill('console-made')
    await page.getByRole('button', { name: 'Create key' }).click()
    const secret = (await page.locator('.secret code').textContent())!
    expect(secret).toMatch(/^sk-/)
    const call = () =>
      fetch(`${stack.apiUrl}/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'roster-sim/chat', input: 'hello' }),
      })
    expect((await call()).status).toBe(200)

    // The call shows in the spend (a total that is the sum of its rows), and its day opens it.
    await page.getByRole('link', { name: 'Spend' }).click()
    await page.getByRole('heading', { name: 'Spend', level: 1 }).waitFor()
    const modelRow = page.getByRole('row', { name: /roster-sim\/chat/ })
    await waitForRow(page, modelRow)
    await page.locator('.chart canvas').first().waitFor()
    // One model here: the total is its row's.
    const totalRow = page.getByRole('row', { name: /Total/ })
    expect(await totalRow.getByRole('cell').nth(0).textContent()).toBe(
      await modelRow.getByRole('cell').nth(1).textContent(),
    )
    expect(await totalRow.getByRole('cell').nth(1).textContent()).toBe(
      await modelRow.getByRole('cell').nth(2).textContent(),
    )
    await page.locator('.days a').first().click()
    await page.getByRole('heading', { name: 'Generations', level: 1 }).waitFor()
    await page
      .getByRole('cell', { name: /roster-sim\/chat/ })
      .first()
      .waitFor()
    expect(page.url()).toMatch(/from=.*&to=/)
    // Its bodies are read when opened: this workspace keeps none, and the page says so.
    await page.getByText('Request and response').first().click()
    await page
      .getByText(/^Not kept: the workspace keeps no request bodies/)
      .first()
      .waitFor()
    expect(await axeViolations(page)).toEqual([])
    await page.getByRole('link', { name: 'API keys' }).click()

    // A guardrail on it, made over the API; the dry run names it.
    const admin = { authorization: `Bearer ${env.tenant.keys.management}`, 'content-type': 'application/json' }
    const hash = (await page.getByRole('link', { name: 'Dry run as console-made' }).getAttribute('href'))!.split(
      'key=',
    )[1]!
    const g = await (
      await fetch(`${stack.apiUrl}/guardrails`, {
        method: 'POST',
        headers: admin,
        body: JSON.stringify({
          name: 'careful',
          content_filters: [{ pattern: 'secret-project', action: 'block', label: 'project name' }],
        }),
      })
    ).json()
    await fetch(`${stack.apiUrl}/guardrails/${g.data.id}/assignments/keys`, {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({ key_hashes: [hash] }),
    })
    await page.getByRole('link', { name: 'Dry run as console-made' }).click()
    await page.getByLabel('Model').fill('roster-sim/chat')
    await page.getByLabel('Prompt').fill('all about secret-project')
    await page.getByRole('button', { name: 'Check' }).click()
    const verdict = page.getByRole('status')
    await verdict.getByText('It would be refused (403).').waitFor()
    expect(await verdict.textContent()).toContain('careful: project name (block)')
    expect(await axeViolations(page)).toEqual([])

    // Governance shows the guardrail, and a workspace's budgets and members.
    await page.getByRole('link', { name: 'Governance', exact: true }).click()
    await page.getByRole('heading', { name: 'Governance', level: 1 }).waitFor()
    await page.getByRole('row', { name: /careful/ }).waitFor()
    expect(await axeViolations(page)).toEqual([])
    await page.getByRole('heading', { name: 'Workspaces' }).waitFor()
    await page.getByRole('table', { name: 'Workspaces' }).getByRole('link').first().click()
    await page.getByRole('heading', { name: 'Budgets' }).waitFor()
    await page.getByRole('heading', { name: 'Members' }).waitFor()

    await page.getByRole('link', { name: 'API keys' }).click()
    // Every limit the key counts against, read when asked for.
    await page
      .getByRole('row', { name: /console-made/ })
      .locator('summary')
      .click()
    await page
      .getByText(/No limit applies\.|left of/)
      .first()
      .waitFor()
    // Its own limit changed there: the row and the limits read again show it.
    const limitForm = page.getByRole('form', { name: 'Limit of console-made' })
    await limitForm.getByLabel(/Own limit/).fill('0.5')
    await limitForm.getByLabel('Resets').selectOption('weekly')
    await limitForm.getByRole('button', { name: 'Save the limit of console-made' }).click()
    await limitForm.getByText('Saved.').waitFor()
    await page
      .getByRole('row', { name: /console-made/ })
      .getByText('$0.5000 weekly', { exact: true })
      .waitFor()
    await page.getByText(/its own limit: \$0\.\d+ left of \$0\.5000 weekly/).waitFor()
    await page.getByRole('button', { name: 'Disable console-made' }).click()
    await page.getByRole('button', { name: 'Enable console-made' }).waitFor()
    expect(await axeViolations(page)).toEqual([])
    const refused = await call()
    expect(refused.status).toBeGreaterThanOrEqual(400)
    expect(refused.status).toBeLessThan(500)
    // Searched on the server.
    await page.getByLabel('Search by name or label').fill('nothing-like-it')
    await page.getByText('No key’s name or label holds “nothing-like-it”.').waitFor()
    expect(page.url()).toContain('q=nothing-like-it')
    await page.close()
  })

  it("gives an intern standing work on its page: a schedule added, run now (its turn listed with its reply), a webhook trigger's secret shown once, an MCP server and a skill added", async () => {
    const made = (await (
      await fetch(`${stack.apiUrl}/interns`, {
        method: 'POST',
        headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'scheduled', provision: true }),
      })
    ).json()) as { id: string }
    const page = await (await browser.newContext({ bypassCSP: true })).newPage()
    const errors: string[] = []
    page.on('pageerror', (e) => errors.push(e.stack ?? e.message))
    await signIn(page, env.tenant.keys.user, 'Interns')
    await page.goto(`${origin}/console/#/interns/${made.id}`)
    await page.getByRole('heading', { name: 'scheduled', level: 1 }).waitFor()
    await page.getByText('running', { exact: true }).waitFor({ timeout: 30_000 })
    await page.getByText('No schedules: give the intern a standing job below.').waitFor()

    const form = page.getByRole('form', { name: 'New schedule' })
    await form.getByLabel('Name').fill('standup')
    await form.getByLabel(/^Cron/).fill('nonsense')
    await form.getByLabel('Prompt').fill('Summarise yesterday.\n[sim] say All quiet.')
    await form.getByRole('button', { name: 'Add schedule' }).click()
    await form.getByRole('alert').getByText(/cron/).waitFor()
    await form.getByLabel(/^Cron/).fill('30 9 * * 1-5')
    await form.getByLabel('Time zone').fill('Europe/Berlin')
    await form.getByLabel(/Self-drive/).check()
    await form.getByRole('button', { name: 'Add schedule' }).click()
    const row = page.getByRole('row', { name: /standup/ })
    await row.getByText('Europe/Berlin').waitFor()
    await row.getByRole('button', { name: 'Run standup now' }).click()
    const turn = page.getByRole('region', { name: 'Turns no one typed' }).getByRole('row', { name: /manual/ })
    await turn.getByText('All quiet.').waitFor({ timeout: 20_000 })
    await turn.getByText('done', { exact: true }).waitFor()
    await row.getByRole('button', { name: 'Switch standup off' }).click()
    await row.getByText('off', { exact: true }).waitFor()

    const hook = page.getByRole('form', { name: 'New webhook trigger' })
    await hook.getByLabel('Name').fill('deploys')
    await hook.getByLabel('What to do with a delivery').fill('Note the deploy.')
    // Reporting in Slack needs the intern's Slack app, which this one has not: refused, saying so.
    await hook.getByLabel(/^Report in Slack/).fill('C0123ABCD')
    await hook.getByRole('button', { name: 'Add webhook trigger' }).click()
    await hook
      .getByRole('alert')
      .getByText(/has no Slack app/)
      .waitFor()
    await hook.getByLabel(/^Report in Slack/).fill('')
    await hook.getByRole('button', { name: 'Add webhook trigger' }).click()
    const secret = await hook.getByRole('status').locator('code').nth(1).textContent()
    expect(secret).toMatch(/^whsec_/)
    await page.getByRole('row', { name: /deploys/ }).waitFor()
    const mcp = page.getByRole('form', { name: 'New MCP server' })
    await mcp.getByLabel('Name', { exact: true }).fill('tracker')
    await mcp.getByLabel('URL (Streamable HTTP)').fill('https://mcp.tracker.example/mcp')
    await mcp.getByLabel(/Bearer token from the vault/).fill('tracker_token')
    await mcp.getByRole('button', { name: 'Add MCP server' }).click()
    await page
      .getByRole('region', { name: 'MCP servers' })
      .getByRole('row', { name: /tracker/ })
      .getByText("found at the intern's next turn")
      .waitFor()
    const skill = page.getByRole('form', { name: 'New skill' })
    await skill.getByLabel('Name', { exact: true }).fill('standup-notes')
    await skill
      .getByLabel(/^SKILL\.md/)
      .fill('---\nname: standup-notes\ndescription: Writes the standup summary\n---\nList what changed.')
    await skill.getByRole('button', { name: 'Add skill' }).click()
    await page
      .getByRole('region', { name: 'Skills' })
      .getByRole('row', { name: /standup-notes/ })
      .waitFor()
    // Shown once: after a reload it is nowhere on the page.
    await page.reload()
    await page.getByRole('row', { name: /deploys/ }).waitFor()
    expect(await page.content()).not.toContain(secret!)
    expect(await axeViolations(page)).toEqual([])
    expect(errors).toEqual([])
    await page.close()
  })

  it('outlives an API killed mid-way: the session still holds, and the list’s stream comes back with what changed meanwhile', async () => {
    const page = await (await browser.newContext({ bypassCSP: true })).newPage()
    await signIn(page, env.tenant.keys.user, 'Interns')
    const row = page.getByRole('row', { name: /flow/ })
    await row.getByText('running', { exact: true }).waitFor()
    const id = new URL(
      (await row.getByRole('link', { name: 'flow', exact: true }).getAttribute('href'))!,
      origin,
    ).hash.split('/')[2]!
    stack.api.child!.kill('SIGKILL')
    await stack.api.exited()
    stack.api.start()
    await stack.api.waitForOutput(/listening/)
    // Changed over the API once it is back: the page's stream, reconnected by the browser, shows it.
    const suspend = await fetch(`${stack.apiUrl}/interns/${id}/suspend`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.tenant.keys.user}` },
    })
    expect(suspend.status, await suspend.text()).toBeLessThan(300)
    await row.getByText(/^(stopping|stopped)$/).waitFor({ timeout: 20_000 })
    // The session is in Postgres: a reload is still signed in.
    await page.reload()
    await page.getByRole('heading', { name: 'Interns', level: 1 }).waitFor()
    expect(await page.getByLabel('API key').count()).toBe(0)
    await page.close()
  })

  // Last: it drains the stack's only host.
  it('lets the operator sign in with its token, see the fleet (hosts, queues, the dashboard) and drain a host after confirming', async () => {
    const page = await (await browser.newContext({ bypassCSP: true })).newPage()
    await signIn(page, OPERATOR_TOKEN, 'Fleet')
    const hostId = stack.runtimes[0]!.id
    const row = page.getByRole('row', { name: new RegExp(hostId) })
    await row.getByText('live', { exact: true }).waitFor()
    expect(await row.getByRole('cell').nth(2).textContent()).toMatch(/^\d+ of \d+$/)
    await page.getByRole('row', { name: /^interns / }).waitFor()
    expect(await page.getByRole('link', { name: 'the queue dashboard' }).getAttribute('href')).toBe(
      'http://127.0.0.1:3200/queues',
    )
    // A member's pages are not the operator's.
    expect(await page.getByRole('link', { name: 'Interns' }).count()).toBe(0)
    expect(await axeViolations(page)).toEqual([])
    // Dismissing the confirmation sends nothing; accepting it drains.
    const drains: string[] = []
    page.on('request', (r) => {
      if (r.method() === 'POST' && r.url().includes('/drain')) drains.push(r.url())
    })
    const asked = new Promise<void>((resolve) =>
      page.once('dialog', (d) => {
        void d.dismiss()
        resolve()
      }),
    )
    await row.getByRole('button', { name: `Drain ${hostId}` }).click()
    await asked
    // The page's next read of the fleet comes after whatever the click would have sent.
    await page.waitForResponse((r) => r.url().includes('/operator/fleet'))
    expect(drains).toEqual([])
    expect(await row.getByText('live', { exact: true }).count()).toBe(1)
    page.once('dialog', (d) => void d.accept())
    await row.getByRole('button', { name: `Drain ${hostId}` }).click()
    await page.getByRole('status').getByText(`${hostId} is draining`).waitFor()
    expect(drains).toHaveLength(1)
    await row.getByText(/^(draining|drained)$/).waitFor()
    expect(await row.getByRole('button').count()).toBe(0)
    await page.close()
  })
})
