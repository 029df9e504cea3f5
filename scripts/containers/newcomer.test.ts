import { describe, expect, it } from 'vitest'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { containerTestsProblem, repoRoot } from '@roster/testing'

// The set-up itself, as a newcomer meets it: a fresh clone of this repository on a Debian machine
// with only what the README asks for (Node 20, PostgreSQL and Redis on their standard ports), as an
// ordinary user, runs `npm ci && npm test` over what such a machine changes (newcomer/run.sh: the
// files of tests that need a tool, `npm start`, the units). It must pass, and say plainly what it
// did not run for want of the optional tools. A container test (`npm run test:containers`; CI runs
// it): minutes, a test run inside.
const BASE = process.env.ROSTER_NODE_IMAGE ?? 'node:20-bookworm-slim'
const IMAGE = 'roster-newcomer:local'
const problem = await containerTestsProblem([BASE])

describe.skipIf(problem)("a newcomer's machine", () => {
  it(
    'passes `npm ci && npm test` from a fresh clone as an ordinary user, naming each test it did not run and why',
    () => {
      const built = spawnSync(
        'docker',
        ['build', '--build-arg', `BASE_IMAGE=${BASE}`, '-t', IMAGE, join(repoRoot, 'scripts/containers/newcomer')],
        { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
      )
      expect(built.status, `${built.stdout}${built.stderr}`.slice(-3000)).toBe(0)
      // A fresh clone: what is committed, nothing of this checkout's builds or node_modules.
      const clone = join(mkdtempSync(join(tmpdir(), 'roster-newcomer-')), 'roster')
      try {
        const cloned = spawnSync('git', ['clone', '--quiet', '--no-hardlinks', repoRoot, clone], { encoding: 'utf8' })
        expect(cloned.status, cloned.stderr).toBe(0)
        const run = spawnSync('docker', ['run', '--rm', '-v', `${clone}:/src:ro`, IMAGE], {
          encoding: 'utf8',
          maxBuffer: 256 * 1024 * 1024,
          // An install, a build and a third of the suite, in a container: 12 minutes here (the
          // whole suite took 20), and these machines differ up to 3× from one session to the next.
          timeout: 30 * 60_000,
        })
        const out = `${run.stdout}${run.stderr}`.replace(/\x1b\[[0-9;]*m/g, '')
        const summary = /^Tests: (\d+) passed, (\d+) failed, (\d+) skipped$/m.exec(out)
        expect([run.status, summary?.[2]], out.slice(-6000)).toEqual([0, '0'])
        expect(Number(summary![1])).toBeGreaterThan(250)
        // What it could not run, each said in one line with the package that provides it.
        const notRun = out.split('\n').filter((l) => l.startsWith('not run: '))
        for (const tool of [
          'apt-get install bubblewrap',
          'apt-get install prometheus',
          'apt-get install chromium',
          'apt-get install iproute2',
        ]) {
          expect(
            notRun.some((l) => l.includes(tool)),
            `no "not run" line names ${tool}:\n${notRun.join('\n')}`,
          ).toBe(true)
        }
        expect(out).toMatch(/tests: the local Postgres and Redis, not containers/)
      } finally {
        rmSync(join(clone, '..'), { recursive: true, force: true })
      }
    },
    35 * 60_000,
  )
})
