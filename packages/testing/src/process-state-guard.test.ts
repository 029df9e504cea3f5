import { describe, expect, it } from 'vitest'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { repoRoot } from './node-process.js'

// The suite's workers run files one after another in one process (isolate: false): the guard must
// fail a file that leaves fake timers on or the environment changed, and pass one that puts them back.
describe('the process-state guard', () => {
  for (const order of [
    ['leaves-state.fixture.ts', 'tidy.fixture.ts'],
    ['tidy.fixture.ts', 'leaves-state.fixture.ts'],
  ])
    it(`fails the file that left state behind, naming it, and passes the tidy one (${order.join(' then ')})`, () => {
      const config = join(repoRoot, 'packages', 'testing', 'fixtures', 'guard', 'vitest.config.ts')
      const run = spawnSync(
        process.execPath,
        [join(repoRoot, 'node_modules', 'vitest', 'vitest.mjs'), 'run', '--config', config, '--reporter=json'],
        {
          cwd: repoRoot,
          encoding: 'utf8',
          env: { ...process.env, ROSTER_GUARD_PROBE: undefined, GUARD_ORDER: order.join(',') },
        },
      )
      expect(run.status).toBe(1)
      const report = JSON.parse(run.stdout) as {
        testResults: { name: string; status: string; message: string; startTime: number }[]
      }
      const ran = [...report.testResults].sort((a, b) => a.startTime - b.startTime).map((r) => r.name.split('/').at(-1))
      expect(ran).toEqual(order)
      const byFile = Object.fromEntries(report.testResults.map((r) => [r.name.split('/').at(-1), r]))
      expect(byFile['leaves-state.fixture.ts']).toMatchObject({ status: 'failed' })
      expect(byFile['leaves-state.fixture.ts']!.message).toMatch(
        /fake timers on.*process\.env\.ROSTER_GUARD_PROBE changed/,
      )
      expect(byFile['tidy.fixture.ts']).toMatchObject({ status: 'passed' })
    }, 60_000)
})
