import { afterAll, beforeAll, expect, it } from 'vitest'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import { simulatorCatalogue } from '@roster/gateway'
import { catalogueFile, repoRoot, startStack, type Stack, useTestTenant } from '@roster/testing'

// The README's example with the official client is docs/examples/first-intern.ts, and it works as
// written: run with tsx against a stack, it creates an intern, waits for it to run and streams its reply.
const example = join(repoRoot, 'docs', 'examples', 'first-intern.ts')

const env = useTestTenant()
let sim: Simulator
let stack: Stack

beforeAll(async () => {
  sim = await startSimulator({ replyTokens: 5 })
  stack = await startStack({
    databaseUrl: env.t.url,
    env: { MODEL_CATALOGUE: catalogueFile(simulatorCatalogue(sim.url)), INTERN_DEFAULT_MODEL: 'roster-sim/chat' },
  })
})
afterAll(async () => {
  await stack?.stop()
  await sim?.close()
})

it('the README shows docs/examples/first-intern.ts as it is', () => {
  const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8')
  expect(readme).toContain(`\`\`\`ts\n${readFileSync(example, 'utf8')}\`\`\``)
})

it('runs as written: an intern is created, runs, and answers in a stream', async () => {
  // Asynchronously: the simulator answering the intern's model calls runs in this process.
  const run = await promisify(execFile)(join(repoRoot, 'node_modules', '.bin', 'tsx'), [example], {
    env: { ...process.env, KEY: env.tenant.keys.user, ROSTER_URL: stack.apiUrl },
    encoding: 'utf8',
    timeout: 60_000,
  })
  expect(run.stdout.trim().length, run.stderr).toBeGreaterThan(0)
  const interns = await env.t.db.intern.findMany({ where: { name: 'helper' }, select: { status: true } })
  expect(interns).toEqual([{ status: 'running' }])
}, 90_000)
