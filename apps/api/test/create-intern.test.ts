import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import pg from 'pg'
import { createTestDatabase, makeInternKey, makeTenant, makeUserKey, useTestTenant } from '@roster/testing'
import { Intern, InternLifecycleError, InternView } from '@roster/shared'
import { auth, buildTestApp, json } from './helpers.js'

const env = useTestTenant()
let sut: Awaited<ReturnType<typeof buildTestApp>>

beforeAll(async () => {
  sut = await buildTestApp(env.t.db, {
    REGIONAL_HOSTS: 'eu.roster.test,us.roster.test',
    INTERN_LIMIT_PER_MEMBER: '1000',
  })
})
afterAll(async () => {
  await sut?.closeAll()
})

let counter = 0
const uniqueName = () => `intern-${process.pid % 1000}-${++counter}`

function create(body: unknown, headers: Record<string, string> = {}, key = env.tenant.keys.user) {
  return sut.inject({
    method: 'POST',
    url: '/api/v1/interns',
    headers: { ...auth(key), ...json, ...headers },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  })
}

/** Asserts the InternLifecycleError body with its reason and retryable flag. */
function expectError(
  res: { statusCode: number; json(): unknown; headers: Record<string, unknown> },
  status: number,
  reason?: string,
  retryable?: boolean,
) {
  expect(res.statusCode).toBe(status)
  expect(String(res.headers['content-type'])).toMatch(/^application\/json/)
  const body = InternLifecycleError.parse(res.json())
  expect(body.error.code).toBe(status)
  if (reason === undefined) expect(body.error.metadata).toBeUndefined()
  else expect(body.error.metadata).toEqual({ reason, retryable })
  return body
}

const internCount = async () => env.t.db.intern.count()

describe('POST /api/v1/interns: success', () => {
  it('creates a stopped intern with its private vault and all fourteen keys', async () => {
    const res = await create({ name: uniqueName(), description: 'd', instructions: 'Be brief.' })
    expect(res.statusCode).toBe(201)
    const intern = Intern.strict().parse(res.json())
    expect(Object.keys(intern)).toHaveLength(14)
    expect(intern).toMatchObject({
      status: 'stopped',
      progress: null,
      hostname: null,
      attached_vault_id: null,
      model: null,
      last_failure_message: null,
    })
    expect(intern.workspace_id).toBe(env.tenant.workspaceId)
    const vault = await env.t.db.vault.findUnique({ where: { id: intern.vault_id! } })
    expect(vault?.workspaceId).toBe(env.tenant.workspaceId)
    expect(await env.t.db.outboxMessage.count({ where: { payload: { path: ['internId'], equals: intern.id } } })).toBe(
      0,
    )
  })

  it('with provision:true sets queued and writes one outbox row in the same transaction', async () => {
    const res = await create({ name: uniqueName(), provision: true })
    expect(res.statusCode).toBe(201)
    const intern = res.json()
    expect(intern.status).toBe('queued')
    const rows = await env.t.db.outboxMessage.findMany({
      where: { payload: { path: ['internId'], equals: intern.id } },
    })
    expect(rows).toHaveLength(1)
    expect(rows[0]!.jobId).toBe(`intern.provision.${intern.id}.1`)
  })

  it('accepts an explicit workspace_id equal to the key’s workspace', async () => {
    const res = await create({ name: uniqueName(), workspace_id: env.tenant.workspaceId })
    expect(res.statusCode).toBe(201)
  })

  it('attaches a borrowed vault owned by another intern of the workspace', async () => {
    const owner = (await create({ name: uniqueName() })).json()
    const res = await create({ name: uniqueName(), vault_id: owner.vault_id })
    expect(res.statusCode).toBe(201)
    const borrower = res.json()
    expect(borrower.attached_vault_id).toBe(owner.vault_id)
    expect(borrower.vault_id).not.toBe(owner.vault_id)
  })

  it('stores the vault data key sealed, never in the clear', async () => {
    const intern = (await create({ name: uniqueName() })).json()
    const vault = await env.t.db.vault.findUniqueOrThrow({ where: { id: intern.vault_id } })
    expect(vault.sealedDataKey.length).toBe(1 + 12 + 16 + 32)
  })
})

describe('POST /api/v1/interns: idempotency', () => {
  it('replays a finished create with 200 and the same intern', async () => {
    const body = { name: uniqueName(), provision: true }
    const first = await create(body, { 'idempotency-key': 'replay-1' })
    const again = await create(body, { 'idempotency-key': 'replay-1' })
    expect(first.statusCode).toBe(201)
    expect(again.statusCode).toBe(200)
    expect(again.json().id).toBe(first.json().id)
    expect(
      await env.t.db.outboxMessage.count({ where: { payload: { path: ['internId'], equals: first.json().id } } }),
    ).toBe(1)
  })

  it('derives a key from the body when the header is absent', async () => {
    const body = { name: uniqueName() }
    const first = await create(body)
    const again = await create(body)
    expect([first.statusCode, again.statusCode]).toEqual([201, 200])
    expect(again.json().id).toBe(first.json().id)
  })

  it("creates again after the intern is deleted when no key was sent (a derived key never outlives its intern); a sent key's replay says it was deleted", async () => {
    const body = { name: uniqueName() }
    const first = await create(body)
    expect(first.statusCode).toBe(201)
    // Deleted (the worker removes the row and its vault once its teardown is done).
    const removed = async (id: string) => {
      const row = await env.t.db.intern.delete({ where: { id } })
      await env.t.db.vault.delete({ where: { id: row.vaultId! } })
    }
    await removed(first.json().id)
    const again = await create(body)
    expect(again.statusCode, again.body).toBe(201)
    expect(again.json().id).not.toBe(first.json().id)
    expect(again.json().name).toBe(body.name)
    // Now a replay of the new one.
    const replayed = await create(body)
    expect([replayed.statusCode, replayed.json().id]).toEqual([200, again.json().id])

    const keyed = { name: uniqueName() }
    const made = await create(keyed, { 'idempotency-key': 'deleted-1' })
    await removed(made.json().id)
    const gone = await create(keyed, { 'idempotency-key': 'deleted-1' })
    expect(expectError(gone, 404, 'not_found', false).error.message).toMatch(/Idempotency-Key has since been deleted/)
  })

  it('treats an omitted default and its explicit value as the same request', async () => {
    const name = uniqueName()
    const first = await create({ name }, { 'idempotency-key': 'defaults-1' })
    const again = await create(
      { name, provision: false, workspace_id: env.tenant.workspaceId },
      { 'idempotency-key': 'defaults-1' },
    )
    expect([first.statusCode, again.statusCode]).toEqual([201, 200])
  })

  it('refuses the same key with a different body: 409 idempotency_key_reused, nothing created', async () => {
    await create({ name: uniqueName() }, { 'idempotency-key': 'reuse-1' })
    const before = await internCount()
    const res = await create({ name: uniqueName() }, { 'idempotency-key': 'reuse-1' })
    expectError(res, 409, 'idempotency_key_reused', false)
    expect(await internCount()).toBe(before)
  })

  it('50 concurrent creates with one key make exactly one intern', async () => {
    const body = { name: uniqueName(), provision: true }
    const results = await Promise.all(Array.from({ length: 50 }, () => create(body, { 'idempotency-key': 'burst-1' })))
    const codes = results.map((r) => r.statusCode)
    expect(codes.filter((c) => c === 201)).toHaveLength(1)
    expect(codes.filter((c) => c === 200)).toHaveLength(49)
    expect(new Set(results.map((r) => r.json().id)).size).toBe(1)
    expect(await env.t.db.intern.count({ where: { name: body.name } })).toBe(1)
    expect(
      await env.t.db.outboxMessage.count({ where: { payload: { path: ['internId'], equals: results[0]!.json().id } } }),
    ).toBe(1)
  })

  it('concurrent creates of one name with different keys have one winner; the rest get name_taken', async () => {
    const name = uniqueName()
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => create({ name }, { 'idempotency-key': `name-race-${name}-${i}` })),
    )
    expect(results.filter((r) => r.statusCode === 201)).toHaveLength(1)
    for (const r of results.filter((r) => r.statusCode !== 201)) expectError(r, 409, 'name_taken', false)
    expect(await env.t.db.intern.count({ where: { name } })).toBe(1)
    expect(await env.t.db.vault.count()).toBe(await env.t.db.intern.count())
  })
})

describe('POST /api/v1/interns: every row of the error table', () => {
  it.each([
    ['a missing name', {}],
    ['a too short name', { name: 'a' }],
    ['a too long name', { name: 'a'.repeat(18) }],
    ['a name with capitals', { name: 'Helper' }],
    ['a name with a double hyphen', { name: 'a--b' }],
    ['a name ending in a hyphen', { name: 'ab-' }],
    ['an unknown property', { name: 'okname', model: 'x/y' }],
    ['a description over 2000 characters', { name: 'okname', description: 'd'.repeat(2001) }],
    ['instructions over 100000 characters', { name: 'okname', instructions: 'i'.repeat(100_001) }],
    ['a non-boolean provision', { name: 'okname', provision: 'yes' }],
    ['a malformed vault_id', { name: 'okname', vault_id: 'nope' }],
    ['a malformed workspace_id', { name: 'okname', workspace_id: 'nope' }],
    ['an array body', [{ name: 'okname' }]],
  ])('400 invalid_body for %s', async (_what, body) => {
    const before = await internCount()
    expectError(await create(body), 400, 'invalid_body', false)
    expect(await internCount()).toBe(before)
  })

  it('accepts the limits exactly', async () => {
    const res = await create(
      { name: 'ab', description: 'd'.repeat(2000), instructions: 'i'.repeat(100_000) },
      {},
      (await makeUserKey(env.t.db, env.tenant.workspaceId)).key,
    )
    expect(res.statusCode).toBe(201)
    const name17 = 'a'.repeat(17)
    expect((await create({ name: name17 })).statusCode).toBe(201)
  })

  it('400 invalid_body for malformed JSON and for an empty JSON body', async () => {
    expectError(await create('{"name":'), 400, 'invalid_body', false)
    expectError(
      await sut.inject({ method: 'POST', url: '/api/v1/interns', headers: { ...auth(env.tenant.keys.user), ...json } }),
      400,
      'invalid_body',
      false,
    )
  })

  it('400 invalid_body for an empty or over-long Idempotency-Key; 255 characters is fine', async () => {
    expectError(await create({ name: uniqueName() }, { 'idempotency-key': '' }), 400, 'invalid_body', false)
    expectError(
      await create({ name: uniqueName() }, { 'idempotency-key': 'k'.repeat(256) }),
      400,
      'invalid_body',
      false,
    )
    expect((await create({ name: uniqueName() }, { 'idempotency-key': 'k'.repeat(255) })).statusCode).toBe(201)
  })

  it('401 without metadata for a missing, unknown, malformed or management key', async () => {
    const noAuth = await sut.inject({
      method: 'POST',
      url: '/api/v1/interns',
      headers: json,
      payload: '{"name":"okname"}',
    })
    expectError(noAuth, 401)
    expectError(await create({ name: 'okname' }, {}, 'sk-roster-v1-unknown'), 401)
    expectError(
      await sut.inject({
        method: 'POST',
        url: '/api/v1/interns',
        headers: { ...json, authorization: 'Basic abc' },
        payload: '{"name":"okname"}',
      }),
      401,
    )
    expectError(await create({ name: 'okname' }, {}, env.tenant.keys.management), 401)
  })

  it('403 no_acting_user for an organization key', async () => {
    expectError(await create({ name: uniqueName() }, {}, env.tenant.keys.organization), 403, 'no_acting_user', false)
  })

  it('403 workspace_capability_unavailable when the workspace does not allow interns', async () => {
    const other = await makeTenant(env.t.db, { internsEnabled: false })
    expectError(
      await create({ name: uniqueName() }, {}, other.keys.user),
      403,
      'workspace_capability_unavailable',
      false,
    )
  })

  it('403 workspace_capability_unavailable on a regional hostname, with or without a port', async () => {
    expectError(
      await create({ name: uniqueName() }, { host: 'eu.roster.test' }),
      403,
      'workspace_capability_unavailable',
      false,
    )
    expectError(
      await create({ name: uniqueName() }, { host: 'US.roster.test:8443' }),
      403,
      'workspace_capability_unavailable',
      false,
    )
    expect((await create({ name: uniqueName() }, { host: 'api.roster.test' })).statusCode).toBe(201)
  })

  it('404 not_found outside the programme', async () => {
    const outsider = await makeTenant(env.t.db, { inProgramme: false })
    expectError(await create({ name: uniqueName() }, {}, outsider.keys.user), 404, 'not_found', false)
  })

  it('404 not_found when lifecycle writes are off', async () => {
    const frozen = await makeTenant(env.t.db, { lifecycleWrites: false })
    expectError(await create({ name: uniqueName() }, {}, frozen.keys.user), 404, 'not_found', false)
  })

  it('404 not_found for an intern key (the collection is hidden from it)', async () => {
    const intern = (await create({ name: uniqueName() })).json()
    const internKey = await makeInternKey(env.t.db, env.tenant.workspaceId, intern.id)
    expectError(await create({ name: uniqueName() }, {}, internKey), 404, 'not_found', false)
  })

  it('404 not_found when workspace_id is not the key’s workspace', async () => {
    const other = await makeTenant(env.t.db)
    expectError(await create({ name: uniqueName(), workspace_id: other.workspaceId }), 404, 'not_found', false)
  })

  it('409 name_taken for a name the member already uses', async () => {
    const name = uniqueName()
    await create({ name }, { 'idempotency-key': `first-${name}` })
    expectError(await create({ name }, { 'idempotency-key': `second-${name}` }), 409, 'name_taken', false)
  })

  it('409 vault_not_attachable for an unknown vault, another workspace’s vault, or none at all', async () => {
    const other = await makeTenant(env.t.db)
    const foreign = (await create({ name: uniqueName() }, {}, other.keys.user)).json()
    for (const vaultId of ['00000000-0000-4000-8000-000000000000', foreign.vault_id]) {
      const before = await internCount()
      expectError(await create({ name: uniqueName(), vault_id: vaultId }), 409, 'vault_not_attachable', false)
      expect(await internCount()).toBe(before)
    }
  })

  it('409 intern_limit_reached when the member owns the most interns allowed, exactly at the limit under concurrency', async () => {
    const limited = await buildTestApp(env.t.db, { INTERN_LIMIT_PER_MEMBER: '3' })
    try {
      const member = await makeUserKey(env.t.db, env.tenant.workspaceId)
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          limited.inject({
            method: 'POST',
            url: '/api/v1/interns',
            headers: { ...auth(member.key), ...json },
            payload: { name: `lim-${i}` },
          }),
        ),
      )
      expect(results.filter((r) => r.statusCode === 201)).toHaveLength(3)
      for (const r of results.filter((r) => r.statusCode !== 201)) expectError(r, 409, 'intern_limit_reached', false)
      expect(await env.t.db.intern.count({ where: { creatorUserId: member.userId } })).toBe(3)
    } finally {
      await limited.closeAll()
    }
  })

  it('keeps the limit exact when many creates of one member race (sharded quota)', async () => {
    const limited = await buildTestApp(env.t.db, { INTERN_LIMIT_PER_MEMBER: '20' })
    try {
      const member = await makeUserKey(env.t.db, env.tenant.workspaceId)
      const results = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          limited.inject({
            method: 'POST',
            url: '/api/v1/interns',
            headers: { ...auth(member.key), ...json },
            payload: { name: `race-${i}` },
          }),
        ),
      )
      expect(results.filter((r) => r.statusCode === 201)).toHaveLength(20)
      expect(await env.t.db.intern.count({ where: { creatorUserId: member.userId } })).toBe(20)
      const shards = await env.t.db.memberQuotaShard.findMany({ where: { userId: member.userId } })
      expect(shards.reduce((sum, s) => sum + s.used, 0)).toBe(20)
      // 20 over 16 shards: shards 0 to 3 may hold 2, the rest 1.
      for (const s of shards) expect(s.used).toBeLessThanOrEqual(s.shard < 4 ? 2 : 1)
    } finally {
      await limited.closeAll()
    }
  })

  it('413 payload_too_large past 1,048,576 bytes, refused before parsing', async () => {
    const body = JSON.stringify({ name: 'okname', description: 'x'.repeat(1_048_576) })
    expectError(await create(body), 413, 'payload_too_large', false)
    // A body that is not even JSON is refused for its size, not parsed.
    expectError(await create('x'.repeat(1_048_577)), 413, 'payload_too_large', false)
  })

  it('415 unsupported_media_type for a non-empty body that is not JSON', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      expectError(await create('name=okname', { 'content-type': type }), 415, 'unsupported_media_type', false)
    }
    const res = await sut.inject({
      method: 'POST',
      url: '/api/v1/interns',
      headers: auth(env.tenant.keys.user),
      payload: '{"name":"okname"}',
    })
    expectError(res, 415, 'unsupported_media_type', false)
  })

  it('accepts application/json with a charset parameter', async () => {
    expect(
      (await create({ name: uniqueName() }, { 'content-type': 'application/json; charset=utf-8' })).statusCode,
    ).toBe(201)
  })

  it('408 timeout past the route deadline, quoting it; the retry then completes', async () => {
    const slow = await buildTestApp(env.t.db, { INTERN_CREATE_DEADLINE_MS: '300' })
    const blocker = new pg.Client({ connectionString: env.t.url })
    await blocker.connect()
    try {
      // Hold the member's row, which every create by that member locks for the limit check.
      await blocker.query('BEGIN')
      await blocker.query('SELECT 1 FROM users WHERE id = $1 FOR UPDATE', [env.tenant.userId])
      const body = { name: uniqueName() }
      const res = await slow.inject({
        method: 'POST',
        url: '/api/v1/interns',
        headers: { ...auth(env.tenant.keys.user), ...json, 'idempotency-key': 'deadline-1' },
        payload: body,
      })
      const err = expectError(res, 408, 'timeout', true)
      expect(err.error.message).toContain('300 ms')
      await blocker.query('ROLLBACK')
      const retry = await slow.inject({
        method: 'POST',
        url: '/api/v1/interns',
        headers: { ...auth(env.tenant.keys.user), ...json, 'idempotency-key': 'deadline-1' },
        payload: body,
      })
      // Either the late statement committed (the retry replays it) or it was cancelled (the retry creates).
      expect([200, 201]).toContain(retry.statusCode)
      expect(await env.t.db.intern.count({ where: { name: body.name } })).toBe(1)
    } finally {
      await blocker.end()
      await slow.closeAll()
    }
  })

  it('502 upstream_unavailable while the vault keyring is busy; the same request then resumes and completes', async () => {
    const impatient = await buildTestApp(env.t.db, { VAULT_LOCK_TIMEOUT_MS: '200' })
    const rotation = new pg.Client({ connectionString: env.t.url })
    await rotation.connect()
    try {
      await create({ name: uniqueName() }) // make sure the keyring row exists
      await rotation.query('BEGIN')
      await rotation.query('LOCK TABLE vault_master_keys IN ACCESS EXCLUSIVE MODE')
      const body = { name: uniqueName(), provision: true }
      const headers = { ...auth(env.tenant.keys.user), ...json, 'idempotency-key': 'keyring-1' }
      const before = await internCount()
      const res = await impatient.inject({ method: 'POST', url: '/api/v1/interns', headers, payload: body })
      expectError(res, 502, 'upstream_unavailable', true)
      expect(await internCount()).toBe(before)
      await rotation.query('ROLLBACK')
      const retry = await impatient.inject({ method: 'POST', url: '/api/v1/interns', headers, payload: body })
      expect(retry.statusCode).toBe(201)
      expect(retry.json().status).toBe('queued')
    } finally {
      await rotation.end()
      await impatient.closeAll()
    }
  })

  it('500 configuration_error without a master key, and with one that did not seal the existing vaults', async () => {
    const before = await internCount()
    for (const key of ['', 'cd'.repeat(32)]) {
      const misconfigured = await buildTestApp(env.t.db, { VAULT_MASTER_KEY: key })
      try {
        const res = await misconfigured.inject({
          method: 'POST',
          url: '/api/v1/interns',
          headers: { ...auth(env.tenant.keys.user), ...json },
          payload: { name: uniqueName() },
        })
        expectError(res, 500, 'configuration_error', false)
      } finally {
        await misconfigured.closeAll()
      }
    }
    expect(await internCount()).toBe(before)
  })

  it('500 internal_error (retryable) for an unexpected failure, with no internals in the message', async () => {
    const broken = await createTestDatabase(2)
    const app = await buildTestApp(broken.db)
    try {
      const key = (await makeTenant(broken.db)).keys.user
      await broken.db.$executeRawUnsafe('ALTER TABLE outbox RENAME TO outbox_gone')
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/interns',
        headers: { ...auth(key), ...json },
        payload: { name: 'okname', provision: true },
      })
      const body = expectError(res, 500, 'internal_error', true)
      expect(body.error.message).not.toMatch(/outbox|relation|SELECT|INSERT/i)
      expect(await broken.db.intern.count()).toBe(0)
    } finally {
      await app.closeAll()
      await broken.drop()
    }
  })
})

describe('GET /api/v1/interns/{id}', () => {
  it('returns the intern with created_by_you and icon_sha256 to its creator', async () => {
    const created = (await create({ name: uniqueName() })).json()
    const res = await sut.inject({
      method: 'GET',
      url: `/api/v1/interns/${created.id}`,
      headers: auth(env.tenant.keys.user),
    })
    expect(res.statusCode).toBe(200)
    const view = InternView.strict().parse(res.json())
    expect(view).toMatchObject({ ...created, created_by_you: true, icon_sha256: null })
  })

  it('tags the body with an ETag, and answers 304 to If-None-Match until the intern changes', async () => {
    const created = (await create({ name: uniqueName() })).json()
    const get = (headers: Record<string, string> = {}) =>
      sut.inject({
        method: 'GET',
        url: `/api/v1/interns/${created.id}`,
        headers: { ...auth(env.tenant.keys.user), ...headers },
      })
    const first = await get()
    const etag = String(first.headers.etag)
    expect(etag).toMatch(/^"[\w-]+"$/)
    const same = await get({ 'if-none-match': etag })
    expect(same.statusCode).toBe(304)
    expect(same.body).toBe('')
    expect((await get({ 'if-none-match': `"other", W/${etag}` })).statusCode).toBe(304)
    await env.t.db.intern.update({ where: { id: created.id }, data: { description: 'changed' } })
    const changed = await get({ 'if-none-match': etag })
    expect(changed.statusCode).toBe(200)
    expect(changed.headers.etag).not.toBe(etag)
    // Another key sees another body (created_by_you), hence another tag.
    const asOrg = await sut.inject({
      method: 'GET',
      url: `/api/v1/interns/${created.id}`,
      headers: auth(env.tenant.keys.organization),
    })
    expect(asOrg.headers.etag).not.toBe(changed.headers.etag)
  })

  it('shows created_by_you false to another member and omits it for an organization key', async () => {
    const created = (await create({ name: uniqueName() })).json()
    const other = await makeUserKey(env.t.db, env.tenant.workspaceId)
    const asOther = await sut.inject({ method: 'GET', url: `/api/v1/interns/${created.id}`, headers: auth(other.key) })
    expect(asOther.json().created_by_you).toBe(false)
    const asOrg = await sut.inject({
      method: 'GET',
      url: `/api/v1/interns/${created.id}`,
      headers: auth(env.tenant.keys.organization),
    })
    expect(asOrg.statusCode).toBe(200)
    expect(asOrg.json()).not.toHaveProperty('created_by_you')
    expect(asOrg.json().icon_sha256).toBeNull()
  })

  it('lets an intern key see its own intern and nothing else', async () => {
    const mine = (await create({ name: uniqueName() })).json()
    const theirs = (await create({ name: uniqueName() })).json()
    const key = await makeInternKey(env.t.db, env.tenant.workspaceId, mine.id)
    expect(
      (await sut.inject({ method: 'GET', url: `/api/v1/interns/${mine.id}`, headers: auth(key) })).statusCode,
    ).toBe(200)
    expectError(
      await sut.inject({ method: 'GET', url: `/api/v1/interns/${theirs.id}`, headers: auth(key) }),
      404,
      'not_found',
      false,
    )
  })

  it('hides other workspaces’ interns, unknown ids and malformed ids behind 404', async () => {
    const other = await makeTenant(env.t.db)
    const foreign = (await create({ name: uniqueName() }, {}, other.keys.user)).json()
    for (const id of [foreign.id, '00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      expectError(
        await sut.inject({ method: 'GET', url: `/api/v1/interns/${id}`, headers: auth(env.tenant.keys.user) }),
        404,
        'not_found',
        false,
      )
    }
  })

  it('applies the same programme, capability, regional and key rules as create', async () => {
    const created = (await create({ name: uniqueName() })).json()
    const get = (key: string, headers: Record<string, string> = {}) =>
      sut.inject({ method: 'GET', url: `/api/v1/interns/${created.id}`, headers: { ...auth(key), ...headers } })
    expectError(await get(env.tenant.keys.management), 401)
    expectError(
      await get(env.tenant.keys.user, { host: 'eu.roster.test' }),
      403,
      'workspace_capability_unavailable',
      false,
    )
    await env.t.db.account.update({ where: { id: env.tenant.accountId }, data: { lifecycleWrites: false } })
    expect((await get(env.tenant.keys.user)).statusCode).toBe(200) // reads are not lifecycle writes
    await env.t.db.account.update({
      where: { id: env.tenant.accountId },
      data: { lifecycleWrites: true, inProgramme: false },
    })
    expectError(await get(env.tenant.keys.user), 404, 'not_found', false)
    await env.t.db.account.update({ where: { id: env.tenant.accountId }, data: { inProgramme: true } })
  })
})

describe('service endpoints', () => {
  it('serves an OpenAPI 3.1 document generated from the zod schemas', async () => {
    const doc = (await sut.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json()
    expect(doc.openapi).toBe('3.1.0')
    expect(doc.paths['/api/v1/interns'].post.operationId).toBe('createIntern')
    expect(doc.components.schemas.Intern.required).toHaveLength(14)
    expect(doc.components.schemas.CreateInternRequest.additionalProperties).toBe(false)
    // Every operation the official clients call is in the document, under the client's operation id.
    expect(doc.paths['/api/v1/responses'].post.operationId).toBe('createResponse')
    expect(doc.paths['/api/v1/presets/{slug}/responses'].post.operationId).toBe('createPresetsResponses')
    expect(doc.paths['/api/v1/presets/{slug}/versions/{version}'].get.operationId).toBe('getPresetVersion')
  })

  it('answers /health and /ready, and 404 in the error shape for unknown routes', async () => {
    expect((await sut.inject({ method: 'GET', url: '/health' })).json()).toEqual({ status: 'ok' })
    const ready = await sut.inject({ method: 'GET', url: '/ready' })
    expect(ready.statusCode).toBe(200)
    expect(ready.json()).toMatchObject({ postgres: 'ok', redis: 'ok' })
    expectError(await sut.inject({ method: 'GET', url: '/api/v1/nothing' }), 404, 'not_found', false)
  })

  it('answers the server’s own address: a browser goes to the console, a client is told where things are', async () => {
    const browser = await sut.inject({ method: 'GET', url: '/', headers: { accept: 'text/html,*/*;q=0.8' } })
    expect([browser.statusCode, browser.headers.location]).toEqual([302, '/console/'])
    const client = await sut.inject({ method: 'GET', url: '/' })
    expect(client.statusCode).toBe(200)
    expect(client.json()).toEqual({
      status: 'ok',
      api: '/api/v1',
      openapi: '/api/v1/openapi.json',
      console: '/console/',
    })
  })

  it('echoes a valid X-Request-Id and makes one otherwise', async () => {
    const given = await sut.inject({ method: 'GET', url: '/health', headers: { 'x-request-id': 'req-123' } })
    expect(given.headers['x-request-id']).toBe('req-123')
    const made = await sut.inject({ method: 'GET', url: '/health', headers: { 'x-request-id': 'bad id with spaces' } })
    expect(made.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/)
  })
})
