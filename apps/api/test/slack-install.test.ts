import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { startSlackSim, type SlackSim } from '@roster/slack-sim'
import { signToken, slackAppsApi, storeSlackConfigToken } from '@roster/shared/slack'
import { spawn, spawnSync } from 'node:child_process'
import { freePort, makeTenant, repoRoot, useTestTenant } from '@roster/testing'
import { buildTestApp, TEST_MASTER_KEY } from './helpers.js'

// Linking an intern to Slack and installing its app (issue 46): the intern waits in
// awaiting_slack_install, nothing queued, until a person installs the app through Slack's OAuth v2
// (the Slack stand-in's authorize page and oauth.v2.access); a declined install, a forged, replayed
// or expired state and a refused code leave it waiting, the reason on its link.
const env = useTestTenant()
let slack: SlackSim
let app: Awaited<ReturnType<typeof buildTestApp>>
let base: string

beforeAll(async () => {
  slack = await startSlackSim()
  // PUBLIC_URL (Slack's redirect URL) is where the API listens.
  const port = await freePort()
  app = await buildTestApp(env.t.db, {
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    SLACK_API_URL: slack.apiUrl,
    SLACK_AUTHORIZE_URL: slack.authorizeUrl,
  })
  await app.listen({ port, host: '127.0.0.1' })
  base = `http://127.0.0.1:${port}/api/v1`
})
afterAll(async () => {
  await app?.closeAll()
  await slack?.close()
})
beforeEach(() => {
  slack.decision = 'approve'
})

const call = (method: string, path: string, key: string | undefined, body?: object) =>
  fetch(`${base}${path}`, {
    method,
    redirect: 'manual',
    headers: {
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    body: body && JSON.stringify(body),
  })

let n = 0
/** A Slack-linked intern made with a fresh app of the stand-in's. */
async function linked(provision: boolean, key = env.tenant.keys.user) {
  const slackApp = slack.addApp()
  const res = await call('POST', '/interns', key, {
    name: `slacker${++n}`,
    provision,
    slack: {
      app: { client_id: slackApp.clientId, client_secret: slackApp.clientSecret, signing_secret: 's'.repeat(32) },
    },
  })
  expect(res.status, await res.clone().text()).toBe(201)
  const intern = (await res.json()) as { id: string; status: string }
  return { intern, slackApp }
}

const linkOf = async (id: string, key = env.tenant.keys.user) =>
  (await (await call('GET', `/interns/${id}/slack`, key)).json()) as Record<string, any>
const statusOf = async (id: string) => (await env.t.db.intern.findUniqueOrThrow({ where: { id } })).status
const outboxFor = (id: string) =>
  env.t.db.outboxMessage.count({ where: { payload: { path: ['internId'], equals: id } } })

/** What Chromium sends as Accept when it follows a link. */
const BROWSER_ACCEPT =
  'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8'

/** A browser following the install link to Slack: where Slack sends it back (the callback URL). */
async function toSlackAndBack(installUrl: string) {
  const install = await fetch(installUrl, { redirect: 'manual' })
  expect(install.status).toBe(302)
  const authorize = install.headers.get('location')!
  const back = await fetch(authorize, { redirect: 'manual' })
  expect(back.status).toBe(302)
  return { authorize: new URL(authorize), callback: back.headers.get('location')! }
}

describe('an intern linked to Slack', () => {
  it('waits for its install with nothing queued, even asked to provision; provisioning it first names the install link', async () => {
    const { intern, slackApp } = await linked(true)
    expect(intern.status).toBe('awaiting_slack_install')
    expect(await outboxFor(intern.id)).toBe(0)
    const link = await linkOf(intern.id)
    expect(link).toMatchObject({
      intern_id: intern.id,
      state: 'awaiting_install',
      reason: null,
      origin: 'team',
      client_id: slackApp.clientId,
      team: null,
      provision_on_install: true,
    })
    expect(link.install_url).toMatch(new RegExp(`^${base}/interns/${intern.id}/slack/install\\?grant=`))
    const provision = await call('POST', `/interns/${intern.id}/provision`, env.tenant.keys.user)
    expect(provision.status).toBe(409)
    const refused = (await provision.json()) as { error: { message: string; metadata?: { reason?: string } } }
    expect(refused.error.message).toContain(link.install_url.split('?')[0])
    expect(await statusOf(intern.id)).toBe('awaiting_slack_install')
    expect(await outboxFor(intern.id)).toBe(0)
  })

  it('keeps the app credentials sealed: never in an answer, never in plaintext in the database', async () => {
    const { intern, slackApp } = await linked(false)
    const answers = [
      await (await call('GET', `/interns/${intern.id}`, env.tenant.keys.user)).text(),
      JSON.stringify(await linkOf(intern.id)),
      await (await call('GET', `/interns/${intern.id}/slack/manifest`, env.tenant.keys.user)).text(),
    ]
    for (const a of answers) {
      expect(a).not.toContain(slackApp.clientSecret)
      expect(a).not.toContain('s'.repeat(32))
    }
    const row = await env.t.db.slackLink.findUniqueOrThrow({ where: { internId: intern.id } })
    expect(Buffer.from(row.sealed).toString('latin1')).not.toContain(slackApp.clientSecret)
  })

  it('serves the manifest a team makes its app from: its scopes, and the URLs Slack must reach', async () => {
    const { intern } = await linked(false)
    const res = await call('GET', `/interns/${intern.id}/slack/manifest`, env.tenant.keys.user)
    expect(res.status).toBe(200)
    const m = (await res.json()) as Record<string, any>
    const publicUrl = base.replace(/\/api\/v1$/, '')
    expect(m.display_information.name).toBe(`slacker${n}`)
    expect(m.oauth_config.redirect_urls).toEqual([`${publicUrl}/api/v1/slack/oauth/callback`])
    expect(m.oauth_config.scopes.bot).toEqual(expect.arrayContaining(['app_mentions:read', 'chat:write', 'im:history']))
    expect(m.settings.event_subscriptions.request_url).toBe(`${publicUrl}/api/v1/slack/events/${intern.id}`)
    expect(m.settings.event_subscriptions.bot_events).toEqual(
      expect.arrayContaining(['app_mention', 'message.im', 'message.channels', 'message.groups']),
    )
    expect(m.settings.interactivity).toEqual({
      is_enabled: true,
      request_url: `${publicUrl}/api/v1/slack/interactivity/${intern.id}`,
    })
  })

  it('installs through Slack: the code exchanged, the bot token sealed, the intern queued with its provisioning job', async () => {
    const { intern, slackApp } = await linked(true)
    const link = await linkOf(intern.id)
    const { authorize, callback } = await toSlackAndBack(link.install_url)
    expect(authorize.searchParams.get('client_id')).toBe(slackApp.clientId)
    expect(authorize.searchParams.get('scope')).toContain('chat:write')
    expect(authorize.searchParams.get('redirect_uri')).toBe(`${base}/slack/oauth/callback`)
    const done = await fetch(callback)
    expect(done.status).toBe(200)
    expect(done.headers.get('content-type')).toMatch(/^text\/html/)
    expect(await done.text()).toContain('Installed in Roster Test Workspace')
    expect(await statusOf(intern.id)).toBe('queued')
    expect(await outboxFor(intern.id)).toBe(1)
    const installed = await linkOf(intern.id)
    expect(installed).toMatchObject({
      state: 'installed',
      reason: null,
      app_id: slackApp.appId,
      team: slack.team,
      bot_user_id: expect.stringMatching(/^U/),
      installed_by: expect.stringMatching(/^U/),
      installed_at: expect.any(String),
    })
    // The exchange sent the app's credentials and the code to oauth.v2.access, once.
    const exchanges = slack.calls.filter(
      (c) => c.method === 'oauth.v2.access' && c.params.client_id === slackApp.clientId,
    )
    expect(exchanges).toHaveLength(1)
    expect(exchanges[0]!.params.redirect_uri).toBe(`${base}/slack/oauth/callback`)
    // The bot token is sealed, never shown.
    const token = slack.tokens.get(slackApp.appId)!
    expect(JSON.stringify(installed)).not.toContain(token)
    const row = await env.t.db.slackLink.findUniqueOrThrow({ where: { internId: intern.id } })
    expect(Buffer.from(row.sealed).toString('latin1')).not.toContain(token)

    // The same callback again (a reload, a replay): refused, nothing changed (the installed link's
    // reason included), no second exchange.
    const again = await fetch(callback)
    expect(again.status).toBe(400)
    expect(await again.text()).toContain('already completed')
    expect((await linkOf(intern.id)).reason).toBeNull()
    expect(await outboxFor(intern.id)).toBe(1)
    expect(
      slack.calls.filter((c) => c.method === 'oauth.v2.access' && c.params.client_id === slackApp.clientId),
    ).toHaveLength(1)
    // Installed: the install link starts no new install; a person's browser is told so in a page.
    expect((await fetch(link.install_url, { redirect: 'manual' })).status).toBe(409)
    const opened = await fetch(link.install_url, { redirect: 'manual', headers: { accept: BROWSER_ACCEPT } })
    expect(opened.status).toBe(409)
    expect(opened.headers.get('content-type')).toMatch(/^text\/html/)
    const shown = await opened.text()
    expect(shown).toContain('Already installed')
    expect(shown).toContain('installed in Roster Test Workspace')
    expect(shown).not.toContain('"error"')
    // The operator's CLI shows the same link (but the signed install link), and no secret.
    const cli = spawnSync(process.execPath, ['scripts/admin.mjs', 'slack', 'show', '--intern', intern.id, '--json'], {
      cwd: repoRoot,
      env: { ...process.env, DATABASE_URL: env.t.url },
      encoding: 'utf8',
    })
    expect(cli.status, cli.stderr).toBe(0)
    const { install_url: _url, ...rest } = installed
    expect(JSON.parse(cli.stdout)).toEqual(rest)
    expect(cli.stdout).not.toContain(slackApp.clientSecret)
    expect(cli.stdout).not.toContain(token)
  })

  it('stays waiting when the install is declined, with the reason, and installs when tried again (stopped: provisioning was not asked)', async () => {
    const { intern } = await linked(false)
    slack.decision = 'deny'
    const link = await linkOf(intern.id)
    const declined = await toSlackAndBack(link.install_url)
    expect(new URL(declined.callback).searchParams.get('error')).toBe('access_denied')
    const page = await fetch(declined.callback)
    expect(page.status).toBe(400)
    expect(await page.text()).toContain('not approved in Slack (access_denied)')
    expect(await statusOf(intern.id)).toBe('awaiting_slack_install')
    expect((await linkOf(intern.id)).reason).toMatch(/not approved in Slack/)

    slack.decision = 'approve'
    const { callback } = await toSlackAndBack((await linkOf(intern.id)).install_url)
    expect((await fetch(callback)).status).toBe(200)
    expect(await statusOf(intern.id)).toBe('stopped')
    expect(await outboxFor(intern.id)).toBe(0)
    expect(await linkOf(intern.id)).toMatchObject({ state: 'installed', reason: null })
  })

  it('refuses a forged, expired or superseded state and a code Slack does not know, changing nothing but the reason', async () => {
    const { intern } = await linked(true)
    const callbackUrl = `${base}/slack/oauth/callback`
    const forged = await fetch(`${callbackUrl}?code=x&state=${encodeURIComponent('e30.bm90IGEgc2lnbmF0dXJl')}`)
    expect(forged.status).toBe(400)
    expect(await forged.text()).toContain('state Roster did not sign')
    expect((await linkOf(intern.id)).reason).toBeNull()
    const expired = signToken(Buffer.from(TEST_MASTER_KEY, 'hex'), 'oauth-state', { intern: intern.id, nonce: 'n' }, -5)
    const late = await fetch(`${callbackUrl}?code=x&state=${expired}`)
    expect(late.status).toBe(400)
    expect(await late.text()).toContain('expired')
    // Why it did not complete is on the link, as for a declined install.
    expect((await linkOf(intern.id)).reason).toMatch(/state expired/)

    // An install begun, then another: the first one's state is no longer good.
    const first = await toSlackAndBack((await linkOf(intern.id)).install_url)
    const second = await toSlackAndBack((await linkOf(intern.id)).install_url)
    const stale = await fetch(first.callback)
    expect(stale.status).toBe(400)
    expect(await stale.text()).toContain('replaced by a newer one')
    expect((await linkOf(intern.id)).reason).toMatch(/replaced by a newer one/)

    // A code Slack does not know: its refusal is the reason; the install may be tried again.
    const wrong = new URL(second.callback)
    wrong.searchParams.set('code', 'not-a-code')
    const refused = await fetch(wrong)
    expect(refused.status).toBe(400)
    expect(await refused.text()).toContain('invalid_code')
    expect((await linkOf(intern.id)).reason).toMatch(/invalid_code/)
    expect(await statusOf(intern.id)).toBe('awaiting_slack_install')
    expect(await outboxFor(intern.id)).toBe(0)
  })

  it("answers an install link that is not valid 401, and another tenant's intern 404", async () => {
    const { intern } = await linked(false)
    const forgedGrant = await fetch(`${base}/interns/${intern.id}/slack/install?grant=abc.def`, { redirect: 'manual' })
    expect(forgedGrant.status).toBe(401)
    expect(forgedGrant.headers.get('content-type')).toMatch(/json/)
    // A person's browser gets a page saying so, not the API's JSON.
    const inBrowser = await fetch(`${base}/interns/${intern.id}/slack/install?grant=abc.def`, {
      redirect: 'manual',
      headers: { accept: BROWSER_ACCEPT },
    })
    expect(inBrowser.status).toBe(401)
    expect(inBrowser.headers.get('content-type')).toMatch(/^text\/html/)
    expect(await inBrowser.text()).toContain('ask for a fresh one')
    // A good grant is for its own intern only.
    const other = await linked(false)
    const grant = new URL((await linkOf(other.intern.id)).install_url).searchParams.get('grant')!
    expect(
      (await fetch(`${base}/interns/${intern.id}/slack/install?grant=${grant}`, { redirect: 'manual' })).status,
    ).toBe(401)
    const stranger = await makeTenant(env.t.db)
    for (const path of [
      `/interns/${intern.id}/slack`,
      `/interns/${intern.id}/slack/manifest`,
      `/interns/${intern.id}/slack/install`,
    ])
      expect((await call('GET', path, stranger.keys.user)).status, path).toBe(404)
    // An intern without a link has no Slack page.
    const plain = await call('POST', '/interns', env.tenant.keys.user, { name: `plain${++n}` })
    const id = ((await plain.json()) as { id: string; status: string }).id
    expect((await call('GET', `/interns/${id}/slack`, env.tenant.keys.user)).status).toBe(404)
  })

  it("counts against the member's intern limit exactly, as other creates do", async () => {
    // Two interns per member: most quota shards hold none, so a create lands on a full one first.
    const small = await buildTestApp(env.t.db, { INTERN_LIMIT_PER_MEMBER: '2' })
    try {
      const url = `${await small.listen({ port: 0, host: '127.0.0.1' })}/api/v1`
      const member = await makeTenant(env.t.db)
      const create = (name: string) => {
        const app = slack.addApp()
        return fetch(`${url}/interns`, {
          method: 'POST',
          headers: { authorization: `Bearer ${member.keys.user}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            name,
            slack: {
              app: { client_id: app.clientId, client_secret: app.clientSecret, signing_secret: app.signingSecret },
            },
          }),
        })
      }
      expect((await create('first')).status).toBe(201)
      expect((await create('second')).status).toBe(201)
      const third = await create('third')
      expect(third.status).toBe(409)
      expect(await third.text()).toContain('intern_limit_reached')
    } finally {
      await small.closeAll()
    }
  })

  it('refuses bad link input with the field named, and creates nothing', async () => {
    const before = await env.t.db.intern.count()
    const bad: [object, RegExp][] = [
      [{ app: { client_id: 'nope', client_secret: 'x'.repeat(20), signing_secret: 'y'.repeat(20) } }, /client_id/],
      [{ app: { client_id: '1.2', client_secret: 'short', signing_secret: 'y'.repeat(20) } }, /client_secret/],
      [{ app: { client_id: '1.2', client_secret: 'x'.repeat(20) } }, /signing_secret/],
      [{ app: { client_id: '1.2', client_secret: 'x'.repeat(20), signing_secret: 'y'.repeat(20), extra: 1 } }, /extra/],
    ]
    for (const [slackBody, message] of bad) {
      const res = await call('POST', '/interns', env.tenant.keys.user, { name: `bad${++n}`, slack: slackBody })
      expect(res.status, JSON.stringify(slackBody)).toBe(400)
      expect(await res.text()).toMatch(message)
    }
    expect(await env.t.db.intern.count()).toBe(before)
  })
})

// Minted apps: an operator stores the workspace's app configuration token (its refresh token on
// the CLI's stdin); a Slack link naming no app gets one made with it (apps.manifest.create, from the
// intern's manifest), the token rotated before it expires, under a lock.
describe('an intern whose Slack app Roster mints', () => {
  // Not spawnSync: the Slack stand-in answering the CLI lives in this process's event loop.
  const adminCli = (args: string[], input?: string) =>
    new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, ['scripts/admin.mjs', ...args, '--json'], {
        cwd: repoRoot,
        env: {
          ...process.env,
          DATABASE_URL: env.t.url,
          VAULT_MASTER_KEY: TEST_MASTER_KEY,
          SLACK_API_URL: slack.apiUrl,
        },
      })
      let stdout = ''
      let stderr = ''
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
      child.on('close', (status) => resolve({ status, stdout, stderr }))
      child.stdin.end(input ?? '')
    })
  const mintedCreate = (name: string, extra: object = {}) =>
    call('POST', '/interns', env.tenant.keys.user, {
      name,
      provision: true,
      slack: { approvers: ['U0BOSS'] },
      ...extra,
    })

  it('is refused 409 while the workspace holds no configuration token, nothing made', async () => {
    const before = await env.t.db.intern.count()
    const res = await mintedCreate(`unminted${++n}`)
    expect(res.status).toBe(409)
    expect(((await res.json()) as any).error.metadata.reason).toBe('slack_not_configured')
    expect(await env.t.db.intern.count()).toBe(before)
    expect(slack.calls.some((c) => c.method === 'apps.manifest.create')).toBe(false)
  })

  it('stores the token from its refresh token on the CLI (rotated at once), and never shows it', async () => {
    const { refreshToken } = slack.issueConfigToken()
    const bad = await adminCli(['slack', 'config-token', 'set', '--workspace', env.tenant.workspaceId], 'xoxe-1-spent')
    expect(bad.status).not.toBe(0)
    expect(bad.stderr, bad.stderr).toContain('invalid_refresh_token')
    const cli = await adminCli(
      ['slack', 'config-token', 'set', '--workspace', env.tenant.workspaceId],
      `${refreshToken}\n`,
    )
    expect(cli.status, cli.stderr).toBe(0)
    const stored = JSON.parse(cli.stdout)
    expect(stored).toEqual({
      workspace_id: env.tenant.workspaceId,
      team_id: slack.team.id,
      expires_at: expect.any(String),
    })
    expect(new Date(stored.expires_at).getTime()).toBeGreaterThan(Date.now() + 11 * 3600_000)
    // The refresh token was spent by the rotation; what is stored is sealed.
    const rotations = slack.calls.filter((c) => c.method === 'tooling.tokens.rotate')
    expect(rotations.at(-1)!.params.refresh_token).toBe(refreshToken)
    const row = await env.t.db.slackConfigToken.findUniqueOrThrow({ where: { workspaceId: env.tenant.workspaceId } })
    expect(Buffer.from(row.sealed).toString('latin1')).not.toContain('xoxe')
    const shown = await adminCli(['slack', 'config-token', 'show', '--workspace', env.tenant.workspaceId])
    expect(JSON.parse(shown.stdout)).toEqual(stored)
    expect(shown.stdout).not.toContain('xoxe')
  })

  it('mints the intern its app from its manifest, and installs it as a team-made one', async () => {
    const made = slack.calls.filter((c) => c.method === 'apps.manifest.create').length
    const res = await mintedCreate(`minted${++n}`)
    expect(res.status, await res.clone().text()).toBe(201)
    const intern = (await res.json()) as { id: string; status: string }
    expect(intern.status).toBe('awaiting_slack_install')
    const creates = slack.calls.filter((c) => c.method === 'apps.manifest.create')
    expect(creates).toHaveLength(made + 1)
    const app = [...slack.minted.values()].at(-1)!
    expect(app.manifest).toMatchObject({
      display_information: { name: `minted${n}` },
      settings: {
        event_subscriptions: { request_url: `${base}/slack/events/${intern.id}` },
        interactivity: { request_url: `${base}/slack/interactivity/${intern.id}` },
      },
      oauth_config: { redirect_urls: [`${base}/slack/oauth/callback`] },
    })
    const link = await linkOf(intern.id)
    expect(link).toMatchObject({ origin: 'minted', app_id: app.appId, client_id: app.clientId, approvers: ['U0BOSS'] })
    expect(JSON.stringify(link)).not.toContain(app.clientSecret)
    expect(JSON.stringify(link)).not.toContain(app.signingSecret)
    const { callback } = await toSlackAndBack(link.install_url)
    expect((await fetch(callback)).status).toBe(200)
    expect(await statusOf(intern.id)).toBe('queued')
    expect(await linkOf(intern.id)).toMatchObject({ state: 'installed', app_id: app.appId, team: slack.team })
  })

  it('mints once for a create sent twice, and deletes the app of a create that did not happen', async () => {
    const name = `twice${++n}`
    const first = await mintedCreate(name, {}).then((r) => r.json() as Promise<{ id: string }>)
    const made = slack.calls.filter((c) => c.method === 'apps.manifest.create').length
    const again = await mintedCreate(name)
    expect(again.status).toBe(200)
    expect(((await again.json()) as { id: string }).id).toBe(first.id)
    expect(slack.calls.filter((c) => c.method === 'apps.manifest.create')).toHaveLength(made)
    // The same name with another body: the app is made, the create refused (name taken), the app deleted.
    const clash = await call('POST', '/interns', env.tenant.keys.user, { name, slack: {} })
    expect(clash.status).toBe(409)
    const orphan = [...slack.minted.values()].at(-1)!
    expect(orphan.deleted).toBe(true)
  })

  it('answers 502 and makes nothing when Slack refuses the manifest or is away', async () => {
    const before = await env.t.db.intern.count()
    slack.faults.push({ method: 'apps.manifest.create', error: 'invalid_manifest', times: 1 })
    const refused = await mintedCreate(`refused${++n}`)
    expect(refused.status).toBe(502)
    expect(await refused.text()).toContain('invalid_manifest')
    slack.faults.push({ method: 'apps.manifest.create', status: 503, times: 5 })
    const away = await mintedCreate(`away${++n}`)
    expect(away.status).toBe(502)
    expect(await env.t.db.intern.count()).toBe(before)
  })

  it('rotates the token before it expires, once however many creates need it at once', async () => {
    // A token with ten minutes left (inside the rotation margin), as stored twelve hours ago.
    const api = slackAppsApi(slack.apiUrl)
    const short = slack.issueConfigToken(600)
    await storeSlackConfigToken(
      { db: env.t.db, masterKey: Buffer.from(TEST_MASTER_KEY, 'hex'), api },
      env.tenant.workspaceId,
      short.refreshToken,
    )
    await env.t.db.slackConfigToken.update({
      where: { workspaceId: env.tenant.workspaceId },
      data: { expiresAt: new Date(Date.now() + 600_000) },
    })
    const rotations = slack.calls.filter((c) => c.method === 'tooling.tokens.rotate').length
    const results = await Promise.all([1, 2, 3, 4].map(() => mintedCreate(`rotated${++n}`)))
    expect(results.map((r) => r.status)).toEqual([201, 201, 201, 201])
    // One rotation: the others saw the fresh token under the row's lock (a second would have spent
    // a used refresh token and failed).
    expect(slack.calls.filter((c) => c.method === 'tooling.tokens.rotate')).toHaveLength(rotations + 1)
    const row = await env.t.db.slackConfigToken.findUniqueOrThrow({ where: { workspaceId: env.tenant.workspaceId } })
    expect(row.expiresAt.getTime()).toBeGreaterThan(Date.now() + 11 * 3600_000)
  })

  it('a token Slack says expired is rotated and the call made again', async () => {
    const row = await env.t.db.slackConfigToken.findUniqueOrThrow({ where: { workspaceId: env.tenant.workspaceId } })
    slack.faults.push({ method: 'apps.manifest.create', error: 'token_expired', times: 1 })
    const res = await mintedCreate(`expired${++n}`)
    expect(res.status, await res.clone().text()).toBe(201)
    const after = await env.t.db.slackConfigToken.findUniqueOrThrow({ where: { workspaceId: env.tenant.workspaceId } })
    expect(after.rotatedAt.getTime()).toBeGreaterThan(row.rotatedAt.getTime())
  })
})
