import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { expect, it } from 'vitest'
import { repoRoot } from '@roster/testing'

// Every link between the README, the pages of docs/ and the benchmark pages leads somewhere: to a file that exists and,
// with an anchor, to a heading of that file (as GitHub makes anchors of headings).
const pages = [
  'README.md',
  'bench/RESULTS.md',
  'bench/HISTORY.md',
  ...readdirSync(join(repoRoot, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
]

const anchor = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-')

it('links in the README and docs/ lead to files and headings that exist', () => {
  const broken: string[] = []
  for (const page of pages) {
    const text = readFileSync(join(repoRoot, page), 'utf8').replace(/```[\s\S]*?```/g, '')
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target!)) continue
      const [path, hash] = target!.split('#') as [string, string | undefined]
      const file = path ? join(repoRoot, dirname(page), path) : join(repoRoot, page)
      if (!existsSync(file)) {
        broken.push(`${page}: ${target} (no such file)`)
        continue
      }
      if (hash && file.endsWith('.md')) {
        const headings = readFileSync(file, 'utf8')
          .replace(/```[\s\S]*?```/g, '')
          .split('\n')
          .filter((l) => /^#{1,6} /.test(l))
          .map((l) => anchor(l.replace(/^#+ /, '')))
        if (!headings.includes(hash))
          broken.push(`${page}: ${target} (no heading #${hash} in ${relative(repoRoot, file)})`)
      }
    }
  }
  expect(broken).toEqual([])
})

it('the README maps every page of docs/', () => {
  const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8')
  for (const page of pages.filter((p) => p.startsWith('docs/')))
    expect(readme, `${page} is not in the README's map`).toContain(`](${page})`)
})
