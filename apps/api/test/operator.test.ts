import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { randomBytes, randomUUID } from 'node:crypto'
import { Queue } from 'bullmq'
import { freePort, redisUrl, useTestTenant } from '@roster/testing'
import { connectRedis, INTERN_QUEUE } from '@roster/shared'
import { insertDestination } from '@roster/shared/repositories'
import { buildTestApp } from './helpers.js'

// The operator's reads and drain (issue 47's fleet page): OPERATOR_TOKEN as a bearer token or a
// console session signed in with it; nothing for an API key, a wrong token or an API without one;
// an operator session acts as no key; a changed token ends its sessions.
const env = useTestTenant()
const TOKEN = randomBytes(24).toString('hex')
const PREFIX = `{t-operator-${randomUUID().slice(0, 8)}}`
let app: Awaited<ReturnType<typeof buildTestApp>>
let origin: string
let base: string

beforeAll(async () => {
  const port = await freePort()
  app = await buildTestApp(env.t.db, {
    OPERATOR_TOKEN: TOKEN,
    OPERATOR_DASHBOARD_URL: 'http://127.0.0.1:3200/queues',
    QUEUE_PREFIX: PREFIX,
  })
  await app.listen({ port, host: '127.0.0.1' })
  origin = `http://127.0.0.1:${port}`
  base = `${origin}/api/v1`
})
afterAll(async () => {
  await app?.closeAll()
})

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
const consoleHeaders = () => ({ 'x-roster-console': '1', origin, 'content-type': 'application/json' })
async function signIn(key: string, at = base) {
  return fetch(`${at}/console/session`, {
    method: 'POST',
    headers: { ...consoleHeaders(), origin: new URL(at).origin },
    body: JSON.stringify({ key }),
  })
}
const cookieOf = (res: Response) => res.headers.get('set-cookie')!.split(';')[0]!

async function host(id: string, state: string, placed: number, heartbeatAgoMs = 0, drained = false) {
  const at = new Date(Date.now() - heartbeatAgoMs)
  await env.t.db.$executeRaw`
    INSERT INTO runtime_hosts (id, address, capacity, state, epoch, drained, placed, heartbeat_at, joined_at)
    VALUES (${id}, ${`http://10.0.0.${Math.floor(Math.random() * 200)}:3100`}, 10, ${state}, 1, ${drained}, ${placed}, ${at}, ${at})`
}

describe('the operator’s fleet read', () => {
  it('shows the hosts with state, interns and free room, the queues’ depths and every account’s failing destinations', async () => {
    await host('op-live', 'live', 3)
    await host('op-drained', 'draining', 0, 0, true)
    await host('op-silent', 'live', 2, 10 * 60_000)
    // A failing destination of the test tenant's account, and a healthy one (not listed).
    const failing = randomUUID()
    for (const [id, failures] of [
      [failing, 4],
      [randomUUID(), 0],
    ] as const) {
      await insertDestination(env.t.db, {
        id,
        accountId: env.tenant.accountId,
        workspaceId: env.tenant.workspaceId,
        type: 'webhook',
        name: `hook ${failures}`,
      })
      await env.t.db
        .$executeRaw`UPDATE observability_destinations SET failures = ${failures}, last_error = 'HTTP 503 from the collector' WHERE id = ${id}::uuid`
    }
    // Two jobs waiting in the interns' queue.
    const redis = connectRedis({ REDIS_URL: redisUrl() })
    const queue = new Queue(INTERN_QUEUE, { connection: redis, prefix: PREFIX })
    await queue.add('probe', {}, { delay: 60_000 })
    await queue.add('probe', {})
    await queue.close()
    redis.disconnect()

    const res = await fetch(`${base}/operator/fleet`, { headers: bearer(TOKEN) })
    expect(res.status).toBe(200)
    const fleet = (await res.json()) as any
    const byId = new Map(fleet.hosts.map((h: any) => [h.id, h]))
    expect(byId.get('op-live')).toMatchObject({ state: 'live', interns: 3, capacity: 10, free: 7 })
    expect(byId.get('op-drained')).toMatchObject({ state: 'drained', interns: 0, free: 0 })
    // A host whose heartbeat stopped reads as dead (with no room), before the reconciler says so.
    expect(byId.get('op-silent')).toMatchObject({ state: 'dead', free: 0 })
    const interns = fleet.queues.find((q: any) => q.name === INTERN_QUEUE)
    expect(interns.jobs).toMatchObject({ waiting: 1, delayed: 1, active: 0, failed: 0 })
    expect(fleet.queues.map((q: any) => q.name)).toEqual(['interns', 'destinations'])
    expect(fleet.dashboard_url).toBe('http://127.0.0.1:3200/queues')
    expect(fleet.failing_destinations).toEqual([
      {
        id: failing,
        account_id: env.tenant.accountId,
        workspace_id: env.tenant.workspaceId,
        type: 'webhook',
        name: 'hook 4',
        enabled: true,
        failures: 4,
        last_error: 'HTTP 503 from the collector',
        last_delivered_at: null,
      },
    ])
  })

  it('drains a live host (202), and says why it cannot drain another (409) or an unknown one (404)', async () => {
    await host('op-to-drain', 'live', 1)
    const drain = (id: string) =>
      fetch(`${base}/operator/runtime-hosts/${encodeURIComponent(id)}/drain`, {
        method: 'POST',
        headers: bearer(TOKEN),
      })
    const first = await drain('op-to-drain')
    expect(first.status).toBe(202)
    expect(await first.json()).toEqual({ host: 'op-to-drain', state: 'draining' })
    const row = await env.t.db.runtimeHost.findUnique({ where: { id: 'op-to-drain' } })
    expect(row?.state).toBe('draining')
    const again = await drain('op-to-drain')
    expect(again.status).toBe(409)
    expect(((await again.json()) as any).error).toMatchObject({
      message: 'host op-to-drain is draining: only a live host can be drained',
      metadata: { reason: 'host_not_drainable' },
    })
    for (const id of ['no-such-host', '\0', 'Ünïcode host']) {
      const unknown = await drain(id)
      expect(unknown.status, id).toBe(404)
      expect(((await unknown.json()) as any).error.metadata.reason).toBe('not_found')
    }
  })

  it('refuses an API key, a wrong token and no credential (401), and changes nothing', async () => {
    await host('op-kept', 'live', 0)
    for (const headers of [bearer(env.tenant.keys.management), bearer(`${TOKEN}x`), bearer(TOKEN.slice(1)), {}]) {
      const read = await fetch(`${base}/operator/fleet`, { headers })
      expect(read.status).toBe(401)
      expect(((await read.json()) as any).error.message).toMatch(/OPERATOR_TOKEN/)
      const drain = await fetch(`${base}/operator/runtime-hosts/op-kept/drain`, { method: 'POST', headers })
      expect(drain.status).toBe(401)
      await drain.body?.cancel()
    }
    expect((await env.t.db.runtimeHost.findUnique({ where: { id: 'op-kept' } }))?.state).toBe('live')
  })
})

describe('an operator console session', () => {
  it('is signed in with the token, reads the fleet and drains from the console only, and acts as no key', async () => {
    const res = await signIn(TOKEN)
    expect(res.status).toBe(201)
    expect(await res.json()).toEqual({
      kind: 'operator',
      workspace_id: null,
      workspace_name: null,
      expires_at: expect.any(String),
      intern_default_model: null,
      member: null,
    })
    const cookie = cookieOf(res)
    // Neither the token nor its session id is kept: the row holds the token's digest only.
    const rows = await env.t.db.consoleSession.findMany({ where: { kind: 'operator' } })
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({ keyId: null, workspaceId: null })
    expect(JSON.stringify(rows)).not.toContain(TOKEN)

    const who = await fetch(`${base}/console/session`, { headers: { cookie } })
    expect(await who.json()).toMatchObject({ kind: 'operator', workspace_id: null })
    const fleet = await fetch(`${base}/operator/fleet`, { headers: { cookie } })
    expect(fleet.status).toBe(200)
    await fleet.body?.cancel()
    // A key's routes do not take it.
    for (const path of ['interns', 'keys', 'generations']) {
      const refused = await fetch(`${base}/${path}`, { headers: { cookie } })
      expect(refused.status, path).toBe(401)
      await refused.body?.cancel()
    }
    // A drain with the cookie alone (a form on another site) is refused; from the console it goes.
    await host('op-console', 'live', 0)
    const forged = await fetch(`${base}/operator/runtime-hosts/op-console/drain`, {
      method: 'POST',
      headers: { cookie },
    })
    expect(forged.status).toBe(403)
    expect(((await forged.json()) as any).error.metadata.reason).toBe('cross_site_refused')
    expect((await env.t.db.runtimeHost.findUnique({ where: { id: 'op-console' } }))?.state).toBe('live')
    const drained = await fetch(`${base}/operator/runtime-hosts/op-console/drain`, {
      method: 'POST',
      headers: { cookie, 'x-roster-console': '1', origin },
    })
    expect(drained.status).toBe(202)
    await drained.body?.cancel()
    // Signing out ends it.
    const out = await fetch(`${base}/console/session`, {
      method: 'DELETE',
      headers: { cookie, 'x-roster-console': '1', origin },
    })
    expect(out.status).toBe(204)
    const after = await fetch(`${base}/operator/fleet`, { headers: { cookie } })
    expect(after.status).toBe(401)
    await after.body?.cancel()
  })

  it('ends when the token changes, and there is none where the API has no token', async () => {
    const cookie = cookieOf(await signIn(TOKEN))
    const rotatedPort = await freePort()
    const rotated = await buildTestApp(env.t.db, { OPERATOR_TOKEN: randomBytes(24).toString('hex') })
    const none = await buildTestApp(env.t.db)
    const nonePort = await freePort()
    try {
      await rotated.listen({ port: rotatedPort, host: '127.0.0.1' })
      await none.listen({ port: nonePort, host: '127.0.0.1' })
      for (const at of [`http://127.0.0.1:${rotatedPort}/api/v1`, `http://127.0.0.1:${nonePort}/api/v1`]) {
        const read = await fetch(`${at}/operator/fleet`, { headers: { cookie } })
        expect(read.status).toBe(401)
        await read.body?.cancel()
        const who = await fetch(`${at}/console/session`, { headers: { cookie } })
        expect(who.status).toBe(401)
        await who.body?.cancel()
      }
      // Without a token, the operator's bearer is no credential and signing in with it fails as a bad key does.
      const off = await fetch(`http://127.0.0.1:${nonePort}/api/v1/operator/fleet`, { headers: bearer(TOKEN) })
      expect(((await off.json()) as any).error.message).toMatch(/no OPERATOR_TOKEN/)
      const signed = await signIn(TOKEN, `http://127.0.0.1:${nonePort}/api/v1`)
      expect(signed.status).toBe(401)
      await signed.body?.cancel()
    } finally {
      await rotated.closeAll()
      await none.closeAll()
    }
  })
})
