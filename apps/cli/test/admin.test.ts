import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawnSync } from 'node:child_process'
import { createTestDatabase, repoRoot, type TestDatabase } from '@roster/testing'
import { runAdminCaptured } from '../src/admin.js'

// Runs the operator CLI as a user would (npm run -s admin -- …, which runs scripts/admin.mjs: run
// directly here, sparing npm's own start-up on each of the file's thirty-odd commands) and checks
// its exact --json output.
let t: TestDatabase
beforeAll(async () => {
  t = await createTestDatabase(2)
})
afterAll(async () => t?.drop())

/** The CLI's own process, as `npm run -s admin` starts it: for what only a process shows (exit codes, start-up). */
function adminProcess(...args: string[]) {
  const run = spawnSync(process.execPath, ['scripts/admin.mjs', ...args], {
    cwd: repoRoot,
    env: { ...process.env, DATABASE_URL: t.url },
    encoding: 'utf8',
  })
  return { code: run.status, stdout: run.stdout, stderr: run.stderr }
}

/** The same commands run in this process (the module main.ts runs), sparing a Node start and a Prisma load each. */
const admin = (...args: string[]) => runAdminCaptured(args, { ...process.env, DATABASE_URL: t.url })
const json = (r: { stdout: string }) => JSON.parse(r.stdout.trim())
const uuid = /^[0-9a-f-]{36}$/

// Each command is a process of its own that loads the Prisma client: a dozen of them take seconds alone
// and far longer while the rest of the suite shares the machine's cores.
describe('npm run -s admin', { timeout: 180_000 }, () => {
  it('bootstrap --json prints exactly the documented keys, and a fresh set each time', async () => {
    const first = adminProcess('bootstrap', '--json')
    expect(first.code).toBe(0)
    expect(first.stdout.trim().split('\n')).toHaveLength(1)
    const out = json(first)
    expect(Object.keys(out).sort()).toEqual(['account_id', 'keys', 'user_id', 'workspace_id'])
    expect(Object.keys(out.keys).sort()).toEqual(['management', 'organization', 'user'])
    const again = json(await admin('bootstrap', '--json'))
    expect(again.workspace_id).not.toBe(out.workspace_id)
    const keys = await t.db.apiKey.findMany({ where: { workspaceId: out.workspace_id } })
    expect(keys.map((k) => k.kind).sort()).toEqual(['management', 'organization', 'user'])
    // Stored hashed: the plaintext appears nowhere in the row.
    for (const k of keys)
      expect(JSON.stringify(k, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v))).not.toContain(
        out.keys.user.slice(13),
      )
  })

  it('says which database it cannot use, and how to fix it, never the client library’s raw error', async () => {
    const at = (url: string) =>
      spawnSync(process.execPath, ['scripts/admin.mjs', 'bootstrap'], {
        cwd: repoRoot,
        env: { ...process.env, DATABASE_URL: url },
        encoding: 'utf8',
      })
    const missing = new URL(t.url)
    missing.pathname = '/roster_no_such_database'
    const none = at(missing.toString())
    expect(none.status).toBe(1)
    expect(none.stderr).toMatch(
      /^admin: the database roster_no_such_database does not exist on .+: the admin CLI must use the database npm start uses/,
    )
    expect(none.stderr).not.toMatch(/prisma|invocation/i)
    const closed = new URL(t.url)
    closed.port = '9'
    const away = at(closed.toString())
    expect(away.status).toBe(1)
    expect(away.stderr).toMatch(/^admin: the database server at .+:9 cannot be reached: start PostgreSQL/)
  })

  it('creates accounts, workspaces, users and keys with their flags', async () => {
    const account = json(await admin('account', 'create', '--no-programme', '--no-lifecycle-writes', '--json'))
    expect(Object.keys(account)).toEqual(['account_id'])
    expect(await t.db.account.findUnique({ where: { id: account.account_id } })).toMatchObject({
      inProgramme: false,
      lifecycleWrites: false,
    })
    const ws = json(await admin('workspace', 'create', '--account', account.account_id, '--no-interns', '--json'))
    expect(ws.workspace_id).toMatch(uuid)
    expect((await t.db.workspace.findUnique({ where: { id: ws.workspace_id } }))?.internsEnabled).toBe(false)
    const user = json(await admin('user', 'create', '--workspace', ws.workspace_id, '--json'))
    expect(await t.db.user.findUnique({ where: { id: user.user_id } })).toMatchObject({
      email: null,
      role: 'org:member',
    })
    // A member as the organization lists it.
    const ada = json(
      await admin(
        'user',
        'create',
        '--workspace',
        ws.workspace_id,
        '--email',
        'ada@example.com',
        '--first-name',
        'Ada',
        '--last-name',
        'Lovelace',
        '--admin',
        '--json',
      ),
    )
    expect(await t.db.user.findUnique({ where: { id: ada.user_id } })).toMatchObject({
      email: 'ada@example.com',
      firstName: 'Ada',
      lastName: 'Lovelace',
      role: 'org:admin',
    })
    const notEmail = await admin('user', 'create', '--workspace', ws.workspace_id, '--email', 'ada', '--json')
    expect(notEmail.code).not.toBe(0)
    expect(notEmail.stderr).toMatch(/--email is not an e-mail address/)
    const key = json(
      await admin('key', 'create', '--kind', 'user', '--workspace', ws.workspace_id, '--user', user.user_id, '--json'),
    )
    expect(Object.keys(key).sort()).toEqual(['key', 'key_id'])
    expect(key.key).toMatch(/^sk-roster-v1-/)
  })

  it("switches an account's vault writes off and on (on by default)", async () => {
    const { account_id } = json(await admin('account', 'create', '--json'))
    expect((await t.db.account.findUnique({ where: { id: account_id } }))?.vaultWrites).toBe(true)
    expect(json(await admin('account', 'vault-writes', '--account', account_id, 'off', '--json'))).toEqual({
      account_id,
      vault_writes: false,
    })
    expect((await t.db.account.findUnique({ where: { id: account_id } }))?.vaultWrites).toBe(false)
    expect(json(await admin('account', 'vault-writes', '--account', account_id, 'on', '--json'))).toEqual({
      account_id,
      vault_writes: true,
    })
    const unknown = await admin(
      'account',
      'vault-writes',
      '--account',
      '00000000-0000-4000-8000-000000000000',
      'off',
      '--json',
    )
    expect(unknown.code).not.toBe(0)
    expect(json(unknown).error).toMatch(/no account/)
    const created = json(await admin('account', 'create', '--no-vault-writes', '--json'))
    expect((await t.db.account.findUnique({ where: { id: created.account_id } }))?.vaultWrites).toBe(false)
  })

  it("grants an account credits (unlimited by default) and switches a workspace's private logging", async () => {
    const { account_id } = json(await admin('account', 'create', '--json'))
    const credits = (...args: string[]) => admin('account', 'credits', '--account', account_id, ...args, '--json')
    expect(json(await credits())).toEqual({ account_id, total_credits: 1_000_000_000, total_usage: 0, unlimited: true })
    expect(json(await credits('--set', '12.5'))).toMatchObject({ total_credits: 12.5, unlimited: false })
    expect(json(await credits('--add', '0.000001'))).toMatchObject({ total_credits: 12.500001 })
    expect((await t.db.account.findUnique({ where: { id: account_id } }))?.creditsMicros).toBe(12_500_001n)
    // Amounts out of range are grantCredits' refusals (tested through the API); here the CLI's own.
    for (const bad of [
      ['--add', 'lots'],
      ['--set', '1', '--unlimited'],
    ]) {
      const refused = await credits(...bad)
      expect(refused.code, bad.join(' ')).not.toBe(0)
    }
    expect((await t.db.account.findUnique({ where: { id: account_id } }))?.creditsMicros).toBe(12_500_001n)
    expect(json(await credits('--unlimited'))).toMatchObject({ total_credits: 1_000_000_000, unlimited: true })
    expect((await admin('account', 'credits', '--account', 'nope', '--json')).code).not.toBe(0)

    const { workspace_id } = json(await admin('workspace', 'create', '--account', account_id, '--json'))
    expect(
      json(
        await admin('workspace', 'io-logging', '--workspace', workspace_id, 'on', '--sampling-rate', '0.25', '--json'),
      ),
    ).toEqual({ workspace_id, io_logging: true, io_logging_sampling_rate: 0.25 })
    expect(await t.db.workspace.findUnique({ where: { id: workspace_id } })).toMatchObject({
      ioLogging: true,
      ioLoggingRate: 0.25,
    })
    expect(
      (await admin('workspace', 'io-logging', '--workspace', workspace_id, 'on', '--sampling-rate', '0', '--json'))
        .code,
    ).not.toBe(0)
    expect(json(await admin('workspace', 'io-logging', '--workspace', workspace_id, 'off', '--json')).io_logging).toBe(
      false,
    )
  })

  it('refuses bad input with a non-zero exit and a message', async () => {
    // The process's own exit code: 2 for a command line it cannot use.
    const bad = adminProcess(
      'key',
      'create',
      '--kind',
      'wizard',
      '--workspace',
      '00000000-0000-4000-8000-000000000000',
      '--json',
    )
    expect(bad.code).toBe(2)
    expect(bad.stderr).toMatch(/--kind must be one of/)
    const unknownOption = await admin('bootstrap', '--wizard')
    expect(unknownOption.code).toBe(2)
    expect(unknownOption.stderr).toMatch(/^admin: Unknown option '--wizard'/)
    const missing = await admin(
      'key',
      'create',
      '--kind',
      'user',
      '--workspace',
      '00000000-0000-4000-8000-000000000000',
      '--json',
    )
    expect(missing.code).not.toBe(0)
    expect(missing.stderr).toMatch(/needs --user/)
  })

  it('manages API keys offline as the API does: create with a limit, list, update, delete', async () => {
    const boot = json(await admin('bootstrap', '--json'))
    const ws = boot.workspace_id
    const made = await admin(
      'keys',
      'create',
      '--workspace',
      ws,
      '--name',
      'ops',
      '--limit',
      '2.5',
      '--limit-reset',
      'weekly',
      '--json',
    )
    expect(made.code, made.stderr).toBe(0)
    const created = json(made)
    expect(created.key).toMatch(/^sk-roster-v1-/)
    expect(created.data).toMatchObject({
      name: 'ops',
      limit: 2.5,
      limit_reset: 'weekly',
      limit_remaining: 2.5,
      workspace_id: ws,
    })
    const { hash } = created.data
    expect(
      json(await admin('keys', 'list', '--workspace', ws, '--json')).data.map((k: { name: string }) => k.name),
    ).toEqual(['ops', ''])
    const updated = json(
      await admin('keys', 'update', hash, '--workspace', ws, '--limit', 'none', '--disable', '--json'),
    )
    expect(updated.data).toMatchObject({ limit: null, disabled: true })
    expect(json(await admin('keys', 'list', '--workspace', ws, '--json')).data).toHaveLength(1)
    expect(json(await admin('keys', 'delete', hash, '--workspace', ws, '--json'))).toEqual({ deleted: true })
    const gone = await admin('keys', 'get', hash, '--workspace', ws, '--json')
    expect(gone.code).toBe(1)
    expect(json(gone).error).toMatch(/no API key/)
    const bad = await admin('keys', 'create', '--workspace', ws, '--name', 'x', '--limit=-1')
    expect(bad.code).toBe(2)
    expect(bad.stderr).toMatch(/--limit must be 0 or more/)
  })
})
