import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OpenRouter } from '@openrouter/sdk'
import { InternLifecycleError } from '@openrouter/sdk/models/errors'
import {
  apiClient,
  createTestDatabase,
  makeInternKey,
  makeTenant,
  catalogueFile,
  startStack,
  waitFor,
  type RedisCluster,
  type Stack,
  type Tenant,
  type TestDatabase,
} from '@roster/testing'

/**
 * Every lifecycle operation through the official client (retries off), against the real processes,
 * over one Redis server or (lifecycle.cluster.test.ts) a Redis Cluster.
 */
/** `skip`: why the suite cannot run here (its tests are then reported as skipped). */
export function lifecycleSuite(options: { cluster?: () => Promise<RedisCluster>; skip?: string } = {}) {
  let t: TestDatabase
  let tenant: Tenant
  let stack: Stack
  let client: OpenRouter
  const sdk = (key: string) =>
    new OpenRouter({ apiKey: key, serverURL: stack.apiUrl, retryConfig: { strategy: 'none' } })

  let cluster: RedisCluster | undefined

  beforeAll(async () => {
    t = await createTestDatabase()
    tenant = await makeTenant(t.db)
    cluster = await options.cluster?.()
    stack = await startStack({
      databaseUrl: t.url,
      redisUrl: cluster?.url,
      env: {
        INTERN_LIMIT_PER_MEMBER: '1000',
        // The models the tests set on interns (an intern's model is checked against the catalogue).
        MODEL_CATALOGUE: catalogueFile({
          models: ['openai/gpt-4o-mini', 'acme/thinker'].map((id) => ({
            id,
            name: id,
            context_length: 128_000,
            pricing: { input: '0.00000015', output: '0.0000006' },
            endpoints: [
              { provider: 'unreached', protocol: 'openai-chat', base_url: 'http://127.0.0.1:9/v1', upstream_model: id },
            ],
          })),
        }),
        ...(cluster && { REDIS_CLUSTER_NODES: cluster.nodes, QUEUE_PREFIX: await cluster.prefixAwayFromSeed() }),
      },
      workerEnv: { PROVISION_ATTEMPTS: '2', PROVISION_BACKOFF_MS: '50' },
    })
    client = sdk(tenant.keys.user)
  }, 60_000)
  afterAll(async () => {
    await stack?.stop()
    await cluster?.stop()
    await t?.drop()
  })

  const statusOf = async (id: string) => (await client.interns.getIntern({ internId: id })).status
  const until = (id: string, status: string) =>
    waitFor(async () => (await statusOf(id)) === status, { timeoutMs: 20_000, what: `intern ${status}` })
  async function refused(p: Promise<unknown>, status: number, reason: string) {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(err).toBeInstanceOf(InternLifecycleError)
    expect((err as InternLifecycleError).statusCode).toBe(status)
    expect((err as InternLifecycleError).error.metadata?.reason).toBe(reason)
    return err as InternLifecycleError
  }
  const hosted = async (id: string) => {
    const res = await stack.runtimeFetch(`/v1/interns/${id}`)
    return res.status === 404 ? undefined : ((await res.json()) as { running: boolean; starts: number })
  }

  describe.skipIf(!!options.skip)('the lifecycle through @openrouter/sdk', () => {
    it('provisions a stopped intern, suspends it, resumes it, and deletes it', async () => {
      const intern = await client.interns.createIntern({ createInternRequest: { name: 'cycle' } })
      expect(intern.status).toBe('stopped')

      expect(await client.interns.provisionIntern({ internId: intern.id })).toEqual({ provisioning: true })
      await until(intern.id, 'running')
      expect((await hosted(intern.id))?.running).toBe(true)

      expect(await client.interns.suspendIntern({ internId: intern.id })).toEqual({ suspended: true })
      const suspended = await client.interns.getIntern({ internId: intern.id })
      expect(suspended).toMatchObject({ status: 'stopped', progress: null })
      expect(suspended.hostname).toBe((await t.db.intern.findUniqueOrThrow({ where: { id: intern.id } })).hostname)
      // Stopped on its host, or let go by it (a stopped intern is not held by any host: its next heartbeat may drop it first).
      await waitFor(async () => (await hosted(intern.id))?.running !== true, { what: 'runtime stopped' })

      await client.interns.provisionIntern({ internId: intern.id })
      await until(intern.id, 'running')
      // Resumed on its host (which may have let it go while it was stopped: it starts again from its snapshot).
      expect((await hosted(intern.id))?.running).toBe(true)

      expect(await client.interns.deleteIntern({ internId: intern.id, deleteInternRequest: {} })).toEqual({
        deleting: true,
      })
      await waitFor(async () => (await t.db.intern.findUnique({ where: { id: intern.id } })) === null, {
        timeoutMs: 20_000,
        what: 'intern gone',
      })
      await refused(client.interns.getIntern({ internId: intern.id }), 404, 'not_found')
      expect(await hosted(intern.id)).toBeUndefined()
      expect(await t.db.vault.findUnique({ where: { id: intern.vaultId! } })).toBeNull()
      // Kept off the host, with the deletion: its configuration (and its sessions and workspace snapshot, had it any).
      const archives = await t.db.$queryRaw<
        { name: string }[]
      >`SELECT name FROM workspace_archives WHERE intern_id = ${intern.id}::uuid`
      expect(archives).toEqual([{ name: 'cycle' }])
    })

    it('updates fields: omitted stay, null clears, the name stays unique, the model is validated', async () => {
      const intern = await client.interns.createIntern({
        createInternRequest: { name: 'patchme', description: 'd', instructions: 'i' },
      })
      const updated = await client.interns.updateIntern({
        internId: intern.id,
        updateInternRequest: { description: null, model: 'openai/gpt-4o-mini:free' },
      })
      expect(updated).toMatchObject({
        name: 'patchme',
        description: null,
        instructions: 'i',
        model: 'openai/gpt-4o-mini:free',
      })
      const restored = await client.interns.updateIntern({
        internId: intern.id,
        updateInternRequest: { model: null, name: 'patched' },
      })
      expect(restored).toMatchObject({ name: 'patched', model: null })
      await client.interns.createIntern({ createInternRequest: { name: 'other-one' } })
      await refused(
        client.interns.updateIntern({ internId: intern.id, updateInternRequest: { name: 'other-one' } }),
        409,
        'name_taken',
      )
      const api = apiClient(stack.apiUrl, tenant.keys.user)
      const bad = await fetch(`${stack.apiUrl}/interns/${intern.id}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${tenant.keys.user}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'not a slug' }),
      })
      expect(bad.status).toBe(400)
      expect((await api.getIntern(intern.id)).body.model).toBeNull()
      // A model the catalogue does not serve is refused where it is set, naming the models served.
      const unserved = await fetch(`${stack.apiUrl}/interns/${intern.id}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${tenant.keys.user}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'openai/gpt-9-imaginary' }),
      })
      expect(unserved.status).toBe(400)
      const refusal = (await unserved.json()) as { error: { message: string; metadata: { reason: string } } }
      expect(refusal.error.metadata.reason).toBe('invalid_body')
      expect(refusal.error.message).toMatch(/"openai\/gpt-9-imaginary" is not served here/)
      expect(refusal.error.message).toMatch(/openai\/gpt-4o-mini, acme\/thinker/)
      expect((await api.getIntern(intern.id)).body.model).toBeNull()
    })

    it('answers 409 with a reason for operations the status does not allow', async () => {
      const intern = await client.interns.createIntern({ createInternRequest: { name: 'strict', provision: true } })
      await refused(client.interns.provisionIntern({ internId: intern.id }), 409, 'already_provisioning')
      await until(intern.id, 'running')
      await refused(client.interns.provisionIntern({ internId: intern.id }), 409, 'already_running')
      await client.interns.suspendIntern({ internId: intern.id })
      await refused(client.interns.suspendIntern({ internId: intern.id }), 409, 'already_stopped')
      await client.interns.deleteIntern({ internId: intern.id, deleteInternRequest: {} })
      // Deleting again while the teardown runs is the same request; other operations are refused.
      const again = await fetch(`${stack.apiUrl}/interns/${intern.id}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${tenant.keys.user}` },
      })
      expect([202, 404]).toContain(again.status)
    })

    it('applies a changed model at the next provision', async () => {
      const intern = await client.interns.createIntern({ createInternRequest: { name: 'modelled' } })
      await client.interns.updateIntern({ internId: intern.id, updateInternRequest: { model: 'acme/thinker:fast' } })
      await client.interns.provisionIntern({ internId: intern.id })
      await until(intern.id, 'running')
      const { hostname } = await client.interns.getIntern({ internId: intern.id })
      const served = await (await stack.runtimeFetch(`/v1/interns/${intern.id}`)).json()
      expect(served).toMatchObject({ id: intern.id, hostname, model: 'acme/thinker:fast' })
    })

    it('refuses a provision or suspend body that carries any field', async () => {
      const intern = await client.interns.createIntern({ createInternRequest: { name: 'nobody' } })
      for (const op of ['provision', 'suspend']) {
        const res = await fetch(`${stack.apiUrl}/interns/${intern.id}/${op}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${tenant.keys.user}`, 'content-type': 'application/json' },
          body: JSON.stringify({ now: true }),
        })
        expect(res.status).toBe(400)
        expect((await res.json()).error.metadata.reason).toBe('invalid_body')
      }
      expect(await statusOf(intern.id)).toBe('stopped')
    })

    it('ends a failed teardown destroy_failed, and needs acknowledge_workspace_loss when the archive failed', async () => {
      const intern = await client.interns.createIntern({ createInternRequest: { name: 'stuck', provision: true } })
      await until(intern.id, 'running')
      await stack.runtime.kill('SIGKILL') // the archive cannot be made
      try {
        await client.interns.deleteIntern({
          internId: intern.id,
          deleteInternRequest: { acknowledgeWorkspaceLoss: false },
        })
        await until(intern.id, 'destroy_failed')
        const failed = await client.interns.getIntern({ internId: intern.id })
        expect(failed.lastFailureMessage).toMatch(/archiving the workspace/)
        await refused(
          client.interns.deleteIntern({ internId: intern.id, deleteInternRequest: {} }),
          409,
          'workspace_loss_unacknowledged',
        )
        await refused(client.interns.provisionIntern({ internId: intern.id }), 409, 'intern_deleting')
        await refused(
          client.interns.updateIntern({ internId: intern.id, updateInternRequest: { name: 'revived' } }),
          409,
          'intern_deleting',
        )
      } finally {
        stack.runtime.start()
        await stack.runtime.waitForOutput(/listening/)
      }
      expect(
        await client.interns.deleteIntern({
          internId: intern.id,
          deleteInternRequest: { acknowledgeWorkspaceLoss: true },
        }),
      ).toEqual({ deleting: true })
      await waitFor(async () => (await t.db.intern.findUnique({ where: { id: intern.id } })) === null, {
        timeoutMs: 20_000,
        what: 'intern gone',
      })
    })

    it('detaches borrowers when a lending intern is deleted', async () => {
      const lender = await client.interns.createIntern({ createInternRequest: { name: 'lender' } })
      const borrower = await client.interns.createIntern({
        createInternRequest: { name: 'borrower', vaultId: lender.vaultId! },
      })
      expect(borrower.attachedVaultId).toBe(lender.vaultId)
      await client.interns.deleteIntern({ internId: lender.id, deleteInternRequest: {} })
      await waitFor(async () => (await t.db.intern.findUnique({ where: { id: lender.id } })) === null, {
        timeoutMs: 20_000,
        what: 'lender gone',
      })
      expect((await client.interns.getIntern({ internId: borrower.id })).attachedVaultId).toBeNull()
    })
  })

  describe.skipIf(!!options.skip)('listing', () => {
    it('pages newest first with an opaque cursor, filters by status, and omits next_cursor on the last page', async () => {
      const other = await makeTenant(t.db)
      const mine = sdk(other.keys.user)
      const made: string[] = []
      for (let i = 0; i < 7; i++)
        made.push((await mine.interns.createIntern({ createInternRequest: { name: `page-${i}` } })).id)
      const seen: string[] = []
      let cursor: string | undefined
      for (;;) {
        const page = await mine.interns.listInterns({ limit: 3, ...(cursor ? { startingAfter: cursor } : {}) })
        seen.push(...page.data.map((i) => i.id))
        if (!page.hasMore) {
          expect(page.nextCursor).toBeUndefined()
          break
        }
        cursor = page.nextCursor
      }
      expect(seen).toEqual([...made].reverse())
      const stopped = await mine.interns.listInterns({ status: ['stopped', 'stopped', 'running'] })
      expect(stopped.data).toHaveLength(7)
      expect((await mine.interns.listInterns({ status: ['running'] })).data).toHaveLength(0)
    })

    it('never skips or repeats an intern while others are being created', async () => {
      const busy = await makeTenant(t.db)
      const mine = sdk(busy.keys.user)
      const before: string[] = []
      for (let i = 0; i < 30; i++)
        before.push((await mine.interns.createIntern({ createInternRequest: { name: `old-${i}` } })).id)
      let creating = true
      const background = (async () => {
        for (let i = 0; creating; i++) await mine.interns.createIntern({ createInternRequest: { name: `new-${i}` } })
      })()
      const seen: string[] = []
      let cursor: string | undefined
      do {
        const page = await mine.interns.listInterns({ limit: 4, ...(cursor ? { startingAfter: cursor } : {}) })
        seen.push(...page.data.map((i) => i.id))
        cursor = page.nextCursor
      } while (cursor)
      creating = false
      await background
      expect(new Set(seen).size).toBe(seen.length)
      for (const id of before) expect(seen).toContain(id)
    })

    it('refuses malformed cursors, bad limits, unknown statuses and another workspace', async () => {
      const bad = async (query: string) => {
        const res = await fetch(`${stack.apiUrl}/interns?${query}`, {
          headers: { authorization: `Bearer ${tenant.keys.user}` },
        })
        return { status: res.status, reason: ((await res.json()) as any).error?.metadata?.reason }
      }
      expect(await bad('starting_after=not-a-cursor')).toEqual({ status: 400, reason: 'invalid_body' })
      expect(await bad('limit=0')).toEqual({ status: 400, reason: 'invalid_body' })
      expect(await bad('limit=501')).toEqual({ status: 400, reason: 'invalid_body' })
      expect(await bad('status=sleeping')).toEqual({ status: 400, reason: 'invalid_body' })
      expect(
        await bad(
          `status=${Array(9)
            .fill(0)
            .map(
              (_, i) =>
                [
                  'queued',
                  'running',
                  'failed',
                  'stopped',
                  'destroying',
                  'destroy_failed',
                  'provisioning',
                  'awaiting_slack_install',
                  'nope',
                ][i],
            )
            .join('%2C')}`,
        ),
      ).toEqual({ status: 400, reason: 'invalid_body' })
      expect(await bad('workspace_id=00000000-0000-4000-8000-000000000000')).toEqual({
        status: 404,
        reason: 'not_found',
      })
      expect((await bad(`workspace_id=${tenant.workspaceId}&limit=500`)).status).toBe(200)
    })

    it('shows created_by_you to members and leaves it out for organization keys', async () => {
      const intern = await client.interns.createIntern({ createInternRequest: { name: 'flagged' } })
      // The SDK's Intern model has no created_by_you (it drops extra keys), so read the wire.
      const asMember = await (
        await fetch(`${stack.apiUrl}/interns`, { headers: { authorization: `Bearer ${tenant.keys.user}` } })
      ).json()
      expect(asMember.data.find((i: { id: string }) => i.id === intern.id)?.created_by_you).toBe(true)
      const res = await fetch(`${stack.apiUrl}/interns`, {
        headers: { authorization: `Bearer ${tenant.keys.organization}` },
      })
      const asOrg = (await res.json()).data.find((i: { id: string }) => i.id === intern.id)
      expect(asOrg).not.toHaveProperty('created_by_you')
      expect(asOrg).toHaveProperty('icon_sha256', null)
    })

    it('hides the collection from an intern key, and other workspaces from everyone', async () => {
      const intern = await client.interns.createIntern({ createInternRequest: { name: 'keyholder' } })
      const own = sdk(await makeInternKey(t.db, tenant.workspaceId, intern.id))
      await refused(own.interns.listInterns(), 404, 'not_found')
      expect((await own.interns.getIntern({ internId: intern.id })).id).toBe(intern.id)
      await refused(
        own.interns.suspendIntern({
          internId: (await client.interns.createIntern({ createInternRequest: { name: 'notmine' } })).id,
        }),
        404,
        'not_found',
      )
      const stranger = await makeTenant(t.db)
      await refused(
        sdk(stranger.keys.user).interns.deleteIntern({ internId: intern.id, deleteInternRequest: {} }),
        404,
        'not_found',
      )
      const list = await sdk(stranger.keys.user).interns.listInterns()
      expect(list.data.find((i) => i.id === intern.id)).toBeUndefined()
    })
  })

  describe.skipIf(!!options.skip)('icons', () => {
    const png = Buffer.concat([
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      Buffer.from('rest-of-a-png'),
    ])
    const put = (id: string, body: Buffer, type: string, key = tenant.keys.user) =>
      fetch(`${stack.apiUrl}/interns/${id}/icon`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${key}`, 'content-type': type },
        body: new Uint8Array(body),
      })

    it('sets, serves and removes an icon; icon_sha256 names the bytes', async () => {
      const intern = await client.interns.createIntern({ createInternRequest: { name: 'pictured' } })
      const api = apiClient(stack.apiUrl, tenant.keys.user)
      expect((await api.getIntern(intern.id)).body.icon_sha256).toBeNull()
      const noIcon = await fetch(`${stack.apiUrl}/interns/${intern.id}/icon`, {
        headers: { authorization: `Bearer ${tenant.keys.user}` },
      })
      expect(noIcon.status).toBe(404)

      const set = await put(intern.id, png, 'image/png')
      expect(set.status).toBe(200)
      const { icon_sha256 } = await set.json()
      expect(icon_sha256).toMatch(/^[0-9a-f]{64}$/)
      expect((await api.getIntern(intern.id)).body.icon_sha256).toBe(icon_sha256)
      const listed = await client.interns.listInterns()
      expect(listed.data.find((i) => i.id === intern.id)).toBeDefined()

      const got = await fetch(`${stack.apiUrl}/interns/${intern.id}/icon`, {
        headers: { authorization: `Bearer ${tenant.keys.user}` },
      })
      expect(got.status).toBe(200)
      expect(got.headers.get('content-type')).toBe('image/png')
      expect(Buffer.from(await got.arrayBuffer())).toEqual(png)

      const removed = await fetch(`${stack.apiUrl}/interns/${intern.id}/icon`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${tenant.keys.user}` },
      })
      expect(removed.status).toBe(204)
      expect((await api.getIntern(intern.id)).body.icon_sha256).toBeNull()
    })

    it('refuses what is not a raster image of the declared type, too large, or not visible', async () => {
      const intern = await client.interns.createIntern({ createInternRequest: { name: 'fussy' } })
      expect((await put(intern.id, Buffer.from('<svg/>'), 'image/svg+xml')).status).toBe(415)
      expect((await put(intern.id, Buffer.from('not a png at all'), 'image/png')).status).toBe(400)
      expect((await put(intern.id, Buffer.concat([png, Buffer.alloc(262_144)]), 'image/png')).status).toBe(413)
      const stranger = await makeTenant(t.db)
      expect((await put(intern.id, png, 'image/png', stranger.keys.user)).status).toBe(404)
      // Elsewhere an image body is still refused as not JSON.
      const res = await fetch(`${stack.apiUrl}/interns`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.keys.user}`, 'content-type': 'image/png' },
        body: png,
      })
      expect(res.status).toBe(415)
    })
  })
}
