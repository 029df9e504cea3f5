import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { cpSync, mkdtempSync, readFileSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomUUID } from 'node:crypto'
import { createTestDatabase, freePort, redisUrl, repoRoot, waitFor, type TestDatabase } from '@roster/testing'

// `npm start` as newcomers run it: one checkout, then a second fresh checkout (or a deleted
// .roster/) on the same database, then a teammate with their own configuration directory. Each
// "checkout" is a directory of its own holding a copy of scripts/ (so start.mjs sees it as its
// root and keeps its .roster/ there) and links to the built code.
let t: TestDatabase
const userConfig = mkdtempSync(join(tmpdir(), 'roster-xdg-'))
const running: ChildProcess[] = []

beforeAll(async () => {
  t = await createTestDatabase(2)
})
afterAll(async () => {
  for (const child of running) child.kill('SIGKILL')
  await t?.drop()
})

function freshCheckout(): string {
  const dir = mkdtempSync(join(tmpdir(), 'roster-checkout-'))
  cpSync(join(repoRoot, 'scripts'), join(dir, 'scripts'), { recursive: true })
  for (const entry of ['apps', 'packages', 'prisma', 'node_modules', 'deploy', 'package.json'])
    symlinkSync(join(repoRoot, entry), join(dir, entry))
  return dir
}

/** Runs `node scripts/start.mjs` in a checkout until the API is ready (or the script exits). */
async function start(checkout: string, env: Record<string, string> = {}) {
  const [port, runtimePort, simPort] = [await freePort(), await freePort(), await freePort()]
  const { VAULT_MASTER_KEY: _unset, ...inherited } = process.env
  const child = spawn(process.execPath, [join(checkout, 'scripts', 'start.mjs')], {
    cwd: checkout,
    env: {
      ...inherited,
      DATABASE_URL: t.url,
      REDIS_URL: redisUrl(),
      QUEUE_PREFIX: `{t-${randomUUID().slice(0, 8)}}`,
      XDG_CONFIG_HOME: userConfig,
      PORT: String(port),
      RUNTIME_PORT: String(runtimePort),
      SIM_PORT: String(simPort),
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  running.push(child)
  let output = ''
  child.stdout!.on('data', (c) => (output += c))
  child.stderr!.on('data', (c) => (output += c))
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  const ready = waitFor(
    async () => {
      if (child.exitCode !== null) return true
      return fetch(`http://127.0.0.1:${port}/ready`).then(
        (r) => r.ok,
        () => false,
      )
    },
    { timeoutMs: 60_000, what: 'npm start to be ready' },
  )
  await ready
  return {
    base: `http://127.0.0.1:${port}/api/v1`,
    simPort,
    output: () => output,
    exited,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM')
      await exited
    },
  }
}

function bootstrapKey(): string {
  const run = spawnSync(process.execPath, [join(repoRoot, 'apps/cli/dist/main.js'), 'bootstrap', '--json'], {
    env: { ...process.env, DATABASE_URL: t.url },
    encoding: 'utf8',
  })
  return JSON.parse(run.stdout).keys.user
}

async function createIntern(base: string, key: string) {
  const res = await fetch(`${base}/interns`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: `n-${randomUUID().slice(0, 8)}` }),
  })
  return { status: res.status, body: (await res.json()) as Record<string, any> }
}

/** The summary comes last, once the API answers, with the console and the next step; no line is long. */
async function expectSummaryLast(run: Awaited<ReturnType<typeof start>>) {
  await waitFor(() => run.output().includes('Roster is running.'), { timeoutMs: 10_000, what: 'the summary' })
  const output = run.output()
  const summary = output.slice(output.indexOf('Roster is running.'))
  expect(summary).toMatch(/console +http:\/\/127\.0\.0\.1:\d+\/console\//)
  expect(summary).toMatch(/npm run -s admin -- bootstrap/)
  // The migration line is short: a count, not every migration's name.
  expect(output).toMatch(/migrated \(\d+ migrations? applied\)|is up to date/)
  for (const line of output.split('\n')) expect(line.length, line.slice(0, 80)).toBeLessThan(400)
}

describe('npm start on a database Roster has used before', () => {
  it('a second fresh checkout creates interns too: the generated key follows the database, outside the checkout; each prints its summary last', async () => {
    const key = bootstrapKey()
    const first = await start(freshCheckout())
    expect(first.output()).toMatch(
      /generated a vault master key for postgres(ql)?:\/\/.+, kept in .+vault-master-keys\.json/,
    )
    await expectSummaryLast(first)
    const made = await createIntern(first.base, key)
    expect(made.status, JSON.stringify(made.body)).toBe(201)
    await first.stop()

    const second = await start(freshCheckout())
    expect(second.output()).not.toMatch(/generated a vault master key/)
    await expectSummaryLast(second)
    const again = await createIntern(second.base, key)
    expect(again.status, JSON.stringify(again.body)).toBe(201)
    const read = await fetch(`${second.base}/interns/${made.body.id}`, { headers: { authorization: `Bearer ${key}` } })
    expect(read.status).toBe(200)
    await second.stop()
  })

  it('stops at start-up, naming the fix, when the key really does not match: never a 500 per create', async () => {
    // A teammate on the same database, whose configuration directory holds no key for it.
    const teammate = await start(freshCheckout(), { XDG_CONFIG_HOME: mkdtempSync(join(tmpdir(), 'roster-xdg-')) })
    expect(await teammate.exited).not.toBe(0)
    expect(teammate.output()).toMatch(
      /sealed by a vault master key this user does not have.*VAULT_MASTER_KEY.*DATABASE_URL/s,
    )

    // A wrong key given outright: the API and the worker refuse to start, and npm start stops.
    const wrong = await start(freshCheckout(), { VAULT_MASTER_KEY: 'cd'.repeat(32) })
    expect(await wrong.exited).not.toBe(0)
    expect(wrong.output()).toMatch(
      /VAULT_MASTER_KEY is not the key that sealed the vaults in postgres(ql)?:\/\/[^:@]*@/,
    )
    expect(wrong.output()).not.toContain('cd'.repeat(32))
  })
})

describe('two npm starts in one checkout', () => {
  it("keep each its own demo catalogue: one's models still answer after the other has come and gone", async () => {
    const key = bootstrapKey()
    const checkout = freshCheckout()
    const ask = (base: string) =>
      fetch(`${base}/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'roster-sim/chat', input: 'hello' }),
      })
    // Started together, as two terminals do: each writes its catalogue before its API reads one.
    const [first, second] = await Promise.all([start(checkout), start(checkout)])
    for (const one of [first, second]) {
      const catalogue = readFileSync(join(checkout, '.roster', `demo-catalogue-${one.simPort}.json`), 'utf8')
      expect(catalogue).toContain(`http://127.0.0.1:${one.simPort}`)
      expect((await ask(one.base)).status).toBe(200)
    }
    await second.stop()
    // The second's simulator is gone with it: the first's models were never pointed at it.
    const after = await ask(first.base)
    expect(after.status, await after.text()).toBe(200)
    await first.stop()
  }, 150_000)
})

describe('npm start telling a newcomer what it needs', () => {
  it('stops at once naming Redis, its URL and how to start it, when Redis cannot be reached', async () => {
    const closed = await freePort()
    const run = await start(freshCheckout(), { REDIS_URL: `redis://127.0.0.1:${closed}` })
    expect(await run.exited).toBe(1)
    expect(run.output()).toMatch(
      new RegExp(
        `Redis cannot be reached at redis://127\\.0\\.0\\.1:${closed} \\(ECONNREFUSED\\): start it .*or set REDIS_URL`,
      ),
    )
    expect(run.output()).not.toMatch(/Roster is running/)
  })
})

describe('npm start with a provider key', () => {
  it('serves that provider’s models (no demo simulator), says so in its summary, and answers through it', async () => {
    const { startSimulator } = await import('@roster/upstream-sim')
    const provider = await startSimulator({ replyTokens: 3 })
    try {
      const run = await start(freshCheckout(), {
        OPENAI_API_KEY: 'sk-openai-newcomer',
        OPENAI_BASE_URL: `${provider.url}/v1`,
        OLLAMA_BASE_URL: 'off',
      })
      await waitFor(() => run.output().includes('Roster is running.'), { timeoutMs: 10_000, what: 'the summary' })
      expect(run.output()).toMatch(/models +from openai \(OPENAI_API_KEY\)/)
      expect(run.output()).not.toMatch(/upstream simulator \(not a real model/)
      const key = bootstrapKey()
      const models = (await (
        await fetch(`${run.base}/models`, { headers: { authorization: `Bearer ${key}` } })
      ).json()) as {
        data: { id: string }[]
      }
      expect(models.data.map((m) => m.id)).toContain('openai/gpt-4o-mini')
      expect(models.data.some((m) => m.id.startsWith('roster-sim/'))).toBe(false)
      const res = await fetch(`${run.base}/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o-mini', input: '[sim] say Real enough.' }),
      })
      expect(res.status, await res.clone().text()).toBe(200)
      expect(JSON.stringify(await res.json())).toContain('Real enough.')
      expect(provider.stats.credentials).toContain('sk-openai-newcomer')
      await run.stop()
    } finally {
      await provider.close()
    }
  }, 90_000)
})
