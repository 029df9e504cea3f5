import { expect, it } from 'vitest'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { repoRoot } from '@roster/testing'

// The example suite docs/containers.md shows is the one example.test.ts runs.
it("docs/containers.md's testcontainers example is the suite example.test.ts runs", () => {
  const test = readFileSync(join(import.meta.dirname, 'example.test.ts'), 'utf8')
  const region = /\/\/ docs example: begin\n([\s\S]*?)\n\s*\/\/ docs example: end/.exec(test)![1]!
  const body = region
    .split('\n')
    .map((l) => l.replace(/^ {2}/, ''))
    .join('\n')
  const page = readFileSync(join(repoRoot, 'docs', 'containers.md'), 'utf8')
  const block = /```ts\n(import { afterAll, beforeAll, expect, it } from 'vitest'[\s\S]*?)```/.exec(page)?.[1]
  expect(block, 'docs/containers.md has the example block').toBeDefined()
  expect(block).toContain("import { startRoster, type StartedRoster } from '@roster/testcontainers'")
  expect(block!.slice(block!.indexOf('let roster')).trimEnd()).toBe(body.trimEnd())
})
