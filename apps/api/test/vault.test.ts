import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OpenRouter } from '@openrouter/sdk'
import * as errors from '@openrouter/sdk/models/errors'
import { randomUUID } from 'node:crypto'
import { LocalVault, unseal } from '@roster/shared/vault'
import { makeInternKey, makeTenant, useTestTenant, type Tenant } from '@roster/testing'
import { buildTestApp, TEST_MASTER_KEY } from './helpers.js'

// The vault secrets API through the official client (client.vault.*), and raw HTTP for what the
// client cannot send: every operation, its validation, who may call it, and what it keeps.
const env = useTestTenant()
let app: Awaited<ReturnType<typeof buildTestApp>>
let base: string
let internId: string
let otherInternId: string
let borrowerId: string

const sdk = (key: string) => new OpenRouter({ apiKey: key, serverURL: base, retryConfig: { strategy: 'none' } })
const raw = (
  method: string,
  path: string,
  key: string | undefined,
  body?: unknown,
  headers: Record<string, string> = {},
) =>
  fetch(`${base}${path}`, {
    method,
    headers: {
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  })
async function refusal(p: Promise<unknown>) {
  const err = (await p.then(
    () => undefined,
    (e: unknown) => e,
  )) as errors.OpenRouterError & { statusCode: number; body: string }
  expect(err, 'expected a refusal').toBeInstanceOf(errors.OpenRouterError)
  return { status: err.statusCode, error: JSON.parse(err.body).error, err }
}
const write = (value: string, hosts = ['api.example.com']) => ({ value, hosts })

beforeAll(async () => {
  app = await buildTestApp(env.t.db, { REGIONAL_HOSTS: 'eu.roster.test' })
  base = `${await app.listen({ port: 0, host: '127.0.0.1' })}/api/v1`
  const create = async (name: string, extra: object = {}) =>
    (await (await raw('POST', '/interns', env.tenant.keys.user, { name, ...extra })).json()).id as string
  internId = await create('vaulted')
  otherInternId = await create('other')
  // Borrows the other intern's vault.
  const other = await (await raw('GET', `/interns/${otherInternId}`, env.tenant.keys.user)).json()
  borrowerId = await create('borrower', { vault_id: other.vault_id })
})
afterAll(async () => app?.closeAll())

describe('workspace secrets', () => {
  it('stores, replaces (keeping created_at), lists by name and deletes, as the official client expects', async () => {
    const client = sdk(env.tenant.keys.user)
    // The longest name the contract allows (255 characters) is a name like any other.
    const longest = `a${'b'.repeat(254)}`
    expect(
      (await client.vault.storeVaultSecret({ name: longest, vaultSecretWriteRequest: write('long') })).data.name,
    ).toBe(longest)
    await client.vault.deleteVaultSecret({ name: longest })
    const first = await client.vault.storeVaultSecret({
      name: 'github_token',
      vaultSecretWriteRequest: write('ghp_first', ['API.GitHub.com.', 'api.github.com']),
    })
    expect(first.data).toMatchObject({ name: 'github_token', hosts: ['api.github.com'] })
    expect(first.data.fingerprint).toMatch(/^sha256:[a-f0-9]{64}$/)
    expect(first.data.createdAt).toBeInstanceOf(Date)
    const again = await client.vault.storeVaultSecret({
      name: 'github_token',
      vaultSecretWriteRequest: write('ghp_first', ['uploads.github.com']),
    })
    expect(again.data.fingerprint).toBe(first.data.fingerprint)
    expect(again.data.hosts).toEqual(['uploads.github.com'])
    const replaced = await client.vault.storeVaultSecret({
      name: 'github_token',
      vaultSecretWriteRequest: write('ghp_second'),
    })
    expect(replaced.data.fingerprint).not.toBe(first.data.fingerprint)
    expect(replaced.data.createdAt.getTime()).toBe(first.data.createdAt.getTime())

    for (const name of ['db2_password', 'copy', 'a1'])
      await client.vault.storeVaultSecret({ name, vaultSecretWriteRequest: write(`v-${name}`) })
    const all = await client.vault.listVaultSecrets()
    expect(all.data.map((s) => s.name)).toEqual(['a1', 'copy', 'db2_password', 'github_token'])
    expect(all.hasMore).toBe(false)
    const page = await client.vault.listVaultSecrets({ limit: 2, offset: 1 })
    expect([page.data.map((s) => s.name), page.hasMore]).toEqual([['copy', 'db2_password'], true])
    expect(JSON.stringify(all)).not.toMatch(/ghp_|v-a1/)

    await client.vault.deleteVaultSecret({ name: 'a1' })
    expect((await refusal(client.vault.deleteVaultSecret({ name: 'a1' }))).status).toBe(404)
    // A secret named "copy" is a secret like any other (PUT/DELETE); POST …/copy is the copy.
    await client.vault.deleteVaultSecret({ name: 'copy' })
  })

  it('refuses bad input with 400 (413 past the size limit), in the standard envelope, and stores nothing', async () => {
    const key = env.tenant.keys.user
    const count = async () => (await (await raw('GET', '/vault/secrets', key)).json()).data.length
    const before = await count()
    for (const name of ['GitHub-Token', '_token', 'a__b', 'token_', '1abc', 'x'.repeat(256)]) {
      const res = await raw('PUT', `/vault/secrets/${name}`, key, write('v'))
      expect(res.status, name).toBe(400)
      expect((await res.json()).error).toEqual({ code: 400, message: expect.stringMatching(/^Invalid vault request/) })
    }
    const bodies: unknown[] = [
      { value: '', hosts: ['a.com'] },
      { value: 'x'.repeat(65_537), hosts: ['a.com'] },
      { value: 'v', hosts: [] },
      { value: 'v', hosts: Array.from({ length: 101 }, (_, i) => `h${i}.com`) },
      { value: 'v', hosts: ['https://a.com'] },
      { value: 'v', hosts: ['a.com:443'] },
      { value: 'v', hosts: ['a.com/path'] },
      { value: 'v', hosts: ['*.a.com'] },
      { value: 'v', hosts: [''] },
      { value: 'v', hosts: ['10.0.0.1'] },
      { value: 'v', hosts: ['[::1]'] },
      { value: 'v', hosts: ['-bad-.com'] },
      { value: 'v', hosts: ['a.com'], extra: 1 },
      { value: 'v' },
      { hosts: ['a.com'] },
      '{"value":',
    ]
    for (const body of bodies)
      expect((await raw('PUT', '/vault/secrets/ok_name', key, body)).status, JSON.stringify(body).slice(0, 80)).toBe(
        400,
      )
    const huge = await raw('PUT', '/vault/secrets/ok_name', key, {
      value: 'v',
      hosts: ['a.com'],
      pad: 'x'.repeat(425_000),
    })
    expect(huge.status).toBe(413)
    expect((await huge.json()).error).toEqual({ code: 413, message: 'Request body too large' })
    for (const q of ['limit=0', 'limit=101', 'offset=-1', 'offset=10001', 'limit=abc'])
      expect((await raw('GET', `/vault/secrets?${q}`, key)).status, q).toBe(400)
    expect(await count()).toBe(before)
  })
})

describe("an intern's own vault", () => {
  it('stores, lists and deletes apart from the workspace; the same value in two vaults has two fingerprints', async () => {
    const client = sdk(env.tenant.keys.user)
    const ws = await client.vault.storeVaultSecret({ name: 'shared_key', vaultSecretWriteRequest: write('same-value') })
    const mine = await client.vault.storeInternVaultSecret({
      internId,
      name: 'shared_key',
      vaultSecretWriteRequest: write('same-value'),
    })
    expect(mine.data.fingerprint).not.toBe(ws.data.fingerprint)
    const listed = await client.vault.listInternVaultSecrets({ internId })
    expect(listed.data.map((s) => s.name)).toEqual(['shared_key'])
    // Roster's own runtime credential lives in the same vault, and is never shown or reachable.
    await client.vault.deleteInternVaultSecret({ internId, name: 'shared_key' })
    expect((await client.vault.listVaultSecrets()).data.map((s) => s.name)).toContain('shared_key')
    expect((await refusal(client.vault.deleteInternVaultSecret({ internId, name: 'shared_key' }))).status).toBe(404)
  })

  it('copies workspace secrets all or nothing, replacing same-named ones and keeping value and hosts', async () => {
    const client = sdk(env.tenant.keys.user)
    await client.vault.storeVaultSecret({
      name: 'stripe_key',
      vaultSecretWriteRequest: write('sk_live_1', ['api.stripe.com']),
    })
    await client.vault.storeVaultSecret({
      name: 'slack_token',
      vaultSecretWriteRequest: write('xoxb-1', ['slack.com']),
    })
    await client.vault.storeInternVaultSecret({
      internId,
      name: 'slack_token',
      vaultSecretWriteRequest: write('old-local'),
    })
    const missing = await refusal(
      client.vault.copyVaultSecretsToIntern({
        internId,
        vaultSecretCopyRequest: { names: ['stripe_key', 'nope_key'] },
      }),
    )
    expect(missing.status).toBe(404)
    expect((await client.vault.listInternVaultSecrets({ internId })).data.map((s) => s.name)).toEqual(['slack_token'])

    const copied = await client.vault.copyVaultSecretsToIntern({
      internId,
      vaultSecretCopyRequest: { names: ['stripe_key', 'slack_token'] },
    })
    expect(copied.data.map((s) => [s.name, s.hosts])).toEqual([
      ['stripe_key', ['api.stripe.com']],
      ['slack_token', ['slack.com']],
    ])
    // The copy holds the workspace value (read back here through the vault's own keys).
    expect(await plaintext(internId, 'slack_token')).toBe('xoxb-1')
    expect(await plaintext(internId, 'stripe_key')).toBe('sk_live_1')
    // A snapshot: later workspace changes do not follow.
    await client.vault.storeVaultSecret({
      name: 'stripe_key',
      vaultSecretWriteRequest: write('sk_live_2', ['api.stripe.com']),
    })
    expect(await plaintext(internId, 'stripe_key')).toBe('sk_live_1')

    // A legacy row (stored before host binding, so bound to no hosts) cannot be copied: 409, nothing copied.
    const [{ vault_id }] = await env.t.db.$queryRaw<
      [{ vault_id: string }]
    >`SELECT vault_id FROM workspaces WHERE id = ${env.tenant.workspaceId}::uuid`
    await env.t.db
      .$executeRaw`INSERT INTO vault_secrets (id, vault_id, name, hosts, sealed_value, fingerprint) VALUES (gen_random_uuid(), ${vault_id}::uuid, ${'legacy_key'}, NULL, ${Buffer.from([0])}, ${'legacy'})`
    const conflict = await refusal(
      client.vault.copyVaultSecretsToIntern({
        internId,
        vaultSecretCopyRequest: { names: ['stripe_key', 'legacy_key'] },
      }),
    )
    expect([conflict.status, conflict.error.message, conflict.err]).toEqual([
      409,
      'Vault request conflicts with existing secrets',
      expect.any(errors.ConflictResponseError),
    ])
    expect(await plaintext(internId, 'stripe_key')).toBe('sk_live_1')
    expect((await client.vault.listVaultSecrets()).data.find((s) => s.name === 'legacy_key')).toMatchObject({
      hosts: null,
    })
    await client.vault.deleteVaultSecret({ name: 'legacy_key' })

    for (const names of [[], ['a', 'a'], Array.from({ length: 101 }, (_, i) => `n${i}`), ['Bad-Name']]) {
      expect(
        (await raw('POST', `/vault/interns/${internId}/secrets/copy`, env.tenant.keys.user, { names })).status,
        JSON.stringify(names).slice(0, 40),
      ).toBe(400)
    }
  })

  it('effective-secrets resolves each name intern → attached → workspace', async () => {
    const client = sdk(env.tenant.keys.user)
    await client.vault.storeVaultSecret({ name: 'layered', vaultSecretWriteRequest: write('from-workspace') })
    await client.vault.storeVaultSecret({ name: 'only_workspace', vaultSecretWriteRequest: write('w') })
    await client.vault.storeInternVaultSecret({
      internId: otherInternId,
      name: 'layered',
      vaultSecretWriteRequest: write('from-lender'),
    })
    await client.vault.storeInternVaultSecret({
      internId: otherInternId,
      name: 'lent',
      vaultSecretWriteRequest: write('l'),
    })
    await client.vault.storeInternVaultSecret({
      internId: borrowerId,
      name: 'own_only',
      vaultSecretWriteRequest: write('o'),
    })
    const res = await raw('GET', `/vault/interns/${borrowerId}/effective-secrets?limit=100`, env.tenant.keys.user)
    const { data } = await res.json()
    const scope = Object.fromEntries(data.map((s: any) => [s.name, s.scope]))
    expect(scope).toMatchObject({
      layered: 'attached',
      lent: 'attached',
      own_only: 'intern',
      only_workspace: 'workspace',
    })
    expect(data.map((s: any) => s.name)).toEqual([...data.map((s: any) => s.name)].sort())
  })
})

describe('who may call', () => {
  it('refuses as the contract says: 401, 404 outside the programme, 403 regional or without scope, 404 across workspaces', async () => {
    const outsider = await makeTenant(env.t.db, { inProgramme: false })
    const noInterns = await makeTenant(env.t.db, { internsEnabled: false })
    const stranger = await makeTenant(env.t.db)
    const cases: [string, string, string | undefined, number, Record<string, string>?][] = [
      ['GET', '/vault/secrets', undefined, 401],
      ['GET', '/vault/secrets', 'sk-roster-unknown', 401],
      ['GET', '/vault/secrets', env.tenant.keys.management, 401],
      ['PUT', '/vault/secrets/x', env.tenant.keys.management, 401],
      ['GET', '/vault/secrets', outsider.keys.user, 404],
      ['PUT', '/vault/secrets/x', outsider.keys.user, 404],
      ['GET', '/vault/secrets', noInterns.keys.user, 403],
      ['GET', `/vault/interns/${internId}/secrets`, stranger.keys.user, 404],
      ['PUT', `/vault/interns/${internId}/secrets/x`, stranger.keys.user, 404],
      ['POST', `/vault/interns/${internId}/secrets/copy`, stranger.keys.user, 404],
      ['GET', `/vault/interns/${randomUUID()}/secrets`, env.tenant.keys.user, 404],
      ['GET', '/vault/interns/not-a-uuid/secrets', env.tenant.keys.user, 404],
      ['GET', '/vault/interns/%ff/secrets', env.tenant.keys.user, 404],
    ]
    for (const [method, path, key, status, headers] of cases) {
      const body = method === 'PUT' ? write('v') : method === 'POST' ? { names: ['x'] } : undefined
      const res = await raw(method, path, key, body, headers)
      expect(res.status, `${method} ${path}`).toBe(status)
      const error = (await res.json()).error
      expect(error.code).toBe(status)
      expect(error.metadata).toBeUndefined()
    }
    // A regional hostname (fetch cannot set Host, so injected).
    const regional = await app.inject({
      method: 'GET',
      url: '/api/v1/vault/secrets',
      headers: { authorization: `Bearer ${env.tenant.keys.user}`, host: 'eu.roster.test' },
    })
    expect([regional.statusCode, regional.json().error.message]).toEqual([403, expect.stringMatching(/regional/)])
    // The organization key acts for the workspace too.
    expect((await raw('GET', '/vault/secrets', env.tenant.keys.organization)).status).toBe(200)
  })

  it("an intern's key reaches its own intern's vault and nothing else", async () => {
    const key = await makeInternKey(env.t.db, env.tenant.workspaceId, internId)
    const client = sdk(key)
    await client.vault.storeInternVaultSecret({ internId, name: 'self_made', vaultSecretWriteRequest: write('s') })
    expect((await client.vault.listInternVaultSecrets({ internId })).data.map((s) => s.name)).toContain('self_made')
    expect((await raw('GET', `/vault/interns/${internId}/effective-secrets`, key)).status).toBe(200)
    for (const call of [
      () => client.vault.listVaultSecrets(),
      () => client.vault.storeVaultSecret({ name: 'x', vaultSecretWriteRequest: write('v') }),
      () => client.vault.listInternVaultSecrets({ internId: otherInternId }),
    ]) {
      expect((await refusal(call())).status).toBe(404)
    }
  })

  it('writes answer 503 while the account has vault writes off; reads go on', async () => {
    const frozen = await makeTenant(env.t.db, { vaultWrites: false })
    const client = sdk(frozen.keys.user)
    const off = await refusal(client.vault.storeVaultSecret({ name: 'x', vaultSecretWriteRequest: write('v') }))
    expect([off.status, off.error.message]).toEqual([503, 'Vault writes are not enabled'])
    expect((await refusal(client.vault.deleteVaultSecret({ name: 'x' }))).status).toBe(503)
    expect((await client.vault.listVaultSecrets()).data).toEqual([])
  })
})

describe('at once', () => {
  it('concurrent stores of one name leave one row, the last write', async () => {
    const client = sdk(env.tenant.keys.user)
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        client.vault.storeVaultSecret({ name: 'raced', vaultSecretWriteRequest: write(`value-${i}`) }),
      ),
    )
    const rows = await env.t.db.$queryRaw<
      { n: number }[]
    >`SELECT count(*)::int AS n FROM vault_secrets WHERE name = 'raced'`
    expect(rows[0]!.n).toBe(1)
    const last = await client.vault.storeVaultSecret({ name: 'raced', vaultSecretWriteRequest: write('final') })
    expect((await client.vault.listVaultSecrets()).data.find((s) => s.name === 'raced')!.fingerprint).toBe(
      last.data.fingerprint,
    )
  })

  it('a copy is all or nothing while its sources are deleted and stored at the same moment', async () => {
    const client = sdk(env.tenant.keys.user)
    for (let round = 0; round < 15; round++) {
      await client.vault.storeVaultSecret({ name: 'pair_a', vaultSecretWriteRequest: write(`a-${round}`) })
      await client.vault.storeVaultSecret({ name: 'pair_b', vaultSecretWriteRequest: write(`b-${round}`) })
      for (const n of ['pair_a', 'pair_b'])
        await raw('DELETE', `/vault/interns/${otherInternId}/secrets/${n}`, env.tenant.keys.user)
      const [copy] = await Promise.all([
        raw('POST', `/vault/interns/${otherInternId}/secrets/copy`, env.tenant.keys.user, {
          names: ['pair_a', 'pair_b'],
        }),
        raw('DELETE', '/vault/secrets/pair_b', env.tenant.keys.user),
        raw('PUT', '/vault/secrets/pair_a', env.tenant.keys.user, write(`a-${round}-new`)),
      ])
      const names = (await client.vault.listInternVaultSecrets({ internId: otherInternId })).data
        .map((s) => s.name)
        .filter((n) => n.startsWith('pair_'))
      if (copy.status === 200) expect(names).toEqual(['pair_a', 'pair_b'])
      else expect([copy.status, names]).toEqual([404, []])
      if (copy.status === 200)
        expect([`a-${round}`, `a-${round}-new`]).toContain(await plaintext(otherInternId, 'pair_a'))
    }
  })
})

/** An intern secret's value, opened with the vault's own keys (what the runtime will do). */
async function plaintext(id: string, name: string): Promise<string> {
  const [row] = await env.t.db.$queryRaw<{ vault_id: string; sealed_value: Uint8Array }[]>`
    SELECT s.vault_id, s.sealed_value FROM vault_secrets s JOIN interns i ON i.vault_id = s.vault_id WHERE i.id = ${id}::uuid AND s.name = ${name} AND NOT s.system`
  const vault = new LocalVault({ masterKey: Buffer.from(TEST_MASTER_KEY, 'hex'), lockTimeoutMs: 1000 })
  const key = await vault.dataKeyOf(env.t.db, row!.vault_id)
  return unseal(key, Buffer.from(row!.sealed_value), `vault-secret:${row!.vault_id}:${name}`).toString()
}

export type { Tenant }
