import { afterAll, expect, it } from 'vitest'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomUUID } from 'node:crypto'
import { freePort, NodeProcess, repoRoot } from '@roster/testing'

// The runtime host never touches the database: it speaks @roster/protocol and runs on
// @roster/platform, and reaches the fleet's record through the API. This holds it to that: the
// host's process, started as production starts it, is watched module by module (a resolve hook
// writes each one down), and neither the database package nor Prisma nor a Postgres driver may be
// among them.
const dir = mkdtempSync(join(tmpdir(), 'roster-loads-'))
let host: NodeProcess | undefined
afterAll(async () => {
  host?.child?.kill('SIGKILL')
  await host?.exited()
  rmSync(dir, { recursive: true, force: true })
})

it('starts the runtime host without loading the database package, Prisma or a Postgres driver', async () => {
  const loads = join(dir, 'loads.txt')
  host = new NodeProcess('runtime', join(repoRoot, 'apps/runtime/dist/main.js'), {
    NODE_OPTIONS: `--import=${join(repoRoot, 'apps/runtime/test/fixtures/record-loads.mjs')}`,
    ROSTER_LOADS_FILE: loads,
    PORT: String(await freePort()),
    RUNTIME_HOST_ID: `rt-loads-${randomUUID().slice(0, 6)}`,
    RUNTIME_DATA_DIR: join(dir, 'data'),
    RUNTIME_TOKEN: randomUUID() + randomUUID(),
    // Nothing listens there: the host keeps trying to join, which is all it needs to do here.
    ROSTER_API_URL: `http://127.0.0.1:${await freePort()}/api/v1`,
    DATABASE_URL: undefined,
    VAULT_MASTER_KEY: undefined,
  }).start()
  await host.waitForOutput(/listening/)
  const loaded = readFileSync(loads, 'utf8').split('\n').filter(Boolean)
  // The watch sees what it should (else the rule below could not fail).
  expect(loaded.some((url) => url.includes('/packages/protocol/dist/'))).toBe(true)
  expect(loaded.some((url) => url.includes('/packages/platform/dist/'))).toBe(true)
  expect(
    loaded.filter((url) => /\/packages\/shared\/|@prisma|\/node_modules\/pg\/|\/node_modules\/ioredis\//.test(url)),
  ).toEqual([])
})
